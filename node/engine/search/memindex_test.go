package search

import (
	"bytes"
	"slices"
	"sort"

	"github.com/sluice-search/sluice/node/engine/document"
	"github.com/sluice-search/sluice/node/engine/index"
)

// memLeaf is a narrow in-memory LeafReader for tests, built from parsed
// documents the way the indexing chain would invert them. Its ImpactsEnum
// reports block maxima over blocks of 128 postings, like the real codec, so
// block-max pruning is exercised.
type memLeaf struct {
	fis     *index.FieldInfos
	maxDoc  int
	fields  map[string]*memField
	numeric map[string]*memNumeric
	sorted  map[string]*memSorted
	stored  []index.StoredDoc
}

const memBlockSize = 128

type memField struct {
	opts     index.IndexOptions
	terms    [][]byte
	postings []*memPostings
	norms    []uint8 // nil without norms
	docCount int
	sumTTF   int64
	sumDF    int64
}

type memPostings struct {
	docs, freqs []int
	pos         [][]int
	blockFreq   []int   // per block of 128: max freq
	blockNorm   []uint8 // per block: min norm
	blockImps   [][]index.Impact
}

type memNumeric struct {
	vals []int64
	has  []bool
}

type memSorted struct {
	ords  []int
	terms [][]byte
}

func newMemLeaf(docs []document.Document) *memLeaf {
	l := &memLeaf{maxDoc: len(docs), fields: map[string]*memField{}, numeric: map[string]*memNumeric{}, sorted: map[string]*memSorted{}}
	type acc struct {
		info     index.FieldInfo
		postings map[string]*memPostings
		norms    []uint8
		docs     map[int]bool
		nums     *memNumeric
		kw       map[int][]byte
	}
	accs := map[string]*acc{}
	var order []string
	get := func(name string, ft document.FieldType) *acc {
		if a := accs[name]; a != nil {
			return a
		}
		a := &acc{info: index.FieldInfo{Name: name, Number: len(order), Type: ft}, postings: map[string]*memPostings{}, docs: map[int]bool{}, kw: map[int][]byte{}}
		switch {
		case name == index.IDField:
			a.info.IndexOptions = index.IndexDocs
		case ft == document.Text:
			a.info.IndexOptions = index.IndexDocsFreqsPositions
			a.info.HasNorms = true
		case ft == document.Keyword:
			a.info.IndexOptions = index.IndexDocs
			a.info.DocValues = index.DocValuesSorted
		default:
			a.info.IndexOptions = index.IndexDocs
			a.info.DocValues = index.DocValuesNumeric
			a.nums = &memNumeric{vals: make([]int64, len(docs)), has: make([]bool, len(docs))}
		}
		if a.info.HasNorms {
			a.norms = make([]uint8, len(docs))
		}
		accs[name] = a
		order = append(order, name)
		return a
	}
	addTok := func(a *acc, doc int, term []byte, pos int) {
		p := a.postings[string(term)]
		if p == nil {
			p = &memPostings{}
			a.postings[string(term)] = p
		}
		if n := len(p.docs); n == 0 || p.docs[n-1] != doc {
			p.docs = append(p.docs, doc)
			p.freqs = append(p.freqs, 0)
			p.pos = append(p.pos, nil)
		}
		n := len(p.docs) - 1
		p.freqs[n]++
		if a.info.IndexOptions.HasPositions() {
			p.pos[n] = append(p.pos[n], pos)
		}
		a.docs[doc] = true
	}
	get(index.IDField, document.Keyword)
	for d := range docs {
		doc := &docs[d]
		addTok(accs[index.IDField], d, doc.ID, 0)
		l.stored = append(l.stored, index.StoredDoc{ID: slices.Clone(doc.ID), Source: slices.Clone(doc.Source)})
		for _, f := range doc.Fields {
			a := get(f.Name, f.Type)
			for _, t := range f.Tokens {
				addTok(a, d, t.Term, int(t.Position))
			}
			if a.norms != nil {
				n := int(f.Length)
				if n == 0 {
					n = len(f.Tokens)
				}
				a.norms[d] = index.EncodeNorm(n)
			}
			if a.nums != nil && len(f.Numerics) > 0 {
				a.nums.vals[d], a.nums.has[d] = slices.Min(f.Numerics), true
			}
			if a.info.DocValues == index.DocValuesSorted && len(f.Keywords) > 0 {
				a.kw[d] = slices.MinFunc(f.Keywords, bytes.Compare)
			}
		}
	}
	infos := make([]index.FieldInfo, len(order))
	for i, name := range order {
		a := accs[name]
		infos[i] = a.info
		mf := &memField{opts: a.info.IndexOptions, norms: a.norms, docCount: len(a.docs)}
		for t := range a.postings {
			mf.terms = append(mf.terms, []byte(t))
		}
		sort.Slice(mf.terms, func(i, j int) bool { return bytes.Compare(mf.terms[i], mf.terms[j]) < 0 })
		for _, t := range mf.terms {
			p := a.postings[string(t)]
			for b := 0; b < len(p.docs); b += memBlockSize {
				mfq, mn := 0, uint8(255)
				for j := b; j < min(b+memBlockSize, len(p.docs)); j++ {
					mfq = max(mfq, p.freqs[j])
					if a.norms != nil {
						mn = min(mn, a.norms[p.docs[j]])
					}
				}
				p.blockFreq = append(p.blockFreq, mfq)
				p.blockNorm = append(p.blockNorm, mn)
				var all []index.Impact
				for j := b; j < min(b+memBlockSize, len(p.docs)); j++ {
					im := index.Impact{Freq: p.freqs[j]}
					if !a.info.IndexOptions.HasFreqs() {
						im.Freq = 1
					}
					if a.norms != nil {
						im.Norm = a.norms[p.docs[j]]
					}
					all = append(all, im)
				}
				p.blockImps = append(p.blockImps, competitiveImpacts(all))
				mf.sumDF += int64(min(memBlockSize, len(p.docs)-b))
			}
			for _, f := range p.freqs {
				mf.sumTTF += int64(f)
			}
			mf.postings = append(mf.postings, p)
		}
		if !a.info.IndexOptions.HasFreqs() {
			mf.sumTTF = mf.sumDF
		}
		l.fields[name] = mf
		if a.nums != nil {
			l.numeric[name] = a.nums
		}
		if a.info.DocValues == index.DocValuesSorted {
			ms := &memSorted{ords: make([]int, len(docs))}
			seen := map[string]bool{}
			for _, v := range a.kw {
				if !seen[string(v)] {
					seen[string(v)] = true
					ms.terms = append(ms.terms, v)
				}
			}
			sort.Slice(ms.terms, func(i, j int) bool { return bytes.Compare(ms.terms[i], ms.terms[j]) < 0 })
			for d := range ms.ords {
				ms.ords[d] = -1
				if v, ok := a.kw[d]; ok {
					ms.ords[d] = sort.Search(len(ms.terms), func(i int) bool { return bytes.Compare(ms.terms[i], v) >= 0 })
				}
			}
			l.sorted[name] = ms
		}
	}
	fis, err := index.NewFieldInfos(infos)
	if err != nil {
		panic(err)
	}
	l.fis = fis
	return l
}

