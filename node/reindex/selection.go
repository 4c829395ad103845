package reindex

import (
	"context"

	"github.com/sluice-search/sluice/node/engine"
	"github.com/sluice-search/sluice/node/engine/index"
	"github.com/sluice-search/sluice/node/engine/search"
)

// selection marks, per leaf of a pinned reader, the docs a slice copies:
// live, in its _id-hash sub-slice, matching its query (engine.Reader.Select,
// which cuts shards as scans do), and among the first max_docs of those in
// index order. It is a pure function of the reader and the request, so a
// resumed slice selects exactly what the first run did.
type selection struct {
	bits  []*index.FixedBitSet
	total int64
}

func newSelection(ctx context.Context, r *engine.Reader, subID, subMax int, q search.Query, maxDocs int64) (*selection, error) {
	s, err := r.Select(ctx, q, engine.Slice{ID: subID, Max: subMax})
	if err != nil {
		return nil, err
	}
	sel := &selection{bits: s.Bits, total: s.Total}
	if maxDocs > 0 && sel.total > maxDocs {
		sel.truncate(maxDocs)
	}
	return sel, nil
}

// truncate keeps the first n selected docs in index order.
func (s *selection) truncate(n int64) {
	var kept int64
	for _, b := range s.bits {
		for d := b.NextSetBit(0); d != index.NoMoreDocs; d = b.NextSetBit(d + 1) {
			if kept == n {
				b.Clear(d)
			} else {
				kept++
			}
		}
	}
	s.total = kept
}
