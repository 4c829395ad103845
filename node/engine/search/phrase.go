package search

import (
	"bytes"
	"fmt"
	"math"
	"strings"

	"github.com/sluice-search/sluice/node/engine/index"
)

// PhraseQuery matches docs where Terms occur at Positions (relative; nil
// means 0, 1, 2, ...) in Field. Slop is the allowed edit distance in
// positions (0 = exact phrase); a sloppy match of length d counts
// 1/(1+d) towards the phrase frequency, as Lucene. Scored by BM25 with
// the phrase frequency and the sum of the terms' idfs.
// Terms repeated in a sloppy phrase match distinct positions of the doc,
// as Lucene.
type PhraseQuery struct {
	Field     string
	Terms     [][]byte
	Positions []int
	Slop      int
}

func (q *PhraseQuery) String() string {
	parts := make([]string, len(q.Terms))
	for i, t := range q.Terms {
		parts[i] = string(t)
	}
	return fmt.Sprintf("%s:\"%s\"~%d", q.Field, strings.Join(parts, " "), q.Slop)
}

func (q *PhraseQuery) createWeight(qc *queryContext, mode scoreMode, boost float32) (weight, error) {
	n := len(q.Terms)
	if n == 0 {
		return matchNoneWeight{}, nil
	}
	if q.Positions != nil && len(q.Positions) != n {
		return nil, fmt.Errorf("%w: phrase has %d terms and %d positions", ErrInvalidQuery, n, len(q.Positions))
	}
	if q.Slop < 0 {
		return nil, fmt.Errorf("%w: phrase slop %d < 0", ErrInvalidQuery, q.Slop)
	}
	if n == 1 && q.Slop == 0 {
		return (&TermQuery{Field: q.Field, Term: q.Terms[0]}).createWeight(qc, mode, boost)
	}
	w := &phraseWeight{field: q.Field, slop: q.Slop, mode: mode, offsets: make([]int, n), enums: make([][]index.TermsEnum, len(qc.s.leaves))}
	if q.Slop > 0 {
		w.repeats = groupRepeats(q.Terms)
	}
	for i := range w.offsets {
		w.offsets[i] = i
		if q.Positions != nil {
			w.offsets[i] = q.Positions[i]
			if i > 0 && w.offsets[i] < w.offsets[i-1] {
				return nil, fmt.Errorf("%w: phrase positions must not decrease", ErrInvalidQuery)
			}
		}
	}
	dfs := make([]int64, n)
	for l := range qc.s.leaves {
		terms := qc.s.leaves[l].Reader.Terms(q.Field)
		if terms == nil {
			continue
		}
		if !terms.IndexOptions().HasPositions() {
			return nil, fmt.Errorf("%w: field %q is indexed without positions", ErrInvalidQuery, q.Field)
		}
		enums := make([]index.TermsEnum, n)
		all := true
		for i, t := range q.Terms {
			te := terms.Iterator()
			if !te.SeekExact(t) {
				all = false
				continue
			}
			enums[i] = te
			dfs[i] += int64(te.DocFreq())
		}
		if all {
			w.enums[l] = enums
		}
	}
	var sumIDF float32
	fs := qc.fieldStats(q.Field)
	for _, df := range dfs {
		if df == 0 {
			return matchNoneWeight{}, nil
		}
		sumIDF += idf(df, fs.docCount)
	}
	w.sim = bm25{weight: boost * sumIDF, cache: &fs.cache}
	return w, nil
}

type phraseWeight struct {
	field   string
	slop    int
	mode    scoreMode
	offsets []int
	repeats []int               // sloppy: repeat groups (groupRepeats)
	enums   [][]index.TermsEnum // per leaf, per term; nil leaf: no match
	sim     bm25
}

func (w *phraseWeight) count(*leafContext) int { return -1 }

