package search

import (
	"github.com/sluice-search/sluice/node/engine/index"
)

// exhaustiveWindow is the window size while no score can be pruned yet;
// it only bounds how soon a new minimum competitive score is noticed.
const exhaustiveWindow = 4096

// msClause is a disjunction clause with its current doc cached, so the
// per-doc loops compare ints instead of calling through interfaces.
type msClause struct {
	s     scorer
	doc   int
	bound float32 // max score in the current window
}

// maxScoreLeaf collects the top-k of a pure disjunction with block-max
// MaxScore (Lucene 9.9's MaxScoreBulkScorer, doc-at-a-time within windows).
//
// The leaf is cut into windows that end at the nearest block boundary of
// the clauses' impacts. Per window each clause has a score bound; clauses
// are sorted by bound and the longest prefix whose summed bounds cannot
// reach the collector's minimum competitive score is "non-essential": no
// doc matching only those can enter the top-k, so only the essential
// clauses' docs are visited, and the non-essential clauses are advanced to
// a candidate only while the score so far plus their remaining bounds can
// still compete. When every clause is non-essential the window is skipped.
//
// filter, if not nil, is what every hit must also match (the filter
// clauses of bool{must: match, filter: ...}); candidates leap-frog with
// its approximation and are confirmed by its two-phase check.
func maxScoreLeaf(subs []scorer, filter scorer, live *index.FixedBitSet, c *topScoreCollector) {
	n := len(subs)
	cl := make([]msClause, n)
	for i, s := range subs {
		cl[i] = msClause{s: s, doc: s.NextDoc()}
	}
	prefix := make([]float64, n+1) // prefix[i] = sum of cl[:i] bounds
	doc := 0
	for {
		minComp := c.minCompetitive
		windowMax := noMoreDocs
		active := 0
		for i := range cl {
			if cl[i].doc == noMoreDocs {
				continue
			}
			active++
			if minComp > 0 {
				windowMax = min(windowMax, cl[i].s.advanceShallow(max(doc, cl[i].doc)))
			}
		}
		if active == 0 {
			return
		}
		p := 0
		if minComp == 0 {
			windowMax = min(doc+exhaustiveWindow-1, noMoreDocs-1)
		} else {
			for i := range cl {
				if cl[i].doc > windowMax {
					cl[i].bound = 0
				} else {
					cl[i].bound = cl[i].s.maxScore(windowMax)
				}
			}
			// Insertion sort by bound: few clauses, mostly sorted already.
			for i := 1; i < n; i++ {
				for j := i; j > 0 && cl[j].bound < cl[j-1].bound; j-- {
					cl[j], cl[j-1] = cl[j-1], cl[j]
				}
			}
			for p < n {
				next := prefix[p] + float64(cl[p].bound)
				if boundScore(next, n) >= minComp {
					break
				}
				prefix[p+1] = next
				p++
			}
			if p == n {
				// Nothing in this window can compete.
				if windowMax == noMoreDocs {
					return
				}
				doc = windowMax + 1
				continue
			}
		}
		essential := cl[p:]
		for i := range essential {
			if e := &essential[i]; e.doc < doc {
				e.doc = e.s.Advance(doc)
			}
		}
		doc = scoreWindow(essential, cl[:p], prefix, windowMax, filter, live, c, minComp)
		if doc == noMoreDocs {
			return
		}
	}
}

// scoreWindow visits the essential clauses' docs up to windowMax and
// returns where the next window starts: after windowMax, or right after a
// doc that raised the minimum competitive score (to re-partition).
func scoreWindow(essential, nonEssential []msClause, prefix []float64, windowMax int, filter scorer, live *index.FixedBitSet, c *topScoreCollector, minComp float32) int {
	var ftp twoPhase
	if filter != nil {
		ftp = filter.twoPhase()
	}
	for {
		if c.stop() {
			return noMoreDocs
		}
		d := noMoreDocs
		for i := range essential {
			d = min(d, essential[i].doc)
		}
		if filter != nil && d != noMoreDocs && d <= windowMax {
			f := filter.DocID()
			if f < d {
				f = filter.Advance(d)
			}
			if f > d {
				// Leap-frog the essential clauses to the filter.
				for i := range essential {
					if e := &essential[i]; e.doc < f {
						e.doc = e.s.Advance(f)
					}
				}
				continue
			}
			if ftp != nil && !ftp.matches() {
				for i := range essential {
					if e := &essential[i]; e.doc == d {
						e.doc = e.s.NextDoc()
					}
				}
				continue
			}
		}
		if d > windowMax || d == noMoreDocs {
			if windowMax == noMoreDocs {
				return noMoreDocs
			}
			return windowMax + 1
		}
		if live == nil || live.Get(d) {
			var score float64
			for i := range essential {
				if essential[i].doc == d {
					score += float64(essential[i].s.score())
				}
			}
			competitive := true
			for i := len(nonEssential) - 1; i >= 0; i-- {
				if boundScore(score+prefix[i+1], len(essential)+i+1) < minComp {
					competitive = false
					break
				}
				ne := &nonEssential[i]
				if ne.doc < d {
					ne.doc = ne.s.Advance(d)
				}
				if ne.doc == d {
					score += float64(ne.s.score())
				}
			}
			if competitive {
				c.collect(d, toScore(score))
			}
		}
		for i := range essential {
			if e := &essential[i]; e.doc == d {
				e.doc = e.s.NextDoc()
			}
		}
		if c.minCompetitive != minComp {
			return d + 1
		}
	}
}
