package merge

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/sluice-search/sluice/node/engine/index"
)

// Input is one segment of a merge and its live docs when the merge started
// (nil: all live).
type Input struct {
	Reader index.LeafReader
	Live   *index.FixedBitSet
}

// Reader is the merged view; it implements index.LeafReader.
type Reader struct {
	inputs     []Input
	fis        *index.FieldInfos
	maxDoc     int
	base       []int     // first new doc of each input; len(inputs)+1 entries
	docMap     [][]int32 // per input: old doc -> new doc, -1 if deleted
	hasDeletes bool
	live       [][]int32 // per input: live old docs in order (new doc - base -> old)

	mu     sync.Mutex
	sorted map[string]*sortedValues
	stats  map[string]*termStats
}

// NewReader builds the merged view of inputs.
func NewReader(ctx context.Context, inputs []Input) (*Reader, error) {
	r := &Reader{inputs: inputs, base: make([]int, len(inputs)+1), sorted: map[string]*sortedValues{}, stats: map[string]*termStats{}}
	fis, err := mergeFieldInfos(inputs)
	if err != nil {
		return nil, err
	}
	r.fis = fis
	for i, in := range inputs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n := in.Reader.MaxDoc()
		if in.Live != nil && in.Live.Len() != n {
			return nil, fmt.Errorf("merge: input %d: live docs of %d bits for %d docs", i, in.Live.Len(), n)
		}
		m := make([]int32, n)
		live := make([]int32, 0, n)
		for d := 0; d < n; d++ {
			if in.Live != nil && !in.Live.Get(d) {
				m[d] = -1
				continue
			}
			m[d] = int32(r.maxDoc + len(live))
			live = append(live, int32(d))
		}
		r.hasDeletes = r.hasDeletes || len(live) < n
		r.docMap = append(r.docMap, m)
		r.live = append(r.live, live)
		r.base[i] = r.maxDoc
		r.maxDoc += len(live)
		if r.maxDoc > index.NoMoreDocs-1 {
			return nil, fmt.Errorf("merge: %d docs exceed the per-segment limit", r.maxDoc)
		}
	}
	r.base[len(inputs)] = r.maxDoc
	return r, nil
}

// mergeFieldInfos unions the inputs' fields by name, numbered in order of
// first appearance; a name must keep its type and options.
func mergeFieldInfos(inputs []Input) (*index.FieldInfos, error) {
	var infos []index.FieldInfo
	byName := map[string]int{}
	for i, in := range inputs {
		fis := in.Reader.FieldInfos()
		for n := 0; n < fis.Len(); n++ {
			fi := *fis.ByNumber(n)
			if j, ok := byName[fi.Name]; ok {
				have := &infos[j]
				if have.Type != fi.Type || have.IndexOptions != fi.IndexOptions || have.DocValues != fi.DocValues {
					return nil, fmt.Errorf("merge: field %q: input %d has type %v/%d/%d, earlier inputs %v/%d/%d",
						fi.Name, i, fi.Type, fi.IndexOptions, fi.DocValues, have.Type, have.IndexOptions, have.DocValues)
				}
				have.HasNorms = have.HasNorms || fi.HasNorms
				continue
			}
			fi.Number = len(infos)
			byName[fi.Name] = fi.Number
			infos = append(infos, fi)
		}
	}
	return index.NewFieldInfos(infos)
}

// DocMap returns the merged doc id of doc of input, or -1 if it was deleted
// when the merge started.
func (r *Reader) DocMap(input, doc int) int { return int(r.docMap[input][doc]) }

// locate returns the input and old doc of a merged doc.
func (r *Reader) locate(doc int) (int, int) {
	i := sort.Search(len(r.inputs), func(i int) bool { return r.base[i+1] > doc })
	return i, int(r.live[i][doc-r.base[i]])
}

// FieldInfos implements index.LeafReader.
func (r *Reader) FieldInfos() *index.FieldInfos { return r.fis }

// MaxDoc implements index.LeafReader.
func (r *Reader) MaxDoc() int { return r.maxDoc }

// Terms implements index.LeafReader.
func (r *Reader) Terms(field string) index.Terms {
	fi := r.fis.ByName(field)
	if fi == nil || fi.IndexOptions == index.IndexNone {
		return nil
	}
	t := &terms{r: r, field: field, opts: fi.IndexOptions}
	for i, in := range r.inputs {
		if st := in.Reader.Terms(field); st != nil {
			t.subs = append(t.subs, subTerms{input: i, terms: st})
		}
	}
	if len(t.subs) == 0 || (r.hasDeletes && !t.Iterator().Next()) {
		return nil // no term has a live doc
	}
	return t
}

type mergedNorms struct {
	r    *Reader
	subs []index.NormsReader // nil for inputs without norms for the field
}

func (n *mergedNorms) Norm(doc int) uint8 {
	i, old := n.r.locate(doc)
	if s := n.subs[i]; s != nil {
		return s.Norm(old)
	}
	return 0
}

