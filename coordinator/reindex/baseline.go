package reindex

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/sluice-search/sluice/cluster/routing"
	"github.com/sluice-search/sluice/cluster/state"
	"github.com/sluice-search/sluice/cluster/throttle"
	"github.com/sluice-search/sluice/coordinator/datapath"
	statev1 "github.com/sluice-search/sluice/proto/sluice/state/v1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// baselineAttempt runs a slice the way an external tool (or Elasticsearch's
// reindex API) does: a sliced scroll of the source through the
// coordinator's data path, each batch written with Bulk — every document
// crosses the network twice and the coordinator sits in the middle. Kept to
// measure local reindex against. Checkpoints are scroll cursors after each
// acknowledged bulk.
func (r *taskRun) baselineAttempt(ctx context.Context, s *statev1.ReindexPlanSlice) (progressed bool, err error) {
	plan := r.rec.Plan
	n := len(plan.Slices)
	base := r.checkpoint(int(s.Slice))
	th := throttle.New(0)
	r.mu.Lock()
	th.SetRate(float64(r.sliceRateLocked()))
	r.throttles[s.Slice] = th
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.throttles, s.Slice)
		r.mu.Unlock()
	}()
	req := &sluicev1.ScrollRequest{Indices: []string{plan.SourceIndex}, Query: r.rec.Request.GetSource().GetQuery(),
		BatchSize: int32(r.m.opts.BaselineBatch), Cursor: base.Cursor}
	if n > 1 {
		req.Slice = &sluicev1.Slice{Id: s.Slice, Max: int32(n)}
	}
	run := &statev1.ReindexCheckpoint{}
	restarted := false
	opType := r.rec.Request.GetDest().GetOpType()
	if opType == sluicev1.BulkAction_BULK_ACTION_UNSPECIFIED {
		opType = sluicev1.BulkAction_BULK_ACTION_INDEX
	}
	abort := r.rec.Request.GetConflicts() != sluicev1.ConflictPolicy_CONFLICT_POLICY_PROCEED
	// Validated when the task was accepted.
	destRouting, err := routing.ParseDest(r.rec.Request.GetDest().GetRouting())
	if err != nil {
		return false, state.Invalidf("dest.routing: %v", err)
	}
	var total int64
	reachedMax := false
	send := func(resp *sluicev1.ScrollResponse) error {
		if resp.GetTotal() > 0 {
			total = resp.GetTotal()
		}
		docs := resp.GetDocs()
		if s.MaxDocs > 0 {
			total = min(total, s.MaxDocs)
			if left := s.MaxDocs - base.Copied - run.Copied; int64(len(docs)) > left {
				docs = docs[:max(left, 0)]
			}
		}
		items := make([]*sluicev1.BulkItem, len(docs))
		for i, d := range docs {
			if err := th.Wait(ctx); err != nil {
				return err
			}
			items[i] = &sluicev1.BulkItem{Action: opType, Index: plan.DestIndex, Id: d.GetId(), Source: d.GetSource(),
				Routing: string(destRouting.Of([]byte(d.GetRouting())))}
		}
		var samples []*sluicev1.ShardFailure
		if err := r.bulk(ctx, items, run, &samples); err != nil {
			return err
		}
		run.Copied += int64(len(docs))
		done := s.MaxDocs > 0 && base.Copied+run.Copied >= s.MaxDocs
		r.apply(s.Slice, base, "", restarted, resp.GetCursor(), false, total, th.Waited(), run, samples)
		if abort && run.VersionConflicts > 0 {
			// After recording the batch: its writes stand, and the task
			// reports the conflict it ended on.
			return fmt.Errorf("slice %d: %d %w", s.Slice, run.VersionConflicts, ErrConflictAbort)
		}
		progressed = true
		if done {
			reachedMax = true
			return errMaxDocs
		}
		return nil
	}
	err = r.m.docs.Scroll(ctx, req, send)
	if c := r.m.opts.Errors.Code(err); len(base.Cursor) > 0 && !progressed && (c == codes.InvalidArgument || c == codes.NotFound) {
		// The scroll's point-in-time expired with its coordinator: start
		// the slice over (writes are idempotent by _id).
		req.Cursor, restarted = nil, true
		base = &statev1.ReindexCheckpoint{Slice: s.Slice, Restarts: base.Restarts, Throttled: base.Throttled}
		err = r.m.docs.Scroll(ctx, req, send)
	}
	if err != nil && !reachedMax {
		return progressed, err
	}
	cp := r.checkpoint(int(s.Slice))
	cp.Done, cp.Total = true, max(cp.Total, total)
	if !progressed {
		cp.Total = 0
	}
	r.mu.Lock()
	r.rec.Checkpoints[s.Slice] = cp
	r.dirty = true
	r.mu.Unlock()
	return progressed, nil
}

// errMaxDocs ends a baseline scroll early.
var errMaxDocs = errors.New("max_docs reached")

// bulk writes items through the data path, retrying the items rejected by
// overload (RESOURCE_EXHAUSTED) with backoff — never dropping one — and
// counts the outcomes into run.
func (r *taskRun) bulk(ctx context.Context, items []*sluicev1.BulkItem, run *statev1.ReindexCheckpoint, samples *[]*sluicev1.ShardFailure) error {
	backoff := 50 * time.Millisecond
	for len(items) > 0 {
		resp, err := r.m.docs.Bulk(ctx, &sluicev1.BulkRequest{Items: items})
		var retry []*sluicev1.BulkItem
		switch {
		case errors.Is(err, datapath.ErrOverloaded):
			retry = items
		case err != nil:
			return err
		default:
			for i, res := range resp.GetItems() {
				switch res.GetStatus() {
				case sluicev1.BulkItemStatus_BULK_ITEM_STATUS_CREATED:
					run.Created++
				case sluicev1.BulkItemStatus_BULK_ITEM_STATUS_UPDATED:
					run.Updated++
				default:
					switch codes.Code(res.GetError().GetCode()) {
					case codes.ResourceExhausted:
						retry = append(retry, items[i])
					case codes.AlreadyExists:
						run.VersionConflicts++
					default:
						run.Failures++
						if len(*samples) < 100 {
							*samples = append(*samples, &sluicev1.ShardFailure{Index: res.GetIndex(), Shard: res.GetShard(), Error: res.GetError()})
						}
					}
				}
			}
		}
		if len(retry) == 0 {
			return nil
		}
		items = retry
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return ctx.Err()
		}
		backoff = min(2*backoff, r.m.opts.MaxRetryBackoff)
	}
	return nil
}
