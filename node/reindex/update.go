package reindex

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/sluice-search/sluice/node/engine"
	"github.com/sluice-search/sluice/node/engine/index"
	"github.com/sluice-search/sluice/node/shard"
)

// runUpdates is an update-by-query slice: it sets fields in place
// (engine.UpdateDocValuesIf) on each selected document of the source shard
// itself, in index order, paced by the throttle — no document is read
// beyond its _id and nothing leaves the node. Each update is conditional
// on the version the slice's reader saw (Elasticsearch's update-by-query
// does the same with the scroll's seq_no), so a document written or
// deleted since is a version conflict: it ends the slice under
// conflicts=abort, else is counted. A checkpoint syncs the translog (the
// updates are durable there like any write) and reports the position; a
// slice that starts over re-applies the same values, which is idempotent.
// A run that stops between checkpoints syncs what it did too, and a
// resume in the same reader starts after it (keptReader.applied), not at
// the checkpoint its caller last got: what the run updated since is not
// at the version the reader shows any more.
func (cp *copyRun) runUpdates(ctx context.Context, sh *shard.Shard, fields []byte, next int) error {
	abort := !cp.req.GetProceedOnConflicts()
	b := sh.NewBatch()
	ctx = engine.WithAffinity(ctx)
	checkpoint := func(next int, done bool) error {
		if err := b.Sync(ctx); err != nil {
			return fmt.Errorf("shard %v: sync: %w", sh.ID(), err)
		}
		return cp.stream.Send(cp.progress(cursor{fingerprint: cp.fp, next: next}.encode(), done))
	}
	leaves, done, batched := cp.rd.Leaves(), next, 0
	err := cp.eachSelected(ctx, next, func(li, d int, sd *index.StoredDoc) error {
		// A batch goes to the replicas at its sync: bounded as an ingest
		// message is, not by the checkpoint interval.
		if batched >= cp.r.opts.BatchBytes {
			if err := b.Sync(ctx); err != nil {
				return fmt.Errorf("shard %v: sync: %w", sh.ID(), err)
			}
			batched = 0
		}
		if cp.copied%chunkDocs == 0 {
			if err := cp.r.writeBlocked(sh.ID().IndexUUID); err != nil {
				return err
			}
		}
		v := cp.rd.DocVersion(li, d)
		// A copy of the id: sd's buffer is the next document's, and the
		// batch keeps the id until its sync, for the replicas.
		_, err := b.UpdateDocValues(ctx, bytes.Clone(sd.ID), fields, &v)
		switch {
		case err == nil:
			cp.c.updated.Add(1)
			batched += len(sd.ID) + len(fields)
		case errors.Is(err, engine.ErrVersionConflict):
			cp.c.conflicts.Add(1)
			if abort {
				// The updates before this document stand (as in
				// Elasticsearch, nothing is rolled back): report them
				// and the conflict before the slice ends.
				if cerr := checkpoint(leaves[li].DocBase+d, false); cerr != nil {
					return cerr
				}
				return fmt.Errorf("shard %v: [%s]: %v: %w", sh.ID(), sd.ID, err, ErrConflictAbort)
			}
		default:
			return fmt.Errorf("shard %v: update [%s]: %w", sh.ID(), sd.ID, err)
		}
		done = leaves[li].DocBase + d + 1
		return nil
	}, func(next int) error { return checkpoint(next, false) })
	if err != nil {
		// The updates applied since the last checkpoint are the
		// primary's: they go to its translog and replicas all the same,
		// else the copies would miss their sequence numbers. Not the
		// caller's context, which may be why the slice stopped.
		if serr := b.Sync(context.WithoutCancel(ctx)); serr != nil {
			return errors.Join(err, fmt.Errorf("shard %v: sync: %w", sh.ID(), serr))
		}
		// Durable: a resume in this reader goes on after them, where
		// their versions are no longer the reader's (no conflicts with
		// the slice's own writes).
		cp.applied = done
		return err
	}
	return checkpoint(cp.rd.MaxDoc(), true)
}
