package reindex

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/sluice-search/sluice/cluster/routing"
	"github.com/sluice-search/sluice/cluster/throttle"
	"github.com/sluice-search/sluice/node/engine"
	"github.com/sluice-search/sluice/node/engine/index"
	"github.com/sluice-search/sluice/node/engine/search"
	"github.com/sluice-search/sluice/node/shard"
	nodev1 "github.com/sluice-search/sluice/proto/sluice/node/v1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
	"github.com/sluice-search/sluice/querydsl"
)

// chunkDocs is how many documents a local writer takes at a time.
const chunkDocs = 64

// RunReindexSlice copies one slice of a source shard held by this node.
// See the package doc for the algorithm.
func (r *Runner) RunReindexSlice(req *nodev1.RunReindexSliceRequest, stream grpc.ServerStreamingServer[nodev1.RunReindexSliceResponse]) error {
	ctx := stream.Context()
	key := sliceKey{req.GetTaskId(), req.GetSlice()}
	srcID := req.GetSource()
	if srcID == nil {
		return fmt.Errorf("%w: source shard is required", ErrInvalid)
	}
	dst := routing.Params{Shards: int(req.GetDestShards()), RoutingShards: int(req.GetDestRoutingShards())}
	if err := dst.Validate(); err != nil {
		return fmt.Errorf("%w: destination: %v", ErrInvalid, err)
	}
	destRouting, err := routing.ParseDest(req.GetRouting())
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	// The index written: the destination, or the source itself for an
	// update by query.
	written := req.GetDestIndexUuid()
	if len(req.GetUpdateDocValues()) > 0 {
		written = srcID.GetIndexUuid()
	}
	if err := r.writeBlocked(written); err != nil {
		return err
	}
	src, err := r.host.Get(shard.ID{IndexUUID: srcID.GetIndexUuid(), Shard: int(srcID.GetShard())})
	if err != nil {
		return err
	}
	th := throttle.New(float64(req.GetRequestsPerSecond()))
	r.mu.Lock()
	r.running[key] = th
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		if r.running[key] == th {
			delete(r.running, key)
		}
		r.mu.Unlock()
	}()

	rd, fp, next, restarted, err := r.pin(ctx, key, src, req.GetCursor())
	if err != nil {
		return err
	}
	done, applied := false, 0
	defer func() {
		if done {
			rd.Release()
		} else {
			r.keep(key, rd, fp, applied)
		}
	}()
	var q search.Query
	if pq := req.GetQuery(); pq != nil && pq.Kind != nil && pq.GetMatchAll() == nil {
		if q, err = (querydsl.Compiler{Mapping: src.Mapping()}).Compile(pq); err != nil {
			return fmt.Errorf("reindex slice: query: %w", err)
		}
	}
	sub := req.GetSubSlice()
	if sub != nil && (sub.GetMax() < 1 || sub.GetId() < 0 || sub.GetId() >= sub.GetMax()) {
		return fmt.Errorf("%w: sub-slice %d of %d", ErrInvalid, sub.GetId(), sub.GetMax())
	}
	sel, err := newSelection(ctx, rd, int(sub.GetId()), int(sub.GetMax()), q, req.GetMaxDocs())
	if err != nil {
		return err
	}
	interval := r.opts.CheckpointInterval
	if ci := req.GetCheckpointInterval(); ci != nil && ci.AsDuration() > 0 {
		interval = ci.AsDuration()
	}
	cp := &copyRun{r: r, req: req, dst: dst, routing: destRouting, sel: sel, rd: rd, fp: fp, th: th, interval: interval, c: counters{errs: r.errs},
		lastCursor: req.GetCursor(),
		stream:     stream, restarted: restarted, local: map[int]*shard.Shard{}, remote: map[int]*ingestStream{},
		method: sluicev1.ReindexCopyMethod_REINDEX_COPY_METHOD_DOCUMENTS}
	if fields := req.GetUpdateDocValues(); len(fields) > 0 {
		err = cp.runUpdates(ctx, src, fields, next)
		done, applied = err == nil, cp.applied
		return err
	}
	if req.GetCopyMethod() == sluicev1.ReindexCopyMethod_REINDEX_COPY_METHOD_SEGMENTS {
		targets, reason, err := r.segmentTargets(ctx, req, src, dst)
		if err != nil {
			return err
		}
		if reason == "" {
			err = cp.runSegments(ctx, targets)
			done = err == nil
			return err
		}
		r.opts.Logger.Info("reindex: slice copies documents instead of segments", "task", req.GetTaskId(), "slice", req.GetSlice(), "reason", reason)
		cp.reason = reason
	}
	err = cp.run(ctx, next)
	done = err == nil
	return err
}

