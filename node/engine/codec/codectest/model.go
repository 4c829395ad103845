// Package codectest holds an in-memory model segment (a LeafReader over
// plain maps and slices), a random generator of model segments, and a
// checker comparing any LeafReader with a model. The codec's conformance
// test writes a model with the codec and checks what it reads back (in the
// spirit of Lucene's BasePostingsFormatTestCase); the merger's tests check a
// merged view the same way. Usable by other engine packages' tests.
package codectest

import (
	"bytes"
	"slices"
	"sort"

	"github.com/sluice-search/sluice/node/engine/index"
)

// Posting is one doc of a term.
type Posting struct {
	Doc       int
	Freq      int
	Positions []int
}

// Term is a term and its postings, docs ascending.
type Term struct {
	Term     []byte
	Postings []Posting
}

// Field is everything a model segment holds for one field.
type Field struct {
	Info  index.FieldInfo
	Terms []Term  // sorted by Term, each with at least one posting
	Norms []uint8 // len MaxDoc when Info.HasNorms
	// Numeric doc values: Numeric[d] valid when HasNumeric[d].
	Numeric    []int64
	HasNumeric []bool
	// Sorted doc values: sorted unique values and an ord (-1 = none) per doc.
	SortedValues [][]byte
	SortedOrds   []int
}

// Model is an in-memory segment.
type Model struct {
	Docs   int
	Fields []*Field // by field number
	Stored []index.StoredDoc
	fis    *index.FieldInfos
	byName map[string]*Field
}

// Finish builds the lookup structures once the fields are filled in.
func (m *Model) Finish() {
	infos := make([]index.FieldInfo, len(m.Fields))
	m.byName = map[string]*Field{}
	for i, f := range m.Fields {
		infos[i] = f.Info
		m.byName[f.Info.Name] = f
		slices.SortFunc(f.Terms, func(a, b Term) int { return bytes.Compare(a.Term, b.Term) })
	}
	fis, err := index.NewFieldInfos(infos)
	if err != nil {
		panic(err) // a test bug
	}
	m.fis = fis
}

func (m *Model) FieldInfos() *index.FieldInfos { return m.fis }
func (m *Model) MaxDoc() int                   { return m.Docs }

func (m *Model) Terms(field string) index.Terms {
	f := m.byName[field]
	if f == nil || len(f.Terms) == 0 || f.Info.IndexOptions == index.IndexNone {
		return nil
	}
	return &modelTerms{f: f}
}

func (m *Model) Norms(field string) index.NormsReader {
	if f := m.byName[field]; f != nil && f.Norms != nil {
		return modelNorms(f.Norms)
	}
	return nil
}

func (m *Model) NumericDocValues(field string) index.NumericDocValues {
	if f := m.byName[field]; f != nil && f.Numeric != nil {
		return f
	}
	return nil
}

func (m *Model) SortedDocValues(field string) index.SortedDocValues {
	if f := m.byName[field]; f != nil && f.SortedOrds != nil {
		return (*modelSorted)(f)
	}
	return nil
}

func (m *Model) StoredFields() index.StoredFieldsReader { return modelStored(m.Stored) }

type modelNorms []uint8

func (n modelNorms) Norm(doc int) uint8 { return n[doc] }

// Get implements index.NumericDocValues.
func (f *Field) Get(doc int) (int64, bool) { return f.Numeric[doc], f.HasNumeric[doc] }

type modelSorted Field

func (s *modelSorted) Ord(doc int) int          { return s.SortedOrds[doc] }
func (s *modelSorted) LookupOrd(ord int) []byte { return s.SortedValues[ord] }
func (s *modelSorted) ValueCount() int          { return len(s.SortedValues) }

type modelStored []index.StoredDoc

func (s modelStored) Document(doc int, dst *index.StoredDoc) error {
	dst.ID = append(dst.ID[:0], s[doc].ID...)
	dst.Routing = append(dst.Routing[:0], s[doc].Routing...)
	dst.Source = append(dst.Source[:0], s[doc].Source...)
	return nil
}

type modelTerms struct{ f *Field }

func (t *modelTerms) Iterator() index.TermsEnum { return &modelTermsEnum{f: t.f, i: -1} }
func (t *modelTerms) Size() int64               { return int64(len(t.f.Terms)) }
func (t *modelTerms) IndexOptions() index.IndexOptions {
	return t.f.Info.IndexOptions
}

