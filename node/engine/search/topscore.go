package search

import (
	"context"
	"math"
	"sync"

	"github.com/sluice-search/sluice/node/engine/index"
)

// scoreDoc is a heap entry of the top-k by score.
type scoreDoc struct {
	score float32
	doc   int // shard-local
}

// worse orders the heap: lower score, then higher doc id, is worse — so
// ties keep the smallest doc ids, as Lucene.
func worse(a, b scoreDoc) bool {
	return a.score < b.score || a.score == b.score && a.doc > b.doc
}

// topScoreCollector keeps the k best (score, doc) in a min-heap whose root
// is the worst kept hit. Once the hit count passes the threshold and the
// heap is full, minCompetitive tells scorers which scores can still enter,
// and they may skip docs (so the count becomes a lower bound).
type topScoreCollector struct {
	heap           []scoreDoc
	k              int
	totalHits      int64
	threshold      int64
	minCompetitive float32 // 0 until pruning starts
	docBase        int
	window         *windowScratch // MaxScore's, allocated at first use
	interrupt
}

// scratch returns the collector's MaxScore window scratch, kept with the
// pooled collector so searches reuse it.
func (c *topScoreCollector) scratch() *windowScratch {
	if c.window == nil || c.window.dirty {
		c.window = new(windowScratch)
	}
	return c.window
}

func (c *topScoreCollector) collect(doc int, score float32) {
	c.totalHits++
	h := scoreDoc{score: score, doc: c.docBase + doc}
	if len(c.heap) < c.k {
		c.heap = append(c.heap, h)
		c.up(len(c.heap) - 1)
	} else if worse(c.heap[0], h) {
		c.heap[0] = h
		c.down(0)
	} else if c.minCompetitive > 0 {
		return
	}
	if len(c.heap) == c.k && c.totalHits > c.threshold {
		// Docs arrive in doc order, so a later doc tying the worst kept
		// score loses the tie: only strictly greater scores compete.
		c.minCompetitive = nextUp(c.heap[0].score)
	}
}

func (c *topScoreCollector) up(i int) { siftUp(c.heap, i, worse) }

func (c *topScoreCollector) down(i int) { siftDown(c.heap, i, worse) }

