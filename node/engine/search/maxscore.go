package search

import (
	"math"
	"math/bits"

	"github.com/sluice-search/sluice/node/engine/index"
)

// exhaustiveWindow is the window size while no score can be pruned yet;
// it only bounds how soon a new minimum competitive score is noticed.
const exhaustiveWindow = innerWindow

// innerWindow is how many doc ids scoreBitsetWindow gathers at once
// (Lucene's MaxScoreBulkScorer.INNER_WINDOW_SIZE).
const innerWindow = 1 << 12

// windowScratch is scoreBitsetWindow's per-window state: which docs of the
// inner window matched an essential clause, and their summed scores. It
// is kept zeroed between windows (each doc's slot is reset as it is read)
// and lives in the pooled collector, so searches don't allocate it.
type windowScratch struct {
	matches [innerWindow / 64]uint64
	scores  [innerWindow]float64
	// dirty is set while a window is being scored: if a search panics
	// mid-window (and a server recovers), the next user clears it.
	dirty bool
}

// msClause is a disjunction clause with its current doc cached, so the
// per-doc loops compare ints instead of calling through interfaces.
type msClause struct {
	s scorer
	// ts is s when it is a term scorer (the usual clause of a match
	// query): the window loops then read its postings and norms and score
	// BM25 directly instead of through two layers of interface calls per
	// doc.
	ts    *termScorer
	doc   int
	bound float32 // max score in the current window
}

func (m *msClause) advance(target int) int {
	if m.ts != nil {
		return m.ts.pe.Advance(target)
	}
	return m.s.Advance(target)
}

func (m *msClause) score() float32 {
	if ts := m.ts; ts != nil {
		norm := noNorm
		if ts.norms != nil {
			norm = ts.norms.Norm(m.doc)
		}
		return ts.sim.score(float32(ts.pe.Freq()), norm)
	}
	return m.s.score()
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
	// Stack room for the clauses of typical queries.
	var clBuf [8]msClause
	var prefixBuf [9]float64
	cl, prefix := clBuf[:0], prefixBuf[:0]
	if n > len(clBuf) {
		cl, prefix = make([]msClause, 0, n), make([]float64, 0, n+1)
	}
	cl, prefix = cl[:n], prefix[:n+1] // prefix[i] = sum of cl[:i] bounds
	for i, s := range subs {
		ts, _ := s.(*termScorer)
		cl[i] = msClause{s: s, ts: ts, doc: s.NextDoc()}
	}
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
				e.doc = e.advance(doc)
			}
		}
		switch {
		case len(essential) == 1 && essential[0].ts != nil:
			doc = scoreTermWindow(&essential[0], cl[:p], prefix, windowMax, filter, live, c, minComp)
		case len(essential) == 1 || filter != nil:
			doc = scoreWindow(essential, cl[:p], prefix, windowMax, filter, live, c, minComp)
		default:
			doc = scoreBitsetWindow(essential, cl[:p], prefix, windowMax, live, c, minComp)
		}
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
					score += float64(essential[i].score())
				}
			}
			collectNonEssential(nonEssential, prefix, len(essential), d, score, c, minComp)
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

// collectNonEssential adds the non-essential clauses' scores to doc's
// essential score, most valuable first, while the sum plus the remaining
// clauses' bounds can still reach minComp, and collects doc if it can.
func collectNonEssential(nonEssential []msClause, prefix []float64, nEssential, doc int, score float64, c *topScoreCollector, minComp float32) {
	for i := len(nonEssential) - 1; i >= 0; i-- {
		if boundScore(score+prefix[i+1], nEssential+i+1) < minComp {
			return
		}
		ne := &nonEssential[i]
		if ne.doc < doc {
			ne.doc = ne.advance(doc)
		}
		if ne.doc == doc {
			score += float64(ne.score())
		}
	}
	c.collect(doc, toScore(score))
}

// scoreTermWindow is scoreWindow for the most common window of a match
// query: a single essential clause that is a term (Lucene's
// scoreInnerWindowSingleEssentialClause). Its postings are iterated
// directly and BM25 is computed inline; a doc whose score plus every
// non-essential bound cannot reach minComp (most docs, once the top-k has
// filled) costs a multiplication and a comparison. With a filter, the
// term leap-frogs with the filter's approximation, and the filter's
// two-phase check (a doc-values range, say) runs only for docs that pass
// the score check, since it costs more.
func scoreTermWindow(e *msClause, nonEssential []msClause, prefix []float64, windowMax int, filter scorer, live *index.FixedBitSet, c *topScoreCollector, minComp float32) int {
	var ftp twoPhase
	if filter != nil {
		ftp = filter.twoPhase()
	}
	ts := e.ts
	pe, norms := ts.pe, ts.norms
	w, cache := ts.sim.weight, ts.sim.cache
	nNE := len(nonEssential)
	allBounds := prefix[nNE]
	var xMin float32 // docs with x = freq*cache[norm] below cannot compete
	if nNE > 0 {
		xMin = termXThreshold(w, allBounds, nNE+1, minComp)
	}
	doc := e.doc
	visited := 0 // docs since cancellation was last polled
	for doc <= windowMax && doc != noMoreDocs {
		if visited++; visited == 4096 {
			if c.stopAfter(visited) {
				e.doc = doc
				return noMoreDocs
			}
			visited = 0
		}
		if filter != nil {
			f := filter.DocID()
			if f < doc {
				f = filter.Advance(doc)
			}
			if f > doc {
				doc = pe.Advance(f)
				continue
			}
		}
		if live == nil || live.Get(doc) {
			norm := noNorm
			if norms != nil {
				norm = norms.Norm(doc)
			}
			x := float32(float32(pe.Freq()) * cache[norm])
			if x < xMin {
				doc = pe.NextDoc()
				continue
			}
			score := float64(bm25Score(w, x))
			if (nNE == 0 || boundScore(score+allBounds, nNE+1) >= minComp) && (ftp == nil || ftp.matches()) {
				collectNonEssential(nonEssential, prefix, 1, doc, score, c, minComp)
				if c.minCompetitive != minComp {
					e.doc = pe.NextDoc()
					if c.stopAfter(visited) {
						return noMoreDocs
					}
					return doc + 1
				}
			}
		}
		doc = pe.NextDoc()
	}
	e.doc = doc
	if windowMax == noMoreDocs || c.stopAfter(visited) {
		return noMoreDocs
	}
	return windowMax + 1
}