func (l *memLeaf) FieldInfos() *index.FieldInfos { return l.fis }
func (l *memLeaf) MaxDoc() int                   { return l.maxDoc }
func (l *memLeaf) Terms(field string) index.Terms {
	if f := l.fields[field]; f != nil {
		return f
	}
	return nil
}
func (l *memLeaf) Norms(field string) index.NormsReader {
	if f := l.fields[field]; f != nil && f.norms != nil {
		return memNorms(f.norms)
	}
	return nil
}
func (l *memLeaf) NumericDocValues(field string) index.NumericDocValues {
	if n := l.numeric[field]; n != nil {
		return n
	}
	return nil
}
func (l *memLeaf) SortedDocValues(field string) index.SortedDocValues {
	if s := l.sorted[field]; s != nil {
		return s
	}
	return nil
}
func (l *memLeaf) StoredFields() index.StoredFieldsReader { return memStored(l.stored) }

type memStored []index.StoredDoc

func (s memStored) Document(doc int, dst *index.StoredDoc) error {
	dst.ID = append(dst.ID[:0], s[doc].ID...)
	dst.Source = append(dst.Source[:0], s[doc].Source...)
	return nil
}

type memNorms []uint8

func (n memNorms) Norm(doc int) uint8 { return n[doc] }

func (n *memNumeric) Get(doc int) (int64, bool) { return n.vals[doc], n.has[doc] }

func (s *memSorted) Ord(doc int) int                 { return s.ords[doc] }
func (s *memSorted) LookupOrd(ord int) []byte        { return s.terms[ord] }
func (s *memSorted) ValueCount() int                 { return len(s.terms) }
func (f *memField) Iterator() index.TermsEnum        { return &memTermsEnum{f: f, i: -1} }
func (f *memField) Size() int64                      { return int64(len(f.terms)) }
func (f *memField) DocCount() int                    { return f.docCount }
func (f *memField) SumDocFreq() int64                { return f.sumDF }
func (f *memField) SumTotalTermFreq() int64          { return f.sumTTF }
func (f *memField) IndexOptions() index.IndexOptions { return f.opts }