// copyRun is one run of a slice.
type copyRun struct {
	r         *Runner
	req       *nodev1.RunReindexSliceRequest
	dst       routing.Params
	routing   routing.Dest
	sel       *selection
	rd        *engine.Reader
	fp        uint64
	th        *throttle.Throttle
	interval  time.Duration
	stream    grpc.ServerStreamingServer[nodev1.RunReindexSliceResponse]
	restarted bool
	method    sluicev1.ReindexCopyMethod // what this run copies
	reason    string                     // why it copies documents although segments were asked for

	c       counters
	copied  int64
	w       *writers
	local   map[int]*shard.Shard // destination shards open on this node
	chunks  map[int]*chunk
	remote  map[int]*ingestStream
	restore []func()
	// applied (update by query): the position past the last document
	// done, once synced; see keptReader.applied.
	applied int
	// lastCursor is the position the last checkpoint reported (the
	// request's own before any).
	lastCursor []byte
}

func (cp *copyRun) run(ctx context.Context, next int) (err error) {
	createOnly := cp.req.GetOpType() == sluicev1.BulkAction_BULK_ACTION_CREATE
	abort := !cp.req.GetProceedOnConflicts()
	cp.w, ctx = newWriters(ctx, cp.r.opts.Workers, createOnly, abort, &cp.c)
	cp.chunks = map[int]*chunk{}
	defer func() {
		cp.w.stop()
		for _, s := range cp.remote {
			if s.stream != nil {
				_ = s.stream.CloseSend()
			}
		}
		for _, f := range cp.restore {
			f()
		}
	}()
	leaves := cp.rd.Leaves()
	err = cp.eachSelected(ctx, next, func(li, d int, sd *index.StoredDoc) error {
		// In-place updates live in the column, not in _source: the copy
		// is re-indexed from the values as they are now.
		src, err := engine.CurrentSource(leaves[li].Reader, d, sd.Source)
		if err != nil {
			return fmt.Errorf("source shard %v: doc %d: %w", cp.req.GetSource(), leaves[li].DocBase+d, err)
		}
		return cp.route(ctx, sd.ID, cp.routing.Of(sd.Routing), src)
	}, func(next int) error { return cp.checkpoint(ctx, next, false) })
	if err == nil {
		err = cp.checkpoint(ctx, cp.rd.MaxDoc(), true)
	}
	err = cp.cause(ctx, err)
	if errors.Is(err, ErrConflictAbort) {
		// The slice's last word: its counts, the conflict among them,
		// at the last checkpoint's position (what was written stands).
		_ = cp.stream.Send(cp.progress(cp.lastCursor, false))
	}
	return err
}

// eachSelected calls fn with each selected doc at or after position next,
// in index order — its leaf, leaf-local doc and stored fields — after the
// throttle lets it through, counting it copied; every checkpoint interval
// it calls checkpoint with the position after the last doc done.
func (cp *copyRun) eachSelected(ctx context.Context, next int, fn func(leaf, doc int, sd *index.StoredDoc) error, checkpoint func(next int) error) error {
	lastCheckpoint := time.Now()
	leaves := cp.rd.Leaves()
	var sd index.StoredDoc
	for li := range leaves {
		base, bits := leaves[li].DocBase, cp.sel.bits[li]
		if next >= base+bits.Len() {
			continue
		}
		stored := leaves[li].Reader.StoredFields()
		for d := bits.NextSetBit(max(0, next-base)); d != index.NoMoreDocs; d = bits.NextSetBit(d + 1) {
			if err := cp.th.Wait(ctx); err != nil {
				return err
			}
			if err := stored.Document(d, &sd); err != nil {
				return fmt.Errorf("source shard %v: doc %d: %w", cp.req.GetSource(), base+d, err)
			}
			if err := fn(li, d, &sd); err != nil {
				return err
			}
			cp.copied++
			next = base + d + 1
			if time.Since(lastCheckpoint) >= cp.interval {
				if err := checkpoint(next); err != nil {
					return err
				}
				lastCheckpoint = time.Now()
			}
		}
	}
	return nil
}

