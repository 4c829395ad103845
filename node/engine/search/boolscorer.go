package search

import (
	"sort"

	"github.com/sluice-search/sluice/node/engine/index"
)

// conjunctionDISI leap-frogs iterators (approximations) on Advance, led by
// the cheapest one, so an AND costs about the rarest clause's postings.
type conjunctionDISI struct {
	its []index.DocIDIterator // sorted by cost, its[0] leads
}

func newConjunctionDISI(its []index.DocIDIterator) *conjunctionDISI {
	sort.SliceStable(its, func(i, j int) bool { return its[i].Cost() < its[j].Cost() })
	return &conjunctionDISI{its: its}
}

func (c *conjunctionDISI) DocID() int   { return c.its[0].DocID() }
func (c *conjunctionDISI) Cost() int64  { return c.its[0].Cost() }
func (c *conjunctionDISI) NextDoc() int { return c.doNext(c.its[0].NextDoc()) }
func (c *conjunctionDISI) Advance(target int) int {
	return c.doNext(c.its[0].Advance(target))
}

func (c *conjunctionDISI) doNext(doc int) int {
again:
	for doc != noMoreDocs {
		for _, other := range c.its[1:] {
			if other.DocID() < doc {
				if d := other.Advance(doc); d > doc {
					doc = c.its[0].Advance(d)
					continue again
				}
			}
		}
		return doc
	}
	return noMoreDocs
}

// conjunctionScorer is a required set of clauses (must + filter); only the
// scoring ones contribute to the score. It is two-phase when any clause is.
type conjunctionScorer struct {
	*conjunctionDISI
	scoring []scorer
	all     []scorer
	tps     []twoPhase
}

func newConjunctionScorer(required, scoring []scorer) *conjunctionScorer {
	its := make([]index.DocIDIterator, len(required))
	var tps []twoPhase
	for i, s := range required {
		its[i] = s
		if tp := s.twoPhase(); tp != nil {
			tps = append(tps, tp)
		}
	}
	return &conjunctionScorer{conjunctionDISI: newConjunctionDISI(its), scoring: scoring, all: required, tps: tps}
}

func (c *conjunctionScorer) twoPhase() twoPhase {
	if len(c.tps) == 0 {
		return nil
	}
	return c
}

func (c *conjunctionScorer) matches() bool {
	for _, tp := range c.tps {
		if !tp.matches() {
			return false
		}
	}
	return true
}

func (c *conjunctionScorer) score() float32 {
	var sum float64
	for _, s := range c.scoring {
		sum += float64(s.score())
	}
	return toScore(sum)
}

func (c *conjunctionScorer) advanceShallow(target int) int {
	return minShallow(c.scoring, target)
}

// minShallow advances every scorer's score bounds to target (or its
// current doc, if ahead) and returns the nearest block end.
func minShallow(subs []scorer, target int) int {
	upTo := noMoreDocs
	for _, s := range subs {
		upTo = min(upTo, s.advanceShallow(max(target, s.DocID())))
	}
	return upTo
}

func (c *conjunctionScorer) maxScore(upTo int) float32 {
	var sum float64
	for _, s := range c.scoring {
		sum += float64(s.maxScore(upTo))
	}
	return boundScore(sum, len(c.scoring))
}

// disjunctionScorer is the union of exact clauses with an optional
// minimum_should_match; clause heads live in a min-heap by doc id with the
// doc cached in the entry (Lucene's DisiPriorityQueue of DisiWrappers).
type disjunctionScorer struct {
	heap []disiEntry
	subs []scorer // the clauses, for MaxScore and bounds
	msm  int
	doc  int
	cost int64
	// scoring is false for constant-score unions (scores not summed).
	scoring bool
}

type disiEntry struct {
	s   scorer
	doc int
}

func newDisjunctionScorer(subs []scorer, msm int, scoring bool) *disjunctionScorer {
	d := &disjunctionScorer{heap: make([]disiEntry, len(subs)), subs: make([]scorer, len(subs)), msm: max(msm, 1), doc: -1, scoring: scoring}
	for i, s := range subs {
		d.subs[i] = exact(s)
		d.heap[i] = disiEntry{s: d.subs[i], doc: -1}
		d.cost += s.Cost()
	}
	return d
}

