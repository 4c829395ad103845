package dwpt

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"
	"sort"

	"github.com/sluice-search/sluice/node/engine/index"
)

// The read side: once the writer stops adding documents, a DWPT is an
// index.LeafReader over its own pools, so a Codec writes it directly. Terms
// are sorted once per field (term ids by their bytes); postings are decoded
// from the byte slices. Advance is a linear scan: the codec streams postings
// in order and never needs skipping on this source.

var _ index.LeafReader = (*DWPT)(nil)

// FieldInfos returns the fields in the order they were first seen (_id is 0).
func (d *DWPT) FieldInfos() *index.FieldInfos {
	d.infosOnce.Do(func() {
		infos := make([]index.FieldInfo, len(d.fields))
		for i, f := range d.fields {
			infos[i] = f.info
		}
		fi, err := index.NewFieldInfos(infos)
		if err != nil { // numbers are dense by construction
			panic(fmt.Sprintf("dwpt: field infos: %v", err))
		}
		d.infos = fi
	})
	return d.infos
}

// MaxDoc is the number of docs, deleted ones included.
func (d *DWPT) MaxDoc() int { return int(d.numDocs) }

// Terms returns an indexed field's terms, or nil.
func (d *DWPT) Terms(field string) index.Terms {
	f := d.byName[field]
	if f == nil || f.info.IndexOptions == index.IndexNone || f.postings.len() == 0 {
		return nil
	}
	f.sortOnce.Do(func() { f.sortedIDs = sortTermIDs(&f.terms) })
	return &memTerms{d: d, f: f}
}

// sortTermIDs returns the term ids in term byte order. Terms are sorted by
// their first 8 bytes as a big-endian integer, the bytes compared only on a
// tie: most terms are short, so the sort rarely chases term bytes through
// the pool (that made sorting a visible part of flush).
//
// The key and result arrays come from pools (recycle.go): both are as long
// as the field has terms, which for a large flush is tens of MB.
func sortTermIDs(h *termHash) []int32 {
	keys := sortKeys.get(h.size())
	for i := range keys {
		var b [8]byte
		copy(b[:], h.term(int32(i)))
		keys[i] = sortKey{binary.BigEndian.Uint64(b[:]), int32(i)}
	}
	slices.SortFunc(keys, func(a, b sortKey) int {
		if a.prefix != b.prefix {
			return cmp.Compare(a.prefix, b.prefix)
		}
		return bytes.Compare(h.term(a.id), h.term(b.id))
	})
	ids := int32Arrays.get(len(keys))
	for i, k := range keys {
		ids[i] = k.id
	}
	sortKeys.put(keys)
	return ids
}

// sortKey orders term ids by the first 8 bytes of their term.
type sortKey struct {
	prefix uint64
	id     int32
}

// Norms returns a text field's encoded lengths, or nil.
func (d *DWPT) Norms(field string) index.NormsReader {
	f := d.byName[field]
	if f == nil || !f.info.HasNorms {
		return nil
	}
	return memNorms(f.norms)
}

// NumericDocValues returns a numeric field's values, or nil.
func (d *DWPT) NumericDocValues(field string) index.NumericDocValues {
	f := d.byName[field]
	if f == nil || f.info.DocValues != index.DocValuesNumeric {
		return nil
	}
	return &memNumeric{vals: f.numeric, has: f.numericHas}
}

// SortedDocValues returns a keyword field's values, or nil.
func (d *DWPT) SortedDocValues(field string) index.SortedDocValues {
	f := d.byName[field]
	if f == nil || f.info.DocValues != index.DocValuesSorted {
		return nil
	}
	f.dvOnce.Do(func() {
		f.dvIDs = sortTermIDs(&f.sorted)
		f.dvOrdOf = int32Arrays.get(len(f.dvIDs))
		for ord, id := range f.dvIDs {
			f.dvOrdOf[id] = int32(ord)
		}
	})
	return &memSorted{f: f}
}

// StoredFields returns a reader of the buffered _id, _routing and _source.
func (d *DWPT) StoredFields() index.StoredFieldsReader { return memStored{d} }