func (w *phraseWeight) scorer(lc *leafContext) (scorer, error) {
	enums := w.enums[lc.ord]
	if enums == nil {
		return nil, nil
	}
	n := len(enums)
	s := &phraseScorer{
		postings: make([]index.PostingsEnum, n),
		offsets:  w.offsets,
		slop:     w.slop,
		sim:      w.sim,
		pos:      make([][]int, n),
	}
	s.sloppy = sloppyMatcher{cur: make([]int, n), offs: w.offsets, group: w.repeats}
	if w.mode.scores {
		s.norms = lc.leaf.Reader.Norms(w.field)
	}
	its := make([]index.DocIDIterator, n)
	// Exact phrases can bound their score per block: the phrase frequency
	// is at most every term's frequency in the doc.
	useImpacts := w.mode.topScores && w.slop == 0
	s.blockEnd = -1
	if useImpacts {
		s.impacts = make([]index.ImpactsEnum, n)
	}
	for i, te := range enums {
		if useImpacts {
			s.impacts[i] = te.Impacts(index.PostingsPositions)
			s.postings[i] = s.impacts[i]
		} else {
			s.postings[i] = te.Postings(nil, index.PostingsPositions)
		}
		its[i] = s.postings[i]
	}
	s.conjunctionDISI = newConjunctionDISI(its)
	return s, nil
}

// phraseScorer: approximation = conjunction of the terms' docs; matches()
// reads positions and computes the phrase frequency.
type phraseScorer struct {
	*conjunctionDISI
	postings []index.PostingsEnum
	offsets  []int
	slop     int
	sim      bm25
	norms    index.NormsReader
	pos      [][]int // per term: positions minus the term's offset
	sloppy   sloppyMatcher
	freq     float32

	impacts  []index.ImpactsEnum // exact phrases in top-k mode, else nil
	blockEnd int
	blockMax float32
}

func (s *phraseScorer) twoPhase() twoPhase { return s }

// advanceShallow bounds the next blocks by BM25(min of the terms' max
// freqs, max of their min norms): the phrase occurs at most as often as
// its rarest term in a doc, and the doc is at least as long as any
// block's shortest.
func (s *phraseScorer) advanceShallow(target int) int {
	if s.impacts == nil {
		return noMoreDocs
	}
	if target <= s.blockEnd {
		return s.blockEnd
	}
	upTo, minFreq, maxNorm := noMoreDocs, math.MaxInt, uint8(0)
	for _, imp := range s.impacts {
		upTo = min(upTo, imp.AdvanceShallow(max(target, imp.DocID())))
		f, n := imp.BlockMax()
		minFreq, maxNorm = min(minFreq, f), max(maxNorm, n)
	}
	if s.norms == nil {
		maxNorm = noNorm
	}
	s.blockEnd, s.blockMax = upTo, s.sim.score(float32(minFreq), maxNorm)
	return upTo
}

func (s *phraseScorer) maxScore(upTo int) float32 {
	if upTo <= s.blockEnd {
		return s.blockMax
	}
	return s.sim.maxScore()
}

func (s *phraseScorer) score() float32 {
	norm := noNorm
	if s.norms != nil {
		norm = s.norms.Norm(s.DocID())
	}
	return s.sim.score(s.freq, norm)
}

func (s *phraseScorer) matches() bool {
	for i, pe := range s.postings {
		p := s.pos[i][:0]
		for j, f := 0, pe.Freq(); j < f; j++ {
			p = append(p, pe.NextPosition()-s.offsets[i])
		}
		s.pos[i] = p
	}
	if s.slop == 0 {
		s.freq = float32(exactPhraseFreq(s.pos))
	} else {
		s.sloppy.pos = s.pos
		s.freq = s.sloppy.freq(s.slop)
	}
	return s.freq > 0
}

// exactPhraseFreq counts the values present in every sorted list.
func exactPhraseFreq(pos [][]int) int {
	var cursors [16]int // no allocation for phrases of up to 16 terms
	var cur []int
	if len(pos) > len(cursors) {
		cur = make([]int, len(pos))
	} else {
		cur = cursors[:len(pos)]
	}
	freq := 0
outer:
	for _, p := range pos[0] {
		for i := 1; i < len(pos); i++ {
			l, c := pos[i], cur[i]
			for c < len(l) && l[c] < p {
				c++
			}
			cur[i] = c
			if c == len(l) {
				break outer
			}
			if l[c] != p {
				continue outer
			}
		}
		freq++
	}
	return freq
}

