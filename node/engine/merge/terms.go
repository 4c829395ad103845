package merge

import (
	"bytes"
	"math"

	"github.com/sluice-search/sluice/node/engine/index"
)

type subTerms struct {
	input int
	terms index.Terms
}

// terms is a field's merged term dictionary.
type terms struct {
	r     *Reader
	field string
	opts  index.IndexOptions
	subs  []subTerms
}

type termStats struct {
	size, sumDocFreq, sumTTF int64
	docCount                 int
}

// stats computes the exact statistics over live docs with one pass, cached.
func (t *terms) stats() *termStats {
	t.r.mu.Lock()
	defer t.r.mu.Unlock()
	if st := t.r.stats[t.field]; st != nil {
		return st
	}
	st := &termStats{}
	seen := index.NewFixedBitSet(t.r.maxDoc)
	te := t.Iterator()
	var pe index.PostingsEnum
	flags := index.PostingsDocs
	if t.opts.HasFreqs() {
		flags = index.PostingsFreqs
	}
	for te.Next() {
		pe = te.Postings(pe, flags)
		df := 0
		for d := pe.NextDoc(); d != index.NoMoreDocs; d = pe.NextDoc() {
			df++
			st.sumTTF += int64(pe.Freq())
			seen.Set(d)
		}
		if df > 0 {
			st.size++
			st.sumDocFreq += int64(df)
		}
	}
	st.docCount = seen.Cardinality()
	t.r.stats[t.field] = st
	return st
}

func (t *terms) Size() int64                      { return t.stats().size }
func (t *terms) DocCount() int                    { return t.stats().docCount }
func (t *terms) SumDocFreq() int64                { return t.stats().sumDocFreq }
func (t *terms) SumTotalTermFreq() int64          { return t.stats().sumTTF }
func (t *terms) IndexOptions() index.IndexOptions { return t.opts }

// Iterator implements index.Terms. Terms whose every doc is deleted are
// still enumerated (with empty postings), as in Lucene's merge; the codec
// drops them.
func (t *terms) Iterator() index.TermsEnum {
	e := &termsEnum{t: t, subs: make([]subEnum, len(t.subs))}
	for i, s := range t.subs {
		e.subs[i] = subEnum{input: s.input, te: s.terms.Iterator()}
	}
	return e
}

type subEnum struct {
	input int
	te    index.TermsEnum
	valid bool // positioned on a term
}

// termsEnum is a k-way merge of the inputs' enums. Merges have few inputs
// (maxMergeAtOnce is 10), so the minimum is found by a linear scan.
type termsEnum struct {
	t       *terms
	subs    []subEnum
	started bool
	term    []byte
	top     []int // subs positioned on term

	scratch   index.PostingsEnum
	haveStats bool
	docFreq   int
	ttf       int64
}

func (e *termsEnum) pickTop() bool {
	e.top = e.top[:0]
	var min []byte
	for i := range e.subs {
		s := &e.subs[i]
		if !s.valid {
			continue
		}
		c := 0
		if len(e.top) > 0 {
			c = bytes.Compare(s.te.Term(), min)
		}
		if len(e.top) == 0 || c < 0 {
			e.top = append(e.top[:0], i)
			min = s.te.Term()
		} else if c == 0 {
			e.top = append(e.top, i)
		}
	}
	if len(e.top) == 0 {
		e.term = e.term[:0]
		return false
	}
	e.term = append(e.term[:0], min...)
	return true
}

func (e *termsEnum) Next() bool {
	if !e.started {
		e.started = true
		for i := range e.subs {
			e.subs[i].valid = e.subs[i].te.Next()
		}
	} else {
		for _, i := range e.top {
			e.subs[i].valid = e.subs[i].te.Next()
		}
	}
	return e.pickLiveTop()
}

// pickLiveTop positions on the smallest term that still has a live doc:
// terms whose docs were all deleted are not part of the merged segment.
func (e *termsEnum) pickLiveTop() bool {
	for e.pickTop() {
		e.haveStats = false
		if !e.t.r.hasDeletes || e.hasLiveDoc() {
			return true
		}
		for _, i := range e.top {
			e.subs[i].valid = e.subs[i].te.Next()
		}
	}
	return false
}

func (e *termsEnum) hasLiveDoc() bool {
	e.scratch = e.Postings(e.scratch, index.PostingsDocs)
	return e.scratch.NextDoc() != index.NoMoreDocs
}

func (e *termsEnum) SeekCeil(target []byte) index.SeekStatus {
	e.started = true
	for i := range e.subs {
		e.subs[i].valid = e.subs[i].te.SeekCeil(target) != index.SeekEnd
	}
	if !e.pickLiveTop() {
		return index.SeekEnd
	}
	if bytes.Equal(e.term, target) {
		return index.SeekFound
	}
	return index.SeekNotFound
}

func (e *termsEnum) SeekExact(term []byte) bool {
	// Positions every sub at term or past it, so Next continues correctly.
	return e.SeekCeil(term) == index.SeekFound
}

// liveStats counts the current term's live docs and freqs on first use (the
// codec writer does not ask; it counts what it writes).
func (e *termsEnum) liveStats() {
	if e.haveStats {
		return
	}
	e.haveStats = true
	e.docFreq, e.ttf = 0, 0
	flags := index.PostingsDocs
	if e.t.opts.HasFreqs() {
		flags = index.PostingsFreqs
	}
	e.scratch = e.Postings(e.scratch, flags)
	for d := e.scratch.NextDoc(); d != index.NoMoreDocs; d = e.scratch.NextDoc() {
		e.docFreq++
		e.ttf += int64(e.scratch.Freq())
	}
}

