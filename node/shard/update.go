package shard

import (
	"context"
	"errors"
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
// The write is conditional on the version the read saw (engine.IndexIf),
// so an index, delete or in-place update of the id from another request
// landing between the read and the write is never overwritten: the update
// re-reads and re-merges up to op.RetryOnConflict times, then fails with
// the *engine.VersionConflictError (Elasticsearch's retry_on_conflict,
// default 0). An upsert is a create: one that finds the id created since
// the read is retried the same way, and fails with ErrConflict. With op.If
// the document read must have that version, and nothing is retried.
// Partial updates of one id are also serialised (a lock per id stripe), so
// two of them on one primary do not spin on each other.
func (b *Batch) Update(ctx context.Context, op Op) OpResult {
	if len(op.ID) == 0 {
		return OpResult{Err: fmt.Errorf("%w: operation has no id", ErrInvalid)}
	}
	if len(op.Source) == 0 {
		return OpResult{Err: fmt.Errorf("%w: update of %q has no partial document", ErrInvalid, op.ID)}
	}
	s := b.s
	mu := &s.updateLocks[maphash.Bytes(s.bulkSeed, op.ID)%updateStripes]
	mu.Lock()
	defer mu.Unlock()
	for retries := 0; ; retries++ {
		r := b.updateOnce(ctx, op)
		raced := errors.Is(r.Err, engine.ErrVersionConflict) || errors.Is(r.Err, ErrConflict)
		if op.If != nil || retries >= op.RetryOnConflict || !raced {
			return r
		}
	}
}

// updateOnce is one read, merge and conditional write of Update.
func (b *Batch) updateOnce(ctx context.Context, op Op) OpResult {
	fail := func(err error) OpResult { return OpResult{Err: err} }
	doc, found, err := b.s.eng.GetDocument(ctx, op.ID, engine.GetOptions{Realtime: true, CurrentValues: true})
	if err != nil {
		return fail(err)
	}
	if op.If != nil && (!found || doc.Version != *op.If) {
		return fail(&engine.VersionConflictError{ID: string(op.ID), Want: *op.If, Found: found, Current: doc.Version})
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
		return OpResult{Noop: true, Result: engine.Result{SeqNo: doc.Version.SeqNo, Term: doc.Version.PrimaryTerm, Found: true}}
	}
	res, err := b.IndexIf(ctx, op.ID, doc.Routing, merged, &doc.Version)
	return OpResult{Result: res, Err: err}
}
