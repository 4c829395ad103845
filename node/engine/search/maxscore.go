package search

import (
	"github.com/sluice-search/sluice/node/engine/index"
)

// exhaustiveWindow is the window size while no score can be pruned yet;
// it only bounds how soon a new minimum competitive score is noticed.
const exhaustiveWindow = 4096

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
func maxScoreLeaf(subs []scorer, live *index.FixedBitSet, c *topScoreCollector) {
	n := len(subs)
	cl := make([]scorer, n)
	copy(cl, subs)
	bound := make([]float32, n)
	prefix := make([]float64, n+1) // prefix[i] = sum of bound[0:i]
	for _, s := range cl {
		s.NextDoc()
	}
	doc := 0
	for {
		minComp := c.minCompetitive
		windowMax := noMoreDocs
		live0 := 0
		for _, s := range cl {
			if s.DocID() == noMoreDocs {
				continue
			}
			live0++
			if minComp > 0 {
				windowMax = min(windowMax, s.advanceShallow(max(doc, s.DocID())))
			}
		}
		if live0 == 0 {
			return
		}
		if minComp == 0 {
			windowMax = min(doc+exhaustiveWindow-1, noMoreDocs-1)
		}
		p := 0
		if minComp > 0 {
			for i, s := range cl {
				if s.DocID() > windowMax {
					bound[i] = 0
				} else {
					bound[i] = s.maxScore(windowMax)
				}
			}
			// Insertion sort by bound: few clauses, mostly sorted already.
			for i := 1; i < n; i++ {
				for j := i; j > 0 && bound[j] < bound[j-1]; j-- {
					bound[j], bound[j-1] = bound[j-1], bound[j]
					cl[j], cl[j-1] = cl[j-1], cl[j]
				}
			}
			for p < n {
				next := prefix[p] + float64(bound[p])
				if toScore(next) >= minComp {
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
		for _, s := range essential {
			if s.DocID() < doc {
				s.Advance(doc)
			}
		}
		doc = scoreWindow(essential, cl[:p], prefix, windowMax, live, c, minComp)
		if doc == noMoreDocs {
			return
		}
	}
}

// scoreWindow visits the essential clauses' docs up to windowMax and
// returns where the next window starts: after windowMax, or right after a
// doc that raised the minimum competitive score (to re-partition).
func scoreWindow(essential, nonEssential []scorer, prefix []float64, windowMax int, live *index.FixedBitSet, c *topScoreCollector, minComp float32) int {
	for {
		d := noMoreDocs
		for _, s := range essential {
			d = min(d, s.DocID())
		}
		if d > windowMax || d == noMoreDocs {
			if windowMax == noMoreDocs {
				return noMoreDocs
			}
			return windowMax + 1
		}
		if live == nil || live.Get(d) {
			var score float64
			for _, s := range essential {
				if s.DocID() == d {
					score += float64(s.score())
				}
			}
			competitive := true
			for i := len(nonEssential) - 1; i >= 0; i-- {
				if toScore(score+prefix[i+1]) < minComp {
					competitive = false
					break
				}
				s := nonEssential[i]
				if s.DocID() < d {
					s.Advance(d)
				}
				if s.DocID() == d {
					score += float64(s.score())
				}
			}
			if competitive {
				c.collect(d, toScore(score))
			}
		}
		for _, s := range essential {
			if s.DocID() == d {
				s.NextDoc()
			}
		}
		if c.minCompetitive != minComp {
			return d + 1
		}
	}
}