func (d *disjunctionScorer) DocID() int         { return d.doc }
func (d *disjunctionScorer) Cost() int64        { return d.cost }
func (d *disjunctionScorer) twoPhase() twoPhase { return nil }

func (d *disjunctionScorer) NextDoc() int { return d.Advance(d.doc + 1) }

func (d *disjunctionScorer) Advance(target int) int {
	h := d.heap
	for h[0].doc < target {
		h[0].doc = h[0].s.Advance(target)
		d.down(0)
	}
	return d.settle()
}

// settle positions on the heap's top doc, skipping docs matched by fewer
// than msm clauses.
func (d *disjunctionScorer) settle() int {
	h := d.heap
	for {
		doc := h[0].doc
		if doc == noMoreDocs {
			d.doc = noMoreDocs
			return noMoreDocs
		}
		if d.msm == 1 || d.countOn(doc, 0) >= d.msm {
			d.doc = doc
			return doc
		}
		for h[0].doc == doc {
			h[0].doc = h[0].s.NextDoc()
			d.down(0)
		}
	}
}

// countOn counts heap entries on doc in the subtree at i (the heap order
// lets it stop at any child beyond doc).
func (d *disjunctionScorer) countOn(doc, i int) int {
	if i >= len(d.heap) || d.heap[i].doc != doc {
		return 0
	}
	return 1 + d.countOn(doc, 2*i+1) + d.countOn(doc, 2*i+2)
}

func (d *disjunctionScorer) down(i int) {
	h := d.heap
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && h[r].doc < h[l].doc {
			m = r
		}
		if h[m].doc >= h[i].doc {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

func (d *disjunctionScorer) score() float32 {
	if !d.scoring {
		return 0
	}
	return toScore(d.sumOn(d.doc, 0))
}

func (d *disjunctionScorer) sumOn(doc, i int) float64 {
	if i >= len(d.heap) || d.heap[i].doc != doc {
		return 0
	}
	return float64(d.heap[i].s.score()) + d.sumOn(doc, 2*i+1) + d.sumOn(doc, 2*i+2)
}

func (d *disjunctionScorer) advanceShallow(target int) int {
	return minShallow(d.subs, target)
}

func (d *disjunctionScorer) maxScore(upTo int) float32 {
	var sum float64
	for _, s := range d.subs {
		if s.DocID() <= upTo {
			sum += float64(s.maxScore(upTo))
		}
	}
	return boundScore(sum, len(d.subs))
}

// reqOptScorer matches the required scorer and adds the optional one's
// score where it also matches (must + should without msm).
type reqOptScorer struct {
	scorer // required
	opt    scorer
}

func (s *reqOptScorer) score() float32 {
	sum := float64(s.scorer.score())
	doc := s.scorer.DocID()
	if s.opt.DocID() < doc {
		s.opt.Advance(doc)
	}
	if s.opt.DocID() == doc {
		sum += float64(s.opt.score())
	}
	return toScore(sum)
}

func (s *reqOptScorer) advanceShallow(target int) int {
	return min(s.scorer.advanceShallow(target), s.opt.advanceShallow(max(target, s.opt.DocID())))
}

func (s *reqOptScorer) maxScore(upTo int) float32 {
	return boundScore(float64(s.scorer.maxScore(upTo))+float64(s.opt.maxScore(upTo)), 2)
}

// reqExclScorer removes the docs of an exclusion (must_not) from the
// required scorer, as a two-phase check so conjunctions stay cheap.
type reqExclScorer struct {
	scorer // required
	reqTP  twoPhase
	excl   scorer // exact
}

func (s *reqExclScorer) twoPhase() twoPhase { return s }

func (s *reqExclScorer) matches() bool {
	doc := s.scorer.DocID()
	if s.excl.DocID() < doc {
		s.excl.Advance(doc)
	}
	if s.excl.DocID() == doc {
		return false
	}
	return s.reqTP == nil || s.reqTP.matches()
}