// scoreBitsetWindow is scoreWindow for several essential clauses and no
// filter, Lucene's scoreInnerWindowMultipleEssentialClauses: instead of
// merging the clauses doc by doc, it runs each clause over an inner window
// of innerWindow doc ids, marking its docs in a bitset and adding its
// scores into an array, then visits the marked docs in order. Each clause
// is iterated in a tight loop of its own, with no per-doc search for the
// smallest current doc. Scores are added clause by clause in the same
// order as scoreWindow adds them, so the sums are identical.
func scoreBitsetWindow(essential, nonEssential []msClause, prefix []float64, windowMax int, live *index.FixedBitSet, c *topScoreCollector, minComp float32) int {
	ws := c.scratch()
	for {
		lo := noMoreDocs
		for i := range essential {
			lo = min(lo, essential[i].doc)
		}
		if lo > windowMax || lo == noMoreDocs {
			if windowMax == noMoreDocs {
				return noMoreDocs
			}
			return windowMax + 1
		}
		hi := min(windowMax, lo+innerWindow-1)
		ws.dirty = true
		for i := range essential {
			essential[i].accumulate(lo, hi, live, ws)
		}
		visited := 0
		for w := 0; w <= (hi-lo)>>6; w++ {
			m := ws.matches[w]
			ws.matches[w] = 0
			visited += bits.OnesCount64(m)
			for m != 0 {
				idx := w<<6 | bits.TrailingZeros64(m)
				m &= m - 1
				score := ws.scores[idx]
				ws.scores[idx] = 0
				collectNonEssential(nonEssential, prefix, len(essential), lo+idx, score, c, minComp)
			}
		}
		ws.dirty = false
		if c.stopAfter(visited) {
			return noMoreDocs
		}
		if c.minCompetitive != minComp {
			// Re-partition with the higher minimum competitive score.
			return hi + 1
		}
	}
}

// accumulate marks the clause's docs in [lo, hi] (it is on the first
// one) in ws and adds their scores, leaving the clause on its first doc
// after hi.
func (m *msClause) accumulate(lo, hi int, live *index.FixedBitSet, ws *windowScratch) {
	doc := m.doc
	if ts := m.ts; ts != nil {
		pe, norms := ts.pe, ts.norms
		w, cache := ts.sim.weight, ts.sim.cache
		for ; doc <= hi; doc = pe.NextDoc() {
			if live != nil && !live.Get(doc) {
				continue
			}
			norm := noNorm
			if norms != nil {
				norm = norms.Norm(doc)
			}
			i := doc - lo
			ws.matches[i>>6] |= 1 << (i & 63)
			ws.scores[i] += float64(bm25Score(w, float32(float32(pe.Freq())*cache[norm])))
		}
	} else {
		for ; doc <= hi; doc = m.s.NextDoc() {
			if live != nil && !live.Get(doc) {
				continue
			}
			i := doc - lo
			ws.matches[i>>6] |= 1 << (i & 63)
			ws.scores[i] += float64(m.s.score())
		}
	}
	m.doc = doc
}

// termXThreshold returns an x such that no term doc whose x =
// freq*cache[norm] is below it can reach minComp, even with rest (the
// other clauses' summed bounds) added: boundScore(bm25Score(w, x') +
// rest, n) < minComp for every x' <= it. It lets scoreTermWindow drop
// most docs with one multiplication instead of a division. The estimate
// (solving w*x/(1+x) = minComp-rest) is only a starting point: the
// returned value is checked with the exact float32 computation, and since
// that is monotone in x every smaller x fails too. 0 skips nothing.
func termXThreshold(w float32, rest float64, n int, minComp float32) float32 {
	fails := func(x float32) bool { return boundScore(float64(bm25Score(w, x))+rest, n) < minComp }
	if !(w > 0) {
		return 0
	}
	if fails(float32(math.Inf(1))) {
		// Not even the term's maximum, w, is enough.
		return float32(math.Inf(1))
	}
	t := float64(minComp) - rest
	if t <= 0 {
		return 0
	}
	x := float32(t / (float64(w) - t) * (1 - 1e-6))
	for range 4 {
		if !(x > 0) || math.IsInf(float64(x), 0) {
			return 0
		}
		if fails(x) {
			return x
		}
		x *= 1 - 1e-4
	}
	return 0
}