// siftUp and siftDown keep a binary heap whose root is the element for
// which first(root, x) holds against every other x.
func siftUp[T any](h []T, i int, first func(a, b T) bool) {
	for i > 0 {
		p := (i - 1) / 2
		if !first(h[i], h[p]) {
			return
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func siftDown[T any](h []T, i int, first func(a, b T) bool) {
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && first(h[r], h[l]) {
			m = r
		}
		if !first(h[m], h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

var topScoreCollectorPool = sync.Pool{New: func() any { return new(topScoreCollector) }}

// results pops the heap into best-first order.
func (c *topScoreCollector) results() []Hit {
	hits := make([]Hit, len(c.heap))
	for i := len(c.heap) - 1; i >= 0; i-- {
		hits[i] = Hit{Doc: c.heap[0].doc, Score: c.heap[0].score}
		c.heap[0] = c.heap[len(c.heap)-1]
		c.heap = c.heap[:len(c.heap)-1]
		c.down(0)
	}
	return hits
}

func (s *Searcher) topScores(ctx context.Context, w weight, lc *leafContext, k int, threshold int) (*TopDocs, error) {
	c := topScoreCollectorPool.Get().(*topScoreCollector)
	*c = topScoreCollector{k: k, threshold: int64(threshold), heap: c.heap[:0], window: c.window, interrupt: interrupt{ctx: ctx}}
	defer func() {
		c.interrupt = interrupt{}
		topScoreCollectorPool.Put(c)
	}()
	for i := range s.leaves {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		*lc = leafContext{ord: i, leaf: &s.leaves[i]}
		sc, err := w.scorer(lc)
		if err != nil {
			return nil, err
		}
		if sc == nil {
			continue
		}
		c.docBase = lc.leaf.DocBase
		if d, filter := maxScoreShape(sc); d != nil {
			maxScoreLeaf(d.subs, filter, lc.leaf.Live, c)
		} else if ts, ok := sc.(*termScorer); ok {
			termTopScoresLeaf(ts, lc.leaf.Live, c)
		} else {
			topScoresLeaf(sc, lc.leaf.Live, c)
		}
		if c.err != nil {
			return nil, c.err
		}
	}
	td := &TopDocs{TotalHits: c.totalHits, Hits: c.results()}
	if c.minCompetitive > 0 {
		td.Relation = RelationGreaterThanOrEqual
	}
	return td, nil
}

// topScoresLeaf collects a leaf's matches, skipping whole blocks whose
// score upper bound cannot beat the collector's minimum competitive score
// (Lucene's ImpactsDISI / block-max skipping; for a conjunction the bound
// is the sum of its clauses' block maxima).
func topScoresLeaf(sc scorer, live *index.FixedBitSet, c *topScoreCollector) {
	tp := sc.twoPhase()
	upTo := -1
	var blockMax float32 = float32(math.Inf(1))
	doc := sc.NextDoc()
	for doc != noMoreDocs {
		if c.stop() {
			return
		}
		if c.minCompetitive > 0 {
			if doc > upTo {
				upTo = sc.advanceShallow(doc)
				blockMax = sc.maxScore(upTo)
			}
			if blockMax < c.minCompetitive {
				var target int
				if target, upTo, blockMax = competitiveTarget(sc, upTo, c.minCompetitive); target == noMoreDocs {
					return
				}
				doc = sc.Advance(target)
				continue
			}
		}
		if (live == nil || live.Get(doc)) && (tp == nil || tp.matches()) {
			c.collect(doc, sc.score())
		}
		doc = sc.NextDoc()
	}
}

// competitiveTarget skips, by skip data alone, the blocks after the one
// ending at upTo whose score bound cannot reach minComp (Lucene's
// ImpactsDISI.advanceTarget): it returns the first doc id worth an Advance,
// the end of its block and the block's bound, or noMoreDocs. Advancing
// block by block instead would decode every block just to learn that it
// cannot compete.
func competitiveTarget(sc scorer, upTo int, minComp float32) (target, end int, bound float32) {
	for upTo != noMoreDocs {
		target = upTo + 1
		upTo = sc.advanceShallow(target)
		if bound = sc.maxScore(upTo); bound >= minComp {
			return target, upTo, bound
		}
	}
	return noMoreDocs, noMoreDocs, 0
}

// termTopScoresLeaf is topScoresLeaf specialised for one term, the most
// common query: postings, norms and BM25 are read directly, and docs that
// cannot enter the heap are only counted.
func termTopScoresLeaf(s *termScorer, live *index.FixedBitSet, c *topScoreCollector) {
	pe, norms := s.pe, s.norms
	w, cache := s.sim.weight, s.sim.cache
	upTo := -1
	var blockMax float32 = float32(math.Inf(1))
	doc := pe.NextDoc()
	for doc != noMoreDocs {
		if c.stop() {
			return
		}
		if c.minCompetitive > 0 {
			if doc > upTo {
				upTo = s.advanceShallow(doc)
				blockMax = s.maxScore(upTo)
			}
			if blockMax < c.minCompetitive {
				var target int
				if target, upTo, blockMax = competitiveTarget(s, upTo, c.minCompetitive); target == noMoreDocs {
					return
				}
				doc = pe.Advance(target)
				continue
			}
		}
		if live == nil || live.Get(doc) {
			norm := noNorm
			if norms != nil {
				norm = norms.Norm(doc)
			}
			score := bm25Score(w, float32(float32(pe.Freq())*cache[norm]))
			if score < c.minCompetitive {
				c.totalHits++
			} else {
				c.collect(doc, score)
			}
		}
		doc = pe.NextDoc()
	}
}

// maxScoreShape recognises scorers MaxScore can run: a pure disjunction,
// or a scoring disjunction AND non-scoring filters (bool{must: match,
// filter: ...}); it returns the disjunction and the filters as one
// scorer (nil if none).
func maxScoreShape(sc scorer) (*disjunctionScorer, scorer) {
	if d, ok := sc.(*disjunctionScorer); ok && d.msm <= 1 && d.scoring {
		return d, nil
	}
	cs, ok := sc.(*conjunctionScorer)
	if !ok || len(cs.scoring) != 1 {
		return nil, nil
	}
	d, ok := cs.scoring[0].(*disjunctionScorer)
	if !ok || d.msm > 1 || !d.scoring {
		return nil, nil
	}
	var filters []scorer
	for _, s := range cs.all {
		if s != scorer(d) {
			filters = append(filters, s)
		}
	}
	if len(filters) == 1 {
		return d, filters[0]
	}
	return d, newConjunctionScorer(filters, nil)
}
