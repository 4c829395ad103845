package search

import (
	"math"

	"github.com/sluice-search/sluice/node/engine/index"
)

const noMoreDocs = index.NoMoreDocs

// scorer iterates the docs a query matches in one leaf and scores them
// (Lucene's Scorer). Iteration follows index.DocIDIterator; when twoPhase
// returns non-nil the iteration is an approximation and a doc matches only
// if twoPhase().matches() reports true while positioned on it.
type scorer interface {
	index.DocIDIterator
	// score is the score of the current doc (only after a confirmed match).
	score() float32
	// twoPhase returns the verification step, or nil if iteration is exact.
	twoPhase() twoPhase
	// advanceShallow moves score upper-bound information (skip data, not
	// docs) so that target's block is current and returns the last doc of
	// the range over which maxScore is cheap and tight. Callers pass
	// non-decreasing targets >= DocID().
	advanceShallow(target int) int
	// maxScore bounds the score of every doc in [last advanceShallow
	// target, upTo] (any upTo; beyond the current block the bound is the
	// term's global maximum).
	maxScore(upTo int) float32
}

// twoPhase confirms a match found by an approximation (phrase positions,
// exclusions), so conjunctions can leap-frog on cheap iterators first.
type twoPhase interface {
	matches() bool
}

// toScore rounds a float64 sum of clause scores. Sums are kept in float64:
// with the few clauses of a query and BM25's range of values the float64
// sum is exact, so the rounded float32 result does not depend on the order
// clauses are visited in — the reason a pruned disjunction returns
// bit-identical scores to an exhaustive one.
func toScore(sum float64) float32 { return float32(sum) }

// boundScore rounds a float64 sum of n score upper bounds, inflated by the
// worst relative error of n float64 additions on either side, so it stays
// an upper bound of any float64 sum of the bounded scores even when the
// sums are not exact (extreme boosts) — Lucene's MathUtil.sumUpperBound.
func boundScore(sum float64, n int) float32 {
	return float32(sum * (1 + float64(2*n+2)*0x1p-52))
}

// constantScorer gives every doc of an iterator the same score.
type constantScorer struct {
	index.DocIDIterator
	value float32
}

func (s *constantScorer) score() float32            { return s.value }
func (s *constantScorer) twoPhase() twoPhase        { return nil }
func (s *constantScorer) advanceShallow(int) int    { return noMoreDocs }
func (s *constantScorer) maxScore(upTo int) float32 { return s.value }
func newConstantScorer(it index.DocIDIterator, v float32) *constantScorer {
	return &constantScorer{DocIDIterator: it, value: v}
}

// rescoredScorer replaces the score of a scorer by a constant, keeping its
// two-phase verification (ConstantScoreQuery over a phrase, filters).
type rescoredScorer struct {
	scorer
	value float32
}

func (s *rescoredScorer) score() float32            { return s.value }
func (s *rescoredScorer) advanceShallow(int) int    { return noMoreDocs }
func (s *rescoredScorer) maxScore(upTo int) float32 { return s.value }

// rangeIterator iterates every doc in [0, maxDoc) (match_all).
type rangeIterator struct {
	doc, maxDoc int
}

func (it *rangeIterator) DocID() int { return it.doc }
func (it *rangeIterator) NextDoc() int {
	return it.Advance(it.doc + 1)
}
func (it *rangeIterator) Advance(target int) int {
	if target >= it.maxDoc {
		it.doc = noMoreDocs
	} else {
		it.doc = target
	}
	return it.doc
}
func (it *rangeIterator) Cost() int64 { return int64(it.maxDoc) }

// bitSetIterator iterates the set bits of a FixedBitSet.
type bitSetIterator struct {
	bits *index.FixedBitSet
	doc  int
	cost int64
}

func (it *bitSetIterator) DocID() int   { return it.doc }
func (it *bitSetIterator) NextDoc() int { return it.Advance(it.doc + 1) }
func (it *bitSetIterator) Advance(target int) int {
	it.doc = it.bits.NextSetBit(target)
	return it.doc
}
func (it *bitSetIterator) Cost() int64 { return it.cost }

// exactScorer turns a two-phase scorer into an exact one, for places that
// need exact iteration (disjunction clauses, exclusions).
type exactScorer struct {
	scorer
	tp twoPhase
}

func exact(s scorer) scorer {
	if tp := s.twoPhase(); tp != nil {
		return &exactScorer{scorer: s, tp: tp}
	}
	return s
}

func (s *exactScorer) twoPhase() twoPhase { return nil }
func (s *exactScorer) NextDoc() int {
	return s.confirm(s.scorer.NextDoc())
}
func (s *exactScorer) Advance(target int) int {
	return s.confirm(s.scorer.Advance(target))
}
func (s *exactScorer) confirm(doc int) int {
	for doc != noMoreDocs && !s.tp.matches() {
		doc = s.scorer.NextDoc()
	}
	return doc
}

// termScorer scores the docs of one term with BM25. With an ImpactsEnum it
// also reports per-block score bounds for block-max pruning.
type termScorer struct {
	pe       index.PostingsEnum
	imp      index.ImpactsEnum // nil when not scoring for top-k
	sim      bm25
	norms    index.NormsReader // nil: field without norms
	blockEnd int               // last doc of the block AdvanceShallow positioned on
	blockMax float32
	impacts  []index.Impact // scratch for BlockImpacts, impactsBuf at first
	// Room for the competitive impacts of most blocks (the corpus's
	// largest has 9), so scoring them allocates nothing.
	impactsBuf [16]index.Impact
}

func (s *termScorer) DocID() int             { return s.pe.DocID() }
func (s *termScorer) NextDoc() int           { return s.pe.NextDoc() }
func (s *termScorer) Advance(target int) int { return s.pe.Advance(target) }
func (s *termScorer) Cost() int64            { return s.pe.Cost() }
func (s *termScorer) twoPhase() twoPhase     { return nil }
func (s *termScorer) score() float32 {
	norm := noNorm
	if s.norms != nil {
		norm = s.norms.Norm(s.pe.DocID())
	}
	return s.sim.score(float32(s.pe.Freq()), norm)
}

func (s *termScorer) advanceShallow(target int) int {
	if s.imp == nil {
		return noMoreDocs
	}
	if target <= s.blockEnd {
		return s.blockEnd
	}
	s.blockEnd = s.imp.AdvanceShallow(target)
	if bi, ok := s.imp.(index.BlockImpactsEnum); ok {
		// The block's exact max score.
		s.impacts = bi.BlockImpacts(s.impacts[:0])
		s.blockMax = 0
		for _, im := range s.impacts {
			norm := im.Norm
			if s.norms == nil {
				norm = noNorm
			}
			s.blockMax = max(s.blockMax, s.sim.score(float32(im.Freq), norm))
		}
		return s.blockEnd
	}
	maxFreq, minNorm := s.imp.BlockMax()
	if s.norms == nil {
		minNorm = noNorm
	}
	s.blockMax = s.sim.score(float32(maxFreq), minNorm)
	return s.blockEnd
}

func (s *termScorer) maxScore(upTo int) float32 {
	if upTo <= s.blockEnd {
		return s.blockMax
	}
	return s.sim.maxScore()
}

// nextUp returns the smallest float32 greater than f (Math.nextUp).
func nextUp(f float32) float32 {
	return math.Nextafter32(f, float32(math.Inf(1)))
}