type memNorms []uint8

func (n memNorms) Norm(doc int) uint8 {
	if doc < len(n) {
		return n[doc]
	}
	return 0
}

type memNumeric struct {
	vals []int64
	has  []uint64
}

func (m *memNumeric) Get(doc int) (int64, bool) {
	w := doc >> 6
	if w >= len(m.has) || m.has[w]&(1<<(uint(doc)&63)) == 0 {
		return 0, false
	}
	return m.vals[doc], true
}

type memSorted struct{ f *perField }

func (m *memSorted) Ord(doc int) int {
	if doc >= len(m.f.sortedOrd) || m.f.sortedOrd[doc] < 0 {
		return -1
	}
	return int(m.f.dvOrdOf[m.f.sortedOrd[doc]])
}

func (m *memSorted) LookupOrd(ord int) []byte { return m.f.sorted.term(m.f.dvIDs[ord]) }
func (m *memSorted) ValueCount() int          { return len(m.f.dvIDs) }

type memStored struct{ d *DWPT }

func (s memStored) Document(doc int, dst *index.StoredDoc) error {
	if doc < 0 || doc >= s.d.stored.len() {
		return fmt.Errorf("dwpt: stored doc %d out of range [0,%d)", doc, s.d.stored.len())
	}
	r := *s.d.stored.at(int32(doc))
	c := s.d.chunks[r.chunk]
	idEnd := r.off + int32(r.idLen)
	routingEnd := idEnd + int32(r.routingLen)
	srcEnd := routingEnd + r.srcN
	// Full slice expressions: a caller appending to dst's slices must not
	// write into the chunk.
	dst.ID = c[r.off:idEnd:idEnd]
	dst.Routing = c[idEnd:routingEnd:routingEnd]
	dst.Source = c[routingEnd:srcEnd:srcEnd]
	return nil
}

type memTerms struct {
	d *DWPT
	f *perField
}

func (t *memTerms) Iterator() index.TermsEnum {
	return &memTermsEnum{d: t.d, f: t.f, ord: -1}
}
func (t *memTerms) Size() int64                      { return int64(t.f.postings.len()) }
func (t *memTerms) DocCount() int                    { return t.f.docCount }
func (t *memTerms) SumDocFreq() int64                { return t.f.sumDocFreq }
func (t *memTerms) SumTotalTermFreq() int64          { return t.f.sumTTF }
func (t *memTerms) IndexOptions() index.IndexOptions { return t.f.info.IndexOptions }

type memTermsEnum struct {
	d   *DWPT
	f   *perField
	ord int // index into f.sortedIDs; -1 before the first term
}

func (e *memTermsEnum) id() int32 { return e.f.sortedIDs[e.ord] }

func (e *memTermsEnum) Next() bool {
	if e.ord+1 >= len(e.f.sortedIDs) {
		e.ord = len(e.f.sortedIDs)
		return false
	}
	e.ord++
	return true
}

func (e *memTermsEnum) ceil(target []byte) int {
	ids := e.f.sortedIDs
	return sort.Search(len(ids), func(i int) bool { return bytes.Compare(e.f.terms.term(ids[i]), target) >= 0 })
}

func (e *memTermsEnum) SeekExact(term []byte) bool {
	// The hash answers exact lookups in O(1); the enum is then positioned
	// by binary search only when the term exists.
	if e.f.terms.find(term) < 0 {
		return false
	}
	e.ord = e.ceil(term)
	return true
}

func (e *memTermsEnum) SeekCeil(target []byte) index.SeekStatus {
	e.ord = e.ceil(target)
	if e.ord == len(e.f.sortedIDs) {
		return index.SeekEnd
	}
	if bytes.Equal(e.Term(), target) {
		return index.SeekFound
	}
	return index.SeekNotFound
}

func (e *memTermsEnum) Term() []byte         { return e.f.terms.term(e.id()) }
func (e *memTermsEnum) DocFreq() int         { return int(e.f.postings.at(e.id()).docFreq) }
func (e *memTermsEnum) TotalTermFreq() int64 { return int64(e.f.postings.at(e.id()).ttf) }