func (e *termsEnum) Term() []byte { return e.term }

func (e *termsEnum) DocFreq() int {
	e.liveStats()
	return e.docFreq
}

func (e *termsEnum) TotalTermFreq() int64 {
	e.liveStats()
	return e.ttf
}

func (e *termsEnum) Postings(reuse index.PostingsEnum, flags index.PostingsFlags) index.PostingsEnum {
	p, ok := reuse.(*postings)
	if !ok || p == nil || p.r != e.t.r {
		p = &postings{r: e.t.r}
	}
	p.reset(e, flags)
	return p
}

func (e *termsEnum) Impacts(flags index.PostingsFlags) index.ImpactsEnum {
	p := &postings{r: e.t.r}
	p.reset(e, flags)
	p.impactField = e.t
	p.impactTerm = append([]byte(nil), e.term...)
	return p
}

type subPostings struct {
	input int
	pe    index.PostingsEnum
}

// postings concatenates the inputs' postings of one term in input order,
// skipping deleted docs and renumbering the rest.
type postings struct {
	r     *Reader
	subs  []subPostings
	cache []index.PostingsEnum // by sub enum index, for reuse
	cur   int                  // index in subs
	doc   int
	flags index.PostingsFlags
	cost  int64

	// impacts: one block covering everything, bounds computed on demand
	impactField *terms
	impactTerm  []byte
	maxFreq     int
	minNorm     uint8
	haveImpacts bool
}

func (p *postings) reset(e *termsEnum, flags index.PostingsFlags) {
	if len(p.cache) != len(e.subs) {
		p.cache = make([]index.PostingsEnum, len(e.subs))
	}
	p.subs = p.subs[:0]
	p.cost = 0
	for _, i := range e.top {
		s := &e.subs[i]
		// Reuse per input enum: the codec reuses only its own kind.
		pe := s.te.Postings(p.cache[i], flags)
		p.cache[i] = pe
		p.subs = append(p.subs, subPostings{input: s.input, pe: pe})
		p.cost += pe.Cost()
	}
	// e.top is in sub order, which is input order: docs come out sorted.
	p.cur = 0
	p.doc = -1
	p.flags = flags
	p.haveImpacts = false
}

func (p *postings) DocID() int  { return p.doc }
func (p *postings) Cost() int64 { return p.cost }
func (p *postings) Freq() int   { return p.subs[p.cur].pe.Freq() }
func (p *postings) NextPosition() int {
	return p.subs[p.cur].pe.NextPosition()
}

// settle returns the first live doc from d (a doc of the current sub) on,
// moving through later subs as they run out.
func (p *postings) settle(d int) int {
	for {
		for d != index.NoMoreDocs {
			s := p.subs[p.cur]
			if nd := p.r.docMap[s.input][d]; nd >= 0 {
				p.doc = int(nd)
				return p.doc
			}
			d = s.pe.NextDoc()
		}
		p.cur++
		if p.cur >= len(p.subs) {
			p.cur = len(p.subs) - 1
			p.doc = index.NoMoreDocs
			return p.doc
		}
		d = p.subs[p.cur].pe.NextDoc()
	}
}

func (p *postings) NextDoc() int {
	if len(p.subs) == 0 {
		p.doc = index.NoMoreDocs
		return p.doc
	}
	if p.doc == index.NoMoreDocs {
		return p.doc
	}
	return p.settle(p.subs[p.cur].pe.NextDoc())
}

// Advance maps target back to an input doc and uses that input's own
// (skip-data backed) Advance.
func (p *postings) Advance(target int) int {
	if len(p.subs) == 0 || target >= p.r.maxDoc {
		p.doc = index.NoMoreDocs
		return p.doc
	}
	in, old := p.r.locate(target)
	for p.cur < len(p.subs)-1 && p.subs[p.cur].input < in {
		p.cur++
	}
	s := p.subs[p.cur]
	if s.input > in {
		// The target's input has no postings for this term: start at
		// the first doc of the next one that has.
		return p.settle(s.pe.NextDoc())
	}
	if s.input < in {
		p.doc = index.NoMoreDocs
		return p.doc
	}
	if cur := s.pe.DocID(); cur >= old {
		// Already at or past (a deleted doc's successor); find the next.
		if cur == index.NoMoreDocs {
			return p.settle(cur)
		}
		return p.settle(s.pe.NextDoc())
	}
	return p.settle(s.pe.Advance(old))
}

// AdvanceShallow implements index.ImpactsEnum with one block spanning the
// whole term: merges never use impacts, so this favours simplicity.
func (p *postings) AdvanceShallow(int) int { return index.NoMoreDocs }

// BlockMax implements index.ImpactsEnum: the exact maxima over the term's
// live docs, computed by one pass on first call.
func (p *postings) BlockMax() (int, uint8) {
	if !p.haveImpacts {
		p.haveImpacts = true
		p.maxFreq, p.minNorm = 1, math.MaxUint8
		norms := p.r.Norms(p.impactField.field)
		te := p.impactField.Iterator()
		if te.SeekExact(p.impactTerm) {
			pe := te.Postings(nil, index.PostingsFreqs)
			for d := pe.NextDoc(); d != index.NoMoreDocs; d = pe.NextDoc() {
				p.maxFreq = max(p.maxFreq, pe.Freq())
				if norms != nil {
					p.minNorm = min(p.minNorm, norms.Norm(d))
				}
			}
		}
		if norms == nil {
			p.minNorm = 0
		}
	}
	return p.maxFreq, p.minNorm
}