type memTermsEnum struct {
	f *memField
	i int
}

func (e *memTermsEnum) Next() bool {
	if e.i < len(e.f.terms) {
		e.i++
	}
	return e.i < len(e.f.terms)
}
func (e *memTermsEnum) SeekExact(term []byte) bool {
	return e.SeekCeil(term) == index.SeekFound
}
func (e *memTermsEnum) SeekCeil(target []byte) index.SeekStatus {
	e.i = sort.Search(len(e.f.terms), func(i int) bool { return bytes.Compare(e.f.terms[i], target) >= 0 })
	switch {
	case e.i == len(e.f.terms):
		return index.SeekEnd
	case bytes.Equal(e.f.terms[e.i], target):
		return index.SeekFound
	}
	return index.SeekNotFound
}
func (e *memTermsEnum) Term() []byte { return e.f.terms[e.i] }
func (e *memTermsEnum) DocFreq() int { return len(e.f.postings[e.i].docs) }
func (e *memTermsEnum) TotalTermFreq() int64 {
	var s int64
	for _, f := range e.f.postings[e.i].freqs {
		s += int64(f)
	}
	return s
}
func (e *memTermsEnum) Postings(reuse index.PostingsEnum, flags index.PostingsFlags) index.PostingsEnum {
	return e.Impacts(flags)
}
func (e *memTermsEnum) Impacts(flags index.PostingsFlags) index.ImpactsEnum {
	return &memPostingsEnum{p: e.f.postings[e.i], i: -1, freqs: e.f.opts.HasFreqs(), flags: flags}
}

type memPostingsEnum struct {
	p     *memPostings
	i     int // posting index; -1 before start
	posI  int
	freqs bool
	flags index.PostingsFlags
	block int
	// shallowTarget guards the AdvanceShallow contract in tests.
	shallowTarget int
}

func (e *memPostingsEnum) DocID() int {
	switch {
	case e.i < 0:
		return -1
	case e.i >= len(e.p.docs):
		return index.NoMoreDocs
	}
	return e.p.docs[e.i]
}
func (e *memPostingsEnum) NextDoc() int {
	if e.i < len(e.p.docs) {
		e.i++
	}
	e.posI = 0
	return e.DocID()
}
func (e *memPostingsEnum) Advance(target int) int {
	if target <= e.DocID() {
		panic("Advance target must be beyond DocID")
	}
	e.i += sort.SearchInts(e.p.docs[e.i+1:], target) + 1
	e.posI = 0
	return e.DocID()
}
func (e *memPostingsEnum) Cost() int64 { return int64(len(e.p.docs)) }
func (e *memPostingsEnum) Freq() int {
	if !e.freqs {
		return 1
	}
	return e.p.freqs[e.i]
}
func (e *memPostingsEnum) NextPosition() int {
	if e.flags&index.PostingsPositions != index.PostingsPositions {
		panic("positions not requested")
	}
	p := e.p.pos[e.i][e.posI]
	e.posI++
	return p
}
func (e *memPostingsEnum) AdvanceShallow(target int) int {
	if target < e.DocID() || target < e.shallowTarget {
		panic("AdvanceShallow target went backwards")
	}
	e.shallowTarget = target
	j := sort.SearchInts(e.p.docs, target)
	e.block = j / memBlockSize
	if j >= len(e.p.docs) {
		e.block = len(e.p.blockFreq) - 1
		return index.NoMoreDocs
	}
	last := min((e.block+1)*memBlockSize, len(e.p.docs)) - 1
	if last == len(e.p.docs)-1 {
		return index.NoMoreDocs
	}
	return e.p.docs[last]
}
func (e *memPostingsEnum) BlockMax() (int, uint8) {
	f := e.p.blockFreq[e.block]
	if !e.freqs {
		f = 1
	}
	return f, e.p.blockNorm[e.block]
}

// competitiveImpacts keeps the pairs no other pair dominates (higher or
// equal freq with lower or equal norm).
func competitiveImpacts(all []index.Impact) []index.Impact {
	var out []index.Impact
	for i, a := range all {
		dominated := false
		for j, b := range all {
			if j != i && b.Freq >= a.Freq && b.Norm <= a.Norm && (b != a || j < i) {
				dominated = true
				break
			}
		}
		if !dominated {
			out = append(out, a)
		}
	}
	return out
}

func (e *memPostingsEnum) BlockImpacts(dst []index.Impact) []index.Impact {
	return append(dst, e.p.blockImps[e.block]...)
}