func (t *modelTerms) DocCount() int {
	seen := map[int]bool{}
	for _, term := range t.f.Terms {
		for _, p := range term.Postings {
			seen[p.Doc] = true
		}
	}
	return len(seen)
}

func (t *modelTerms) SumDocFreq() int64 {
	var s int64
	for _, term := range t.f.Terms {
		s += int64(len(term.Postings))
	}
	return s
}

func (t *modelTerms) SumTotalTermFreq() int64 {
	var s int64
	for _, term := range t.f.Terms {
		s += ttf(t.f, term)
	}
	return s
}

func ttf(f *Field, t Term) int64 {
	if !f.Info.IndexOptions.HasFreqs() {
		return int64(len(t.Postings))
	}
	var s int64
	for _, p := range t.Postings {
		s += int64(p.Freq)
	}
	return s
}

type modelTermsEnum struct {
	f *Field
	i int // current term; -1 before first, len at end
}

func (e *modelTermsEnum) Next() bool {
	if e.i < len(e.f.Terms) {
		e.i++
	}
	return e.i < len(e.f.Terms)
}

func (e *modelTermsEnum) search(target []byte) int {
	return sort.Search(len(e.f.Terms), func(i int) bool { return bytes.Compare(e.f.Terms[i].Term, target) >= 0 })
}

func (e *modelTermsEnum) SeekExact(term []byte) bool {
	i := e.search(term)
	if i < len(e.f.Terms) && bytes.Equal(e.f.Terms[i].Term, term) {
		e.i = i
		return true
	}
	e.i = -1
	return false
}

func (e *modelTermsEnum) SeekCeil(target []byte) index.SeekStatus {
	e.i = e.search(target)
	switch {
	case e.i == len(e.f.Terms):
		return index.SeekEnd
	case bytes.Equal(e.f.Terms[e.i].Term, target):
		return index.SeekFound
	}
	return index.SeekNotFound
}

func (e *modelTermsEnum) Term() []byte         { return e.f.Terms[e.i].Term }
func (e *modelTermsEnum) DocFreq() int         { return len(e.f.Terms[e.i].Postings) }
func (e *modelTermsEnum) TotalTermFreq() int64 { return ttf(e.f, e.f.Terms[e.i]) }

func (e *modelTermsEnum) Postings(reuse index.PostingsEnum, flags index.PostingsFlags) index.PostingsEnum {
	return e.Impacts(flags)
}

func (e *modelTermsEnum) Impacts(flags index.PostingsFlags) index.ImpactsEnum {
	return &modelPostings{f: e.f, ps: e.f.Terms[e.i].Postings, i: -1}
}

type modelPostings struct {
	f    *Field
	ps   []Posting
	i    int
	posI int
}

func (p *modelPostings) DocID() int {
	switch {
	case p.i < 0:
		return -1
	case p.i >= len(p.ps):
		return index.NoMoreDocs
	}
	return p.ps[p.i].Doc
}

func (p *modelPostings) NextDoc() int {
	if p.i < len(p.ps) {
		p.i++
	}
	p.posI = 0
	return p.DocID()
}

func (p *modelPostings) Advance(target int) int {
	p.i = sort.Search(len(p.ps), func(i int) bool { return p.ps[i].Doc >= target })
	p.posI = 0
	return p.DocID()
}

func (p *modelPostings) Cost() int64 { return int64(len(p.ps)) }

func (p *modelPostings) Freq() int {
	if !p.f.Info.IndexOptions.HasFreqs() {
		return 1
	}
	return p.ps[p.i].Freq
}

func (p *modelPostings) NextPosition() int {
	pos := p.ps[p.i].Positions[p.posI]
	p.posI++
	return pos
}

// The model is one block: exact maxima over all its postings.
func (p *modelPostings) AdvanceShallow(int) int { return index.NoMoreDocs }

func (p *modelPostings) BlockMax() (int, uint8) {
	maxFreq, minNorm := 1, uint8(255)
	for _, x := range p.ps {
		if p.f.Info.IndexOptions.HasFreqs() {
			maxFreq = max(maxFreq, x.Freq)
		}
		if p.f.Norms != nil {
			minNorm = min(minNorm, p.f.Norms[x.Doc])
		}
	}
	if p.f.Norms == nil {
		minNorm = 0
	}
	return maxFreq, minNorm
}
