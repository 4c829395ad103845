package search

import (
	"context"

	"github.com/sluice-search/sluice/node/engine/index"
)

// MatchingDocs returns, per leaf, the live docs matching q (Lucene's
// QueryBitSetProducer, with live docs applied): q's weight is built without
// scores and each leaf's scorer is iterated in doc order, so no hit is
// collected, sorted or paged.
func (s *Searcher) MatchingDocs(ctx context.Context, q Query) ([]*index.FixedBitSet, error) {
	qc := newQueryContext(s)
	defer qc.release()
	w, err := q.createWeight(qc, noScores, 1)
	if err != nil {
		return nil, err
	}
	lc := &qc.leaf
	it := &interrupt{ctx: ctx}
	out := make([]*index.FixedBitSet, len(s.leaves))
	for i := range s.leaves {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		leaf := &s.leaves[i]
		bits := index.NewFixedBitSet(leaf.Reader.MaxDoc())
		out[i] = bits
		*lc = leafContext{ord: i, leaf: leaf}
		sc, err := w.scorer(lc)
		if err != nil {
			return nil, err
		}
		if sc == nil {
			continue
		}
		tp := sc.twoPhase()
		for doc := sc.NextDoc(); doc != noMoreDocs; doc = sc.NextDoc() {
			if it.stop() {
				return nil, it.err
			}
			if matchesNow(doc, leaf.Live, tp) {
				bits.Set(doc)
			}
		}
	}
	return out, nil
}