// AppendRawPositions appends the current term's whole position stream:
// for each doc in order, its freq positions as uvarint deltas starting from
// 0 — the encoding the codec writes to its .pos file, so a flush copies the
// bytes slice by slice instead of decoding and re-encoding every position.
// Only text fields (IndexDocsFreqsPositions) have one; others append
// nothing.
func (e *memTermsEnum) AppendRawPositions(dst []byte) []byte {
	if !e.f.info.IndexOptions.HasPositions() {
		return dst
	}
	pt := e.f.postings.at(e.id())
	var r sliceReader
	r.init(e.d.pool, pt.byteStart+firstLevel, pt.posUpto)
	return r.appendRest(dst)
}

func (e *memTermsEnum) Postings(reuse index.PostingsEnum, flags index.PostingsFlags) index.PostingsEnum {
	p, ok := reuse.(*memPostings)
	if !ok || p.d != e.d || p.f != e.f {
		p = &memPostings{d: e.d, f: e.f}
	}
	p.reset(e.id(), flags)
	return p
}

func (e *memTermsEnum) Impacts(flags index.PostingsFlags) index.ImpactsEnum {
	p := &memPostings{d: e.d, f: e.f}
	p.reset(e.id(), flags)
	// One block spans all docs: its bound is the max freq and min norm over
	// the whole posting list, found by one scan.
	var scan memPostings
	scan.d, scan.f = e.d, e.f
	scan.reset(e.id(), index.PostingsFreqs)
	norms := e.d.Norms(e.f.info.Name)
	p.maxFreq, p.minNorm = 1, 255
	if norms == nil {
		p.minNorm = 0
	}
	for doc := scan.NextDoc(); doc != index.NoMoreDocs; doc = scan.NextDoc() {
		p.maxFreq = max(p.maxFreq, scan.Freq())
		if norms != nil {
			p.minNorm = min(p.minNorm, norms.Norm(doc))
		}
	}
	return p
}

// memPostings decodes one term's doc and position streams.
type memPostings struct {
	d       *DWPT
	f       *perField
	docs    docIter
	pos     sliceReader
	wantPos bool
	posLeft int // positions of the current doc not yet read
	lastPos int
	doc     int
	cost    int64

	maxFreq int
	minNorm uint8
}

func (p *memPostings) reset(id int32, flags index.PostingsFlags) {
	pt := p.f.postings.at(id)
	opts := p.f.info.IndexOptions
	p.docs.init(p.d.pool, pt, opts.HasFreqs())
	p.wantPos = opts.HasPositions() && flags&index.PostingsPositions == index.PostingsPositions
	if p.wantPos {
		p.pos.init(p.d.pool, pt.byteStart+firstLevel, pt.posUpto)
	}
	p.posLeft, p.lastPos, p.doc, p.cost = 0, 0, -1, int64(pt.docFreq)
}

func (p *memPostings) DocID() int  { return p.doc }
func (p *memPostings) Cost() int64 { return p.cost }

func (p *memPostings) NextDoc() int {
	if p.doc == index.NoMoreDocs {
		return p.doc
	}
	if p.wantPos {
		for ; p.posLeft > 0; p.posLeft-- { // skip unread positions
			p.pos.readVInt()
		}
	}
	p.doc = p.docs.next()
	if p.doc != index.NoMoreDocs {
		p.posLeft, p.lastPos = p.docs.freq, 0
	}
	return p.doc
}

func (p *memPostings) Advance(target int) int {
	for p.doc < target {
		p.NextDoc()
	}
	return p.doc
}

func (p *memPostings) Freq() int { return p.docs.freq }

func (p *memPostings) NextPosition() int {
	if !p.wantPos || p.posLeft == 0 {
		return -1
	}
	p.posLeft--
	p.lastPos += int(p.pos.readVInt())
	return p.lastPos
}

func (p *memPostings) AdvanceShallow(target int) int { return index.NoMoreDocs }
func (p *memPostings) BlockMax() (int, uint8)        { return p.maxFreq, p.minNorm }