// cause prefers the writers' error (a conflict under abort, say) over the
// cancellation it caused.
func (cp *copyRun) cause(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if werr := cp.w.firstErr(); werr != nil {
		return werr
	}
	if c := context.Cause(ctx); c != nil && !errors.Is(c, context.Canceled) {
		return c
	}
	return err
}

// route sends a document to its destination shard, by its routing value
// (nil: its id) as a bulk would: in-process when the shard is open here,
// else into that shard's ingest stream.
func (cp *copyRun) route(ctx context.Context, id, rt, source []byte) error {
	d := shardOf(id, rt, cp.dst)
	if sh, ok := cp.localShard(d); ok {
		ch := cp.chunks[d]
		if ch == nil {
			// A flood-stage block set while the slice runs stops it
			// within a chunk (a bulk is refused per request).
			if err := cp.r.writeBlocked(cp.req.GetDestIndexUuid()); err != nil {
				return err
			}
			ch = cp.w.get(sh)
			cp.chunks[d] = ch
		}
		ch.add(id, rt, source)
		if ch.len() == chunkDocs {
			cp.w.submit(ch)
			delete(cp.chunks, d)
		}
		return nil
	}
	s := cp.remote[d]
	if s == nil {
		addr := cp.req.GetDestNodes()[int32(d)]
		if addr == "" {
			return fmt.Errorf("%w: destination shard %d is not open here and has no node", ErrNoDestination, d)
		}
		s = &ingestStream{addr: addr, opType: cp.req.GetOpType(),
			shard: &nodev1.ShardID{IndexUuid: cp.req.GetDestIndexUuid(), Shard: int32(d)}}
		cp.remote[d] = s
	}
	if s.batch == nil {
		if err := cp.r.writeBlocked(cp.req.GetDestIndexUuid()); err != nil {
			return err
		}
	}
	s.add(id, rt, source)
	if len(s.batch.Docs) >= cp.r.opts.BatchDocs || s.bytes >= cp.r.opts.BatchBytes {
		return s.flush(ctx, cp.r)
	}
	return nil
}

// localShard returns destination shard d if it is open on this node (and
// pauses its refresh for the run the first time).
func (cp *copyRun) localShard(d int) (*shard.Shard, bool) {
	if sh, ok := cp.local[d]; ok {
		return sh, sh != nil
	}
	sh, err := cp.r.host.Get(shard.ID{IndexUUID: cp.req.GetDestIndexUuid(), Shard: d})
	if err != nil {
		cp.local[d] = nil
		return nil, false
	}
	cp.local[d] = sh
	cp.restore = append(cp.restore, sh.PauseRefresh())
	return sh, true
}

// checkpoint makes every document before next durable in its destination
// — local writers drained and their shards committed, remote streams closed
// (their nodes commit before answering) — then reports the position.
func (cp *copyRun) checkpoint(ctx context.Context, next int, done bool) error {
	for d, ch := range cp.chunks {
		cp.w.submit(ch)
		delete(cp.chunks, d)
	}
	if err := cp.w.wait(); err != nil {
		return err
	}
	for _, s := range cp.remote {
		if err := s.close(ctx, cp.r, &cp.c); err != nil {
			return err
		}
	}
	if !cp.req.GetProceedOnConflicts() && cp.c.conflicts.Load() > 0 {
		return fmt.Errorf("reindex slice %d: %d version conflicts: %w", cp.req.GetSlice(), cp.c.conflicts.Load(), ErrConflictAbort)
	}
	for _, sh := range cp.local {
		if sh == nil {
			continue
		}
		if _, err := sh.Commit(ctx); err != nil {
			return fmt.Errorf("destination shard %v: commit: %w", sh.ID(), err)
		}
	}
	cp.lastCursor = cursor{fingerprint: cp.fp, next: next}.encode()
	return cp.stream.Send(cp.progress(cp.lastCursor, done))
}

// progress is the slice's report: its counts so far at position cur.
func (cp *copyRun) progress(cur []byte, done bool) *nodev1.RunReindexSliceResponse {
	return &nodev1.RunReindexSliceResponse{
		Total: cp.sel.total, Copied: cp.copied,
		Created: cp.c.created.Load(), Updated: cp.c.updated.Load(),
		VersionConflicts: cp.c.conflicts.Load(), Failures: cp.c.failures.Load(),
		Cursor: cur, Done: done,
		FailureSamples: cp.c.takeSamples(), Restarted: cp.restarted,
		Throttled:  durationpb.New(cp.th.Waited()),
		CopyMethod: cp.method, CopyMethodReason: cp.reason,
	}
}