// Norms implements index.LeafReader.
func (r *Reader) Norms(field string) index.NormsReader {
	n := &mergedNorms{r: r, subs: make([]index.NormsReader, len(r.inputs))}
	any := false
	for i, in := range r.inputs {
		if s := in.Reader.Norms(field); s != nil {
			n.subs[i], any = s, true
		}
	}
	if !any {
		return nil
	}
	return n
}

type mergedNumeric struct {
	r    *Reader
	subs []index.NumericDocValues
}

func (m *mergedNumeric) Get(doc int) (int64, bool) {
	i, old := m.r.locate(doc)
	if s := m.subs[i]; s != nil {
		return s.Get(old)
	}
	return 0, false
}

// NumericDocValues implements index.LeafReader.
func (r *Reader) NumericDocValues(field string) index.NumericDocValues {
	m := &mergedNumeric{r: r, subs: make([]index.NumericDocValues, len(r.inputs))}
	any := false
	for i, in := range r.inputs {
		if s := in.Reader.NumericDocValues(field); s != nil {
			m.subs[i], any = s, true
		}
	}
	if !any {
		return nil
	}
	return m
}

// sortedValues is the ordinal map of a sorted doc-values field: the sorted
// union of the values live docs use, and each input's ord -> merged ord.
type sortedValues struct {
	r      *Reader
	subs   []index.SortedDocValues
	toNew  [][]int32 // per input: segment ord -> merged ord (-1 unused)
	values []valueRef
}

type valueRef struct{ input, ord int32 }

func (s *sortedValues) Ord(doc int) int {
	i, old := s.r.locate(doc)
	sub := s.subs[i]
	if sub == nil {
		return -1
	}
	o := sub.Ord(old)
	if o < 0 {
		return -1
	}
	return int(s.toNew[i][o])
}

func (s *sortedValues) LookupOrd(ord int) []byte {
	v := s.values[ord]
	return s.subs[v.input].LookupOrd(int(v.ord))
}

func (s *sortedValues) ValueCount() int { return len(s.values) }

// SortedDocValues implements index.LeafReader. The ordinal map is built on
// first use and cached.
func (r *Reader) SortedDocValues(field string) index.SortedDocValues {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s, ok := r.sorted[field]; ok {
		if s == nil {
			return nil
		}
		return s
	}
	s := r.buildSorted(field)
	r.sorted[field] = s
	if s == nil {
		return nil
	}
	return s
}

func (r *Reader) buildSorted(field string) *sortedValues {
	s := &sortedValues{r: r, subs: make([]index.SortedDocValues, len(r.inputs)), toNew: make([][]int32, len(r.inputs))}
	// Per input, the ords its live docs use, in ord (= value) order.
	used := make([][]int32, len(r.inputs))
	any := false
	for i, in := range r.inputs {
		sub := in.Reader.SortedDocValues(field)
		if sub == nil {
			continue
		}
		any = true
		s.subs[i] = sub
		mark := index.NewFixedBitSet(sub.ValueCount())
		for _, old := range r.live[i] {
			if o := sub.Ord(int(old)); o >= 0 {
				mark.Set(o)
			}
		}
		for o := mark.NextSetBit(0); o != index.NoMoreDocs; o = mark.NextSetBit(o + 1) {
			used[i] = append(used[i], int32(o))
		}
		s.toNew[i] = make([]int32, sub.ValueCount())
		for o := range s.toNew[i] {
			s.toNew[i][o] = -1
		}
	}
	if !any {
		return nil
	}
	// K-way merge of the inputs' used values; equal values share an ord.
	pos := make([]int, len(r.inputs))
	for {
		var minVal []byte
		found := false
		for i := range r.inputs {
			if pos[i] < len(used[i]) {
				v := s.subs[i].LookupOrd(int(used[i][pos[i]]))
				if !found || bytes.Compare(v, minVal) < 0 {
					minVal, found = v, true
				}
			}
		}
		if !found {
			break
		}
		ord := int32(len(s.values))
		first := true
		for i := range r.inputs {
			if pos[i] < len(used[i]) {
				o := used[i][pos[i]]
				if bytes.Equal(s.subs[i].LookupOrd(int(o)), minVal) {
					s.toNew[i][o] = ord
					if first {
						s.values = append(s.values, valueRef{int32(i), o})
						first = false
					}
					pos[i]++
				}
			}
		}
	}
	return s
}

type storedFields struct {
	r    *Reader
	subs []index.StoredFieldsReader
}

func (s *storedFields) Document(doc int, dst *index.StoredDoc) error {
	if doc < 0 || doc >= s.r.maxDoc {
		return fmt.Errorf("merge: stored fields: doc %d out of range [0,%d)", doc, s.r.maxDoc)
	}
	i, old := s.r.locate(doc)
	if s.subs[i] == nil {
		s.subs[i] = s.r.inputs[i].Reader.StoredFields()
	}
	return s.subs[i].Document(old, dst)
}

// StoredFields implements index.LeafReader.
func (r *Reader) StoredFields() index.StoredFieldsReader {
	return &storedFields{r: r, subs: make([]index.StoredFieldsReader, len(r.inputs))}
}