// sloppyMatcher computes sloppy phrase frequencies as Lucene's
// SloppyPhraseMatcher: walk the terms' positions in order, always
// advancing the term at the smallest (offset-relative) position; each
// time the window between smallest and largest is minimal and within
// slop, add 1/(1+length). Terms that repeat in the phrase ("a b a") must
// sit on distinct positions of the doc: when two collide the lesser one
// moves on.
type sloppyMatcher struct {
	pos   [][]int // per term: positions minus the term's offset
	cur   []int   // per term: index into pos
	offs  []int
	group []int // per term: first index of an equal term, -1 if unique; nil without repeats
	end   int   // largest current relative position
}

// groupRepeats returns the repeat groups of terms, or nil if none repeat.
func groupRepeats(terms [][]byte) []int {
	var group []int
	for i := range terms {
		for j := 0; j < i; j++ {
			if bytes.Equal(terms[i], terms[j]) {
				if group == nil {
					group = make([]int, len(terms))
					for k := range group {
						group[k] = -1
					}
				}
				if group[j] < 0 {
					group[j] = j
				}
				group[i] = group[j]
				break
			}
		}
	}
	return group
}

func (m *sloppyMatcher) at(i int) int { return m.pos[i][m.cur[i]] }

// advance moves term i to its next position; false when it has none.
func (m *sloppyMatcher) advance(i int) bool {
	m.cur[i]++
	if m.cur[i] == len(m.pos[i]) {
		return false
	}
	m.end = max(m.end, m.at(i))
	return true
}

// collide returns another term of i's group on the same doc position, or
// -1.
func (m *sloppyMatcher) collide(i int) int {
	g := m.group[i]
	if g < 0 {
		return -1
	}
	actual := m.at(i) + m.offs[i]
	for j := range m.pos {
		if j != i && m.group[j] == g && m.at(j)+m.offs[j] == actual {
			return j
		}
	}
	return -1
}

func (m *sloppyMatcher) lesser(i, j int) int {
	if pi, pj := m.at(i), m.at(j); pi < pj || pi == pj && m.offs[i] < m.offs[j] {
		return i
	}
	return j
}

// resolve moves colliding repeats of i apart; false when one runs out.
func (m *sloppyMatcher) resolve(i int) bool {
	if m.group == nil {
		return true
	}
	for {
		k := m.collide(i)
		if k < 0 {
			return true
		}
		i = m.lesser(i, k)
		if !m.advance(i) {
			return false
		}
	}
}

func (m *sloppyMatcher) freq(slop int) float32 {
	for i := range m.pos {
		m.cur[i] = 0
	}
	for changed := m.group != nil; changed; {
		changed = false
		for i := range m.pos {
			if k := m.collide(i); m.group[i] >= 0 && k >= 0 {
				if !m.advance(m.lesser(i, k)) {
					return 0
				}
				changed = true
			}
		}
	}
	m.end = math.MinInt
	for i := range m.pos {
		m.end = max(m.end, m.at(i))
	}
	var freq float32
	for {
		lo := 0
		for i := 1; i < len(m.pos); i++ {
			if m.at(i) < m.at(lo) {
				lo = i
			}
		}
		next := math.MaxInt
		for i := range m.pos {
			if i != lo {
				next = min(next, m.at(i))
			}
		}
		matchLength := m.end - m.at(lo)
		// Advance lo while it stays the smallest, keeping the shortest
		// window it forms.
		for {
			if !m.advance(lo) || !m.resolve(lo) {
				if matchLength <= slop {
					freq += 1 / float32(1+matchLength)
				}
				return freq
			}
			p := m.at(lo)
			if p > next {
				break
			}
			matchLength = min(matchLength, m.end-p)
		}
		if matchLength <= slop {
			freq += 1 / float32(1+matchLength)
		}
	}
}
