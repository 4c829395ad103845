package shard

import (
	"context"
	"fmt"
	"hash/maphash"

	"github.com/sluice-search/sluice/node/engine"
	"github.com/sluice-search/sluice/node/engine/source"
)

// updateStripes is how many locks serialise partial updates by id.
const updateStripes = 64

// Update applies a partial update (Elasticsearch's update API with a
// partial doc, no scripts), durable at Sync: it reads the live document
// with op.ID real-time, with the current values of fields in-place
// updates changed (never the stale ones of _source), merges op.Source
// into it (source.Merge: objects key by key, anything else replaced) and
// re-indexes the result under the document's routing. A merge that
// changes nothing writes nothing (Noop, Elasticsearch's detect_noop). No
// live document: op.Upsert — or op.Source with DocAsUpsert — is created,
// else engine.ErrDocumentMissing.
//
// Partial updates of one id are serialised (a lock per id stripe), so two
// of them never lose one another's change. An index or delete of the id
// from another request may still land between the read and the write;
// the later write wins, as between any two writes of one id (there is no
// per-document sequence number to make the write conditional on; see
// docs/updates.md). A create that finds the id taken fails with
// ErrConflict.
func (b *Batch) Update(ctx context.Context, op Op) OpResult {
	fail := func(err error) OpResult { return OpResult{Err: err} }
	if len(op.ID) == 0 {
		return fail(fmt.Errorf("%w: operation has no id", ErrInvalid))
	}
	if len(op.Source) == 0 {
		return fail(fmt.Errorf("%w: update of %q has no partial document", ErrInvalid, op.ID))
	}
	s := b.s
	mu := &s.updateLocks[maphash.Bytes(s.bulkSeed, op.ID)%updateStripes]
	mu.Lock()
	defer mu.Unlock()
	doc, found, err := s.eng.GetDocument(ctx, op.ID, engine.GetOptions{Realtime: true, CurrentValues: true})
	if err != nil {
		return fail(err)
	}
	if !found {
		upsert := op.Upsert
		if op.DocAsUpsert {
			upsert = op.Source
		}
		if len(upsert) == 0 {
			return fail(fmt.Errorf("%w: [%s] (no upsert given)", engine.ErrDocumentMissing, op.ID))
		}
		res, err := b.Index(ctx, op.ID, op.Routing, upsert, true)
		return OpResult{Result: res, Err: err}
	}
	merged, changed, err := source.Merge(doc.Source, op.Source)
	if err != nil {
		return fail(fmt.Errorf("%w: update of %q: %w", ErrInvalid, op.ID, err))
	}
	if !changed {
		return OpResult{Noop: true, Result: engine.Result{Found: true}}
	}
	res, err := b.Index(ctx, op.ID, doc.Routing, merged, false)
	return OpResult{Result: res, Err: err}
}
