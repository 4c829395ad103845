package engine

import (
	"context"
	"fmt"

	"github.com/cespare/xxhash/v2"

	"github.com/sluice-search/sluice/node/engine/index"
	"github.com/sluice-search/sluice/node/engine/search"
)

// Slice is part ID of Max disjoint parts of an index's documents, cut by a
// hash of _id (Elasticsearch's sliced scroll): a doc belongs to the slice
// whose ID is SliceHash(_id) % Max. The zero Slice, and any with Max <= 1,
// is every doc. Scans and reindex slices cut shards the same way.
type Slice struct{ ID, Max int }

// SliceHash is the hash slices cut _ids by: xxHash64, deterministic across
// processes and independent of the routing hash (all docs of a shard share
// a routing residue, so the routing hash would cut them unevenly).
func SliceHash(id []byte) uint64 { return xxhash.Sum64(id) }

// Contains reports whether a doc with this _id belongs to the slice.
func (s Slice) Contains(id []byte) bool {
	return s.Max <= 1 || SliceHash(id)%uint64(s.Max) == uint64(s.ID)
}

// Validate checks that ID is in [0, Max) (0 when Max <= 1).
func (s Slice) Validate() error {
	if s.ID < 0 || s.ID >= max(s.Max, 1) {
		return fmt.Errorf("%w: slice id %d must be in [0, max %d)", search.ErrInvalidQuery, s.ID, s.Max)
	}
	return nil
}

// Selection is a set of docs of one Reader: per leaf, in the reader's
// order, the selected docs, and how many there are.
type Selection struct {
	Bits  []*index.FixedBitSet
	Total int64
}

// Select returns the docs of r that are live, in slice and match q (nil:
// all) — the one "documents matching a query" call behind scans and
// reindex slices. It is a pure function of the reader, so a resumed scan
// or slice selects exactly what the first run did; deletes made after the
// reader was opened are not seen.
func (r *Reader) Select(ctx context.Context, q search.Query, slice Slice) (*Selection, error) {
	if err := slice.Validate(); err != nil {
		return nil, err
	}
	leaves := r.Leaves()
	sel := &Selection{Bits: make([]*index.FixedBitSet, len(leaves))}
	if q != nil {
		m, err := r.Searcher().MatchingDocs(ctx, q)
		if err != nil {
			return nil, err
		}
		copy(sel.Bits, m)
	} else {
		for i, l := range leaves {
			if l.Live == nil {
				sel.Bits[i] = index.NewFixedBitSetAllSet(l.Reader.MaxDoc())
			} else {
				sel.Bits[i] = l.Live.Clone()
			}
		}
	}
	if slice.Max > 1 {
		for i, l := range leaves {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			and(sel.Bits[i], search.IDBits(l.Reader, slice.Contains))
		}
	}
	for _, b := range sel.Bits {
		sel.Total += int64(b.Cardinality())
	}
	return sel, nil
}

// and clears in a the bits not set in b (same length).
func and(a, b *index.FixedBitSet) {
	aw, bw := a.Words(), b.Words()
	for i := range aw {
		aw[i] &= bw[i]
	}
}
