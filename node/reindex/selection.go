package reindex

import (
	"context"

	"github.com/cespare/xxhash/v2"

	"github.com/sluice-search/sluice/node/engine"
	"github.com/sluice-search/sluice/node/engine/index"
	"github.com/sluice-search/sluice/node/engine/search"
)

// selection marks, per leaf of a pinned reader, the docs a slice copies:
// live, in its _id-hash sub-slice, matching its query, and among the first
// max_docs of those in index order. It is a pure function of the reader and
// the request, so a resumed slice selects exactly what the first run did.
type selection struct {
	bits  []*index.FixedBitSet
	total int64
}

// inSubSlice reports whether an _id belongs to sub-slice id of max. The
// hash is independent of the routing hash: all docs of one shard share a
// routing residue, so the routing hash would split them unevenly.
func inSubSlice(docID []byte, id, max int) bool {
	return xxhash.Sum64(docID)%uint64(max) == uint64(id)
}

func newSelection(ctx context.Context, r *engine.Reader, subID, subMax int, q search.Query, maxDocs int64) (*selection, error) {
	leaves := r.Leaves()
	sel := &selection{bits: make([]*index.FixedBitSet, len(leaves))}
	for i, l := range leaves {
		if l.Live == nil {
			sel.bits[i] = index.NewFixedBitSetAllSet(l.Reader.MaxDoc())
		} else {
			sel.bits[i] = l.Live.Clone()
		}
	}
	if subMax > 1 {
		for i, l := range leaves {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			and(sel.bits[i], search.IDBits(l.Reader, func(docID []byte) bool { return inSubSlice(docID, subID, subMax) }))
		}
	}
	if q != nil {
		m, err := matches(ctx, r, q)
		if err != nil {
			return nil, err
		}
		for i := range sel.bits {
			and(sel.bits[i], m[i])
		}
	}
	for _, b := range sel.bits {
		sel.total += int64(b.Cardinality())
	}
	if maxDocs > 0 && sel.total > maxDocs {
		sel.truncate(maxDocs)
	}
	return sel, nil
}

// and clears in a the bits not set in b.
func and(a, b *index.FixedBitSet) {
	aw, bw := a.Words(), b.Words()
	for i := range aw {
		aw[i] &= bw[i]
	}
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

// matches runs q over the reader without scoring, in doc order, one page at
// a time, and marks the hits per leaf.
func matches(ctx context.Context, r *engine.Reader, q search.Query) ([]*index.FixedBitSet, error) {
	leaves := r.Leaves()
	out := make([]*index.FixedBitSet, len(leaves))
	for i, l := range leaves {
		out[i] = index.NewFixedBitSet(l.Reader.MaxDoc())
	}
	s := r.Searcher()
	const page = 8192
	req := search.Request{Size: page, Sort: []search.SortField{{Type: search.SortByDoc}}, SearchAfterDoc: -1, TotalHitsThreshold: 1}
	leaf := 0
	for {
		td, err := s.Search(ctx, q, req)
		if err != nil {
			return nil, err
		}
		for _, h := range td.Hits {
			// Hits come in doc order, so the leaf only moves forward.
			for leaf+1 < len(leaves) && leaves[leaf+1].DocBase <= h.Doc {
				leaf++
			}
			out[leaf].Set(h.Doc - leaves[leaf].DocBase)
		}
		if len(td.Hits) < page {
			return out, nil
		}
		req.SearchAfter = []search.SortValue{{Int: int64(td.Hits[len(td.Hits)-1].Doc)}}
	}
}
