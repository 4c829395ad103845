package reindex

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sluice-search/sluice/cluster/routing"
	"github.com/sluice-search/sluice/cluster/state"
	nodev1 "github.com/sluice-search/sluice/proto/sluice/node/v1"
	statev1 "github.com/sluice-search/sluice/proto/sluice/state/v1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// errCancelled is the cause of a run stopped by CancelTask.
var errCancelled = errors.New("cancelled by request")

// fatalError ends a task: retrying cannot help.
type fatalError struct{ err error }

func (e fatalError) Error() string { return e.err.Error() }
func (e fatalError) Unwrap() error { return e.err }

func fatal(err error) error { return fatalError{err} }

// ErrConflictAbort ends a baseline slice at the first conflict under
// conflicts=abort (a node's slice ends with its own); retrying cannot help.
var ErrConflictAbort = errors.New("version conflicts (conflicts=abort)")

// isFatal: an error marked fatal here, or one whose code (the
// coordinator's error table's, or a node's relayed) says retrying cannot
// help: a bad request, a failed precondition, a conflict (ABORTED: a
// slice that met a version conflict under conflicts=abort).
func (m *Manager) isFatal(err error) bool {
	var fe fatalError
	if errors.As(err, &fe) {
		return true
	}
	switch m.opts.Errors.Code(err) {
	case codes.InvalidArgument, codes.FailedPrecondition, codes.AlreadyExists, codes.Aborted:
		return true
	}
	return false
}

// rateSample is copied docs at a time, for docs/s.
type rateSample struct {
	at     time.Time
	copied int64
}

// taskRun runs one task on the task runner.
type taskRun struct {
	m     *Manager
	guard clientv3.Cmp
	id    string

	mu        sync.Mutex
	rec       *statev1.ReindexTask // working copy
	dirty     bool
	cancelled bool
	cancel    context.CancelCauseFunc
	rps       float32
	active    map[int32]chan struct{} // slice -> its attempt's rate sender (rateSender)
	throttles map[int32]interface{ SetRate(float64) }
	rate      []rateSample
}

func newTaskRun(m *Manager, guard clientv3.Cmp, rec *statev1.ReindexTask) *taskRun {
	return &taskRun{m: m, guard: guard, id: rec.GetTask().GetId(), rec: rec, rps: rec.GetRequestsPerSecond(),
		active: map[int32]chan struct{}{}, throttles: map[int32]interface{ SetRate(float64) }{}}
}

// external applies a change another coordinator wrote: cancel or rethrottle.
func (r *taskRun) external(rec *statev1.ReindexTask) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if rec.GetCancelRequested() && !r.cancelled {
		r.cancelled = true
		r.rec.CancelRequested = true
		if r.cancel != nil {
			r.cancel(errCancelled)
		}
	}
	if rps := rec.GetRequestsPerSecond(); rps != r.rps {
		r.rps = rps
		r.rec.RequestsPerSecond = rps
		r.rec.Task.Reindex.RequestsPerSecond = rps
		r.rethrottleLocked()
	}
}

// sliceRateLocked is each unfinished slice's share of the task's rate.
func (r *taskRun) sliceRateLocked() float32 {
	if r.rps <= 0 {
		return 0
	}
	n := 0
	for _, cp := range r.rec.Checkpoints {
		if !cp.GetDone() {
			n++
		}
	}
	return r.rps / float32(max(n, 1))
}

// rethrottleLocked applies the new share to every running slice at once:
// baseline slices' throttles here, and node slices through their
// attempts' rate senders.
func (r *taskRun) rethrottleLocked() {
	rate := r.sliceRateLocked()
	for _, th := range r.throttles {
		th.SetRate(float64(rate))
	}
	for _, wake := range r.active {
		select {
		case wake <- struct{}{}:
		default: // a wake-up is pending: it reads the latest rate
		}
	}
}

// Retries of a rate a node did not take yet: soon, as the slice's stream
// is normally being set up, and at most every rateRetryMax.
const (
	rateRetryMin = 10 * time.Millisecond
	rateRetryMax = 250 * time.Millisecond
)

// rateSender keeps a slice attempt's node at the slice's share of the
// task's rate, until ctx (the attempt) ends. It is woken when the rate
// changes, and by the attempt's first message (resync). A rethrottle can
// reach the node before the slice runs there — the attempt's stream is
// still being set up, a loaded machine's scheduler makes that window long
// — and the node then answers not found: the rate is sent again shortly
// until the node has the slice, so no slice keeps the rate it started with
// (Elasticsearch's rethrottle likewise reaches every unfinished sub-task).
// The first message proves the node runs this attempt; the rate is sent
// once more then, in case an earlier "found" was a previous attempt's run
// not yet gone. One sender per attempt keeps successive rates in order.
func (r *taskRun) rateSender(ctx context.Context, cl nodev1.ReindexClient, node string, slice int32, started float32, wake, resync <-chan struct{}) {
	have, retry := started, time.Duration(0) // the node's rate as far as known; retry 0: none pending
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		var again <-chan time.Time
		if retry > 0 {
			timer.Reset(retry)
			again = timer.C
		}
		select {
		case <-ctx.Done():
			return
		case <-wake:
		case <-again:
		case <-resync:
			have = started
		}
		r.mu.Lock()
		rate := r.sliceRateLocked()
		r.mu.Unlock()
		if rate == have {
			retry = 0
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		resp, err := cl.RethrottleReindexSlice(rctx, &nodev1.RethrottleReindexSliceRequest{TaskId: r.id, Slice: slice, RequestsPerSecond: rate})
		cancel()
		if err == nil && resp.GetFound() {
			have, retry = rate, 0
			continue
		}
		if ctx.Err() != nil {
			return
		}
		if err != nil && retry == 0 { // once per rate, not per retry
			r.m.log.Warn("reindex: rethrottle slice; sending again", "task", r.id, "slice", slice, "node", node, "err", err)
		}
		retry = min(max(2*retry, rateRetryMin), rateRetryMax)
	}
}

func (r *taskRun) run(parent context.Context) {
	log := r.m.log.With("task", r.id)
	rec, _, err := r.m.tasks.get(parent, r.id)
	if err != nil || terminal(rec.GetTask().GetState()) {
		return // ended meanwhile (a late watch event), or etcd trouble: the next leader retries
	}
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	r.mu.Lock()
	r.rec = rec
	r.rps = rec.GetRequestsPerSecond()
	r.cancel = cancel
	r.cancelled = rec.GetCancelRequested()
	r.mu.Unlock()
	if rec.GetCancelRequested() {
		r.finish(parent, sluicev1.TaskState_TASK_STATE_CANCELLED, nil)
		return
	}
	r.mu.Lock()
	r.rec.Task.State = sluicev1.TaskState_TASK_STATE_RUNNING
	r.rec.Owner = r.m.opts.ID
	r.mu.Unlock()
	if err := r.persist(ctx); err != nil {
		log.Warn("reindex: cannot persist; leaving the task to the next runner", "err", err)
		return
	}
	log.Info("reindex task running", "mode", rec.Plan.Mode, "slices", len(rec.Plan.Slices))
	err = r.copyAll(ctx)
	if parent.Err() != nil {
		return // no longer the runner: the next one resumes from the checkpoints
	}
	if errors.Is(context.Cause(ctx), errCancelled) {
		r.refreshDest(parent)
		r.finish(parent, sluicev1.TaskState_TASK_STATE_CANCELLED, nil)
		log.Info("reindex task cancelled")
		return
	}
	if err != nil {
		r.finish(parent, sluicev1.TaskState_TASK_STATE_FAILED, err)
		log.Warn("reindex task failed", "err", err)
		return
	}
	r.mu.Lock()
	r.rec.Task.State = sluicev1.TaskState_TASK_STATE_VERIFYING
	r.mu.Unlock()
	if err := r.persist(ctx); err != nil {
		return
	}
	if err := r.verify(ctx); err != nil {
		if parent.Err() != nil {
			return
		}
		r.finish(parent, sluicev1.TaskState_TASK_STATE_FAILED, err)
		log.Warn("reindex verification failed", "err", err)
		return
	}
	if alias := rec.GetRequest().GetSwapAlias(); alias != "" {
		if err := r.swapAlias(ctx, alias); err != nil {
			r.finish(parent, sluicev1.TaskState_TASK_STATE_FAILED, fmt.Errorf("swap alias [%s]: %w", alias, err))
			return
		}
	}
	r.finish(parent, sluicev1.TaskState_TASK_STATE_SUCCEEDED, nil)
	log.Info("reindex task succeeded")
}

// copyAll runs the unfinished slices concurrently, persisting progress
// meanwhile, until all are done or one fails for good.
func (r *taskRun) copyAll(ctx context.Context) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if err := r.waitDest(ctx); err != nil {
		return err
	}
	var wg sync.WaitGroup
	errs := make([]error, len(r.rec.Plan.Slices))
	for i, s := range r.rec.Plan.Slices {
		if r.checkpoint(i).GetDone() {
			continue
		}
		wg.Go(func() {
			if errs[i] = r.runSlice(ctx, s); errs[i] != nil && ctx.Err() == nil {
				cancel(errs[i])
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	tick := time.NewTicker(r.m.opts.ProgressInterval)
	defer tick.Stop()
	for {
		select {
		case <-done:
			if err := r.persist(ctx); err != nil && ctx.Err() == nil {
				return err
			}
			if c := context.Cause(ctx); c != nil && !errors.Is(c, context.Canceled) {
				return c
			}
			for i, err := range errs {
				if err != nil && !errors.Is(err, context.Canceled) {
					return fmt.Errorf("slice %d: %w", i, err)
				}
			}
			return ctx.Err()
		case <-tick.C:
			if r.isDirty() {
				if err := r.persist(ctx); errors.Is(err, errNotLeader) {
					cancel(err)
				}
			}
		}
	}
}

// waitDest waits until every destination shard has a started primary.
func (r *taskRun) waitDest(ctx context.Context) error {
	uuid := r.rec.Plan.DestUuid
	// The cache follows etcd through a watch and may not have seen the
	// destination this task just created: read etcd itself before treating
	// "not in the cache" as "deleted".
	if r.m.cache.State().ByUUID[uuid] == nil {
		if _, err := r.m.cache.Refresh(ctx); err != nil {
			return err
		}
	}
	_, err := r.m.cache.WaitFor(ctx, func(st *state.Snapshot) bool {
		x := st.ByUUID[uuid]
		// Writes need the primaries only; replicas follow them.
		return x == nil || st.IndexHealth(x) != sluicev1.HealthStatus_HEALTH_STATUS_RED
	})
	if err != nil {
		return err
	}
	if r.m.cache.State().ByUUID[uuid] == nil {
		return fatal(fmt.Errorf("destination index [%s] was deleted", r.rec.Plan.DestIndex))
	}
	return nil
}

func (r *taskRun) checkpoint(i int) *statev1.ReindexCheckpoint {
	r.mu.Lock()
	defer r.mu.Unlock()
	return proto.Clone(r.rec.Checkpoints[i]).(*statev1.ReindexCheckpoint)
}

func (r *taskRun) isDirty() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.dirty
}

// runSlice runs a slice to its end, retrying from its last checkpoint with
// backoff while attempts fail for reasons that may pass (node restarting,
// shard moving, overload).
func (r *taskRun) runSlice(ctx context.Context, s *statev1.ReindexPlanSlice) error {
	backoff := 100 * time.Millisecond
	lastProgress := time.Now()
	for {
		var progressed bool
		var err error
		if r.rec.Plan.Mode == sluicev1.ReindexMode_REINDEX_MODE_BASELINE {
			progressed, err = r.baselineAttempt(ctx, s)
		} else {
			progressed, err = r.nodeAttempt(ctx, s)
		}
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if r.m.isFatal(err) {
			return err
		}
		if progressed {
			backoff, lastProgress = 100*time.Millisecond, time.Now()
		}
		if time.Since(lastProgress) > r.m.opts.StallTimeout {
			return fmt.Errorf("no progress for %v: %w", r.m.opts.StallTimeout, err)
		}
		r.m.log.Warn("reindex slice attempt failed; resuming from its checkpoint", "task", r.id, "slice", s.Slice, "err", err, "in", backoff)
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return ctx.Err()
		}
		backoff = min(2*backoff, r.m.opts.MaxRetryBackoff)
	}
}

// nodeAttempt runs a slice once on the node holding its source shard.
func (r *taskRun) nodeAttempt(ctx context.Context, s *statev1.ReindexPlanSlice) (progressed bool, err error) {
	plan := r.rec.Plan
	st := r.m.cache.State()
	src, dst := st.ByUUID[plan.SourceUuid], st.ByUUID[plan.DestUuid]
	if src == nil || dst == nil {
		return false, fatal(fmt.Errorf("source [%s] or destination [%s] was deleted", plan.SourceIndex, plan.DestIndex))
	}
	// The source's primary: a local reindex put the destination's
	// primaries next to it.
	sp := st.ActivePrimary(src, int(s.SourceShard))
	if sp == nil {
		return false, fmt.Errorf("source shard %d has no started primary", s.SourceShard)
	}
	nodeID := sp.GetNodeId()
	destNodes := map[int32]string{}
	for d := range dst.Shards {
		dp := st.ActivePrimary(dst, d)
		if dp == nil {
			return false, fmt.Errorf("destination shard %d has no started primary", d)
		}
		addr, _ := st.NodeAddress(dp.GetNodeId())
		destNodes[int32(d)] = addr
	}
	cl, err := r.m.nodes.Reindex(nodeID)
	if err != nil {
		return false, err
	}
	base := r.checkpoint(int(s.Slice))
	dp := paramsOf(dst.Meta.GetSettings())
	req := &nodev1.RunReindexSliceRequest{TaskId: r.id, Slice: s.Slice,
		Source:   &nodev1.ShardID{IndexUuid: plan.SourceUuid, Shard: s.SourceShard},
		SubSlice: s.SubSlice, Query: r.rec.Request.GetSource().GetQuery(),
		DestIndexUuid: plan.DestUuid, DestIndex: plan.DestIndex,
		DestRoutingShards: int32(dp.RoutingShards), DestShards: int32(dp.Shards), DestNodes: destNodes,
		OpType: r.rec.Request.GetDest().GetOpType(), Cursor: base.Cursor, MaxDocs: s.MaxDocs,
		ProceedOnConflicts: r.rec.Request.GetConflicts() == sluicev1.ConflictPolicy_CONFLICT_POLICY_PROCEED,
		Routing:            r.rec.Request.GetDest().GetRouting(),
		CopyMethod:         plan.GetCopyMethod(), SourceShards: src.Meta.GetSettings().GetNumberOfShards(),
		UpdateDocValues: plan.GetUpdateDocValues()}
	if ci := r.m.opts.CheckpointInterval; ci > 0 {
		req.CheckpointInterval = durationpb.New(ci)
	}
	wake, resync := make(chan struct{}, 1), make(chan struct{}, 1)
	r.mu.Lock()
	req.RequestsPerSecond = r.sliceRateLocked()
	r.active[s.Slice] = wake
	r.mu.Unlock()
	sctx, stopSender := context.WithCancel(ctx)
	senderDone := make(chan struct{})
	go func() {
		defer close(senderDone)
		r.rateSender(sctx, cl, nodeID, s.Slice, req.RequestsPerSecond, wake, resync)
	}()
	defer func() {
		r.mu.Lock()
		delete(r.active, s.Slice)
		r.mu.Unlock()
		stopSender()
		<-senderDone // the next attempt's sender comes after this one's
	}()
	stream, err := cl.RunReindexSlice(ctx, req)
	if err != nil {
		return false, err
	}
	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			if r.checkpoint(int(s.Slice)).GetDone() {
				return progressed, nil
			}
			return progressed, fmt.Errorf("slice ended without finishing")
		}
		if err != nil {
			return progressed, err
		}
		if !progressed {
			resync <- struct{}{}
		}
		r.apply(s.Slice, base, nodeID, msg.GetRestarted(), msg.GetCursor(), msg.GetDone(), msg.GetTotal(), msg.GetThrottled().AsDuration(),
			&statev1.ReindexCheckpoint{Copied: msg.GetCopied(), Created: msg.GetCreated(), Updated: msg.GetUpdated(),
				VersionConflicts: msg.GetVersionConflicts(), Failures: msg.GetFailures(),
				CopyMethod: msg.GetCopyMethod(), CopyMethodReason: msg.GetCopyMethodReason()}, msg.GetFailureSamples())
		progressed = true
	}
}

// apply records a checkpoint: base (the checkpoint the attempt started
// from) plus the attempt's counts so far, or the attempt's alone if the
// slice started over.
func (r *taskRun) apply(slice int32, base *statev1.ReindexCheckpoint, nodeID string, restarted bool, cursor []byte, done bool, total int64, throttled time.Duration, run *statev1.ReindexCheckpoint, samples []*sluicev1.ShardFailure) {
	cp := proto.Clone(base).(*statev1.ReindexCheckpoint)
	if restarted {
		cp = &statev1.ReindexCheckpoint{Slice: slice, Restarts: base.Restarts + 1, Throttled: base.Throttled}
	}
	cp.Copied += run.Copied
	cp.Created += run.Created
	cp.Updated += run.Updated
	cp.VersionConflicts += run.VersionConflicts
	cp.Failures += run.Failures
	cp.Cursor, cp.Done, cp.Total, cp.NodeId = cursor, done, total, nodeID
	cp.CopyMethod, cp.CopyMethodReason = run.CopyMethod, run.CopyMethodReason
	cp.Throttled = durationpb.New(base.GetThrottled().AsDuration() + throttled)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rec.Checkpoints[slice] = cp
	st := r.rec.Task.Reindex
	for _, f := range samples {
		if len(st.FailureSamples) < 100 {
			st.FailureSamples = append(st.FailureSamples, f)
		}
	}
	r.dirty = true
}

// persist writes the working copy, keeping what other coordinators own
// (cancel and throttle requests), guarded by leadership.
func (r *taskRun) persist(ctx context.Context) error {
	r.mu.Lock()
	snap := proto.Clone(r.rec).(*statev1.ReindexTask)
	r.dirty = false
	r.updateRateLocked(snap)
	r.mu.Unlock()
	publicView(snap)
	_, err := r.m.tasks.update(ctx, r.id, func(cur *statev1.ReindexTask) error {
		cancel, rps := cur.GetCancelRequested(), cur.GetRequestsPerSecond()
		proto.Reset(cur)
		proto.Merge(cur, snap)
		cur.CancelRequested = cancel || snap.GetCancelRequested()
		cur.RequestsPerSecond, cur.Task.Reindex.RequestsPerSecond = rps, rps
		return nil
	}, r.guard)
	return err
}

// updateRateLocked sets docs/s over the last 10 s and the ETA.
func (r *taskRun) updateRateLocked(rec *statev1.ReindexTask) {
	var copied, total int64
	for _, cp := range rec.Checkpoints {
		copied += cp.GetCopied()
		total += cp.GetTotal()
	}
	now := time.Now()
	r.rate = append(r.rate, rateSample{now, copied})
	for len(r.rate) > 2 && now.Sub(r.rate[1].at) > 10*time.Second {
		r.rate = r.rate[1:]
	}
	st := rec.Task.Reindex
	st.DocsPerSecond, st.Eta = 0, nil
	if first := r.rate[0]; now.Sub(first.at) > 0 && copied > first.copied {
		st.DocsPerSecond = float64(copied-first.copied) / now.Sub(first.at).Seconds()
		if total > copied {
			st.Eta = durationpb.New(time.Duration(float64(total-copied) / st.DocsPerSecond * float64(time.Second)))
		} else {
			st.Eta = durationpb.New(0)
		}
	}
}

// publicView fills the Task's progress from the checkpoints.
func publicView(rec *statev1.ReindexTask) {
	st := rec.Task.Reindex
	st.Total, st.Created, st.Updated, st.VersionConflicts, st.Failures = 0, 0, 0, 0, 0
	st.Slices = st.Slices[:0]
	var throttled time.Duration
	for i, cp := range rec.Checkpoints {
		st.Total += cp.GetTotal()
		st.Created += cp.GetCreated()
		st.Updated += cp.GetUpdated()
		st.VersionConflicts += cp.GetVersionConflicts()
		st.Failures += cp.GetFailures()
		throttled += cp.GetThrottled().AsDuration()
		state := rec.Task.State
		if cp.GetDone() {
			state = sluicev1.TaskState_TASK_STATE_SUCCEEDED
		} else if state == sluicev1.TaskState_TASK_STATE_VERIFYING || state == sluicev1.TaskState_TASK_STATE_SUCCEEDED {
			state = sluicev1.TaskState_TASK_STATE_RUNNING
		}
		st.Slices = append(st.Slices, &sluicev1.SliceStatus{Slice: cp.GetSlice(), SourceShard: rec.Plan.Slices[i].GetSourceShard(),
			NodeId: cp.GetNodeId(), State: state, Total: cp.GetTotal(), Copied: cp.GetCopied(), Restarts: cp.GetRestarts(),
			CopyMethod: cp.GetCopyMethod()})
		if st.CopyMethodReason == "" && cp.GetCopyMethodReason() != "" {
			st.CopyMethodReason = fmt.Sprintf("slice %d: %s", cp.GetSlice(), cp.GetCopyMethodReason())
		}
	}
	st.Throttled = durationpb.New(throttled)
	st.RequestsPerSecond = rec.GetRequestsPerSecond()
}

// finish ends the task in state, with err's reason if it failed.
func (r *taskRun) finish(ctx context.Context, state sluicev1.TaskState, err error) {
	r.mu.Lock()
	r.rec.Task.State = state
	r.rec.Task.EndTime = timestamppb.New(r.m.now())
	r.rec.Owner = ""
	if err != nil {
		r.rec.Task.Error = r.m.opts.Errors.Detail(err)
		if !r.m.isFatal(err) {
			r.rec.Task.Error.Code = int32(codes.Internal)
		}
	}
	r.mu.Unlock()
	if perr := r.persist(ctx); perr != nil {
		r.m.log.Warn("reindex: cannot record the task's end", "task", r.id, "state", state, "err", perr)
	}
}

// refreshDest makes what a cancelled task copied visible (best effort).
func (r *taskRun) refreshDest(ctx context.Context) {
	st := r.m.cache.State()
	if x := st.ByUUID[r.rec.Plan.DestUuid]; x != nil {
		if _, err := r.m.shardCounts(ctx, st, x); err != nil {
			r.m.log.Warn("reindex: refresh destination after cancel", "task", r.id, "err", err)
		}
	}
}

// verify refreshes the destination and checks its doc count against what
// the slices copied: per source shard when every destination shard draws
// from one source shard, else in total. The check is exact when the
// destination was empty at the start, and a lower bound otherwise.
func (r *taskRun) verify(ctx context.Context) error {
	plan := r.rec.Plan
	if len(plan.GetUpdateDocValues()) > 0 {
		// An update-by-query copies nothing to count: make its updates
		// visible.
		st := r.m.cache.State()
		if x := st.ByUUID[plan.DestUuid]; x != nil {
			if _, err := r.m.shardCounts(ctx, st, x); err != nil {
				return fmt.Errorf("refresh after the updates: %w", err)
			}
		}
		return nil
	}
	var counts []int64
	var dst *state.Index
	var srcP routing.Params
	// The destination's nodes may be restarting: give them a while.
	deadline := time.Now().Add(time.Minute)
	for {
		st, err := r.m.store.Load(ctx)
		if err != nil {
			return err
		}
		dst = st.ByUUID[plan.DestUuid]
		src := st.ByUUID[plan.SourceUuid]
		if dst == nil || src == nil {
			return fatal(fmt.Errorf("source or destination deleted before verification"))
		}
		srcP = paramsOf(src.Meta.GetSettings())
		if counts, err = r.m.shardCounts(ctx, st, dst); err == nil {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("verification: %w", err)
		}
		select {
		case <-time.After(500 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	want := make([]int64, srcP.Shards)
	var wantTotal, gotTotal int64
	for i, cp := range r.rec.Checkpoints {
		n := cp.GetTotal() - cp.GetFailures()
		want[plan.Slices[i].GetSourceShard()] += n
		wantTotal += n
	}
	for _, c := range counts {
		gotTotal += c
	}
	if plan.GetDestDocsAtStart() != 0 {
		if gotTotal < wantTotal {
			return fatal(fmt.Errorf("verification failed: copied %d documents but destination [%s] holds only %d", wantTotal, plan.DestIndex, gotTotal))
		}
		return nil
	}
	dstP := paramsOf(dst.Meta.GetSettings())
	if routing.Colocatable(srcP, dstP) == nil && keepsRouting(r.rec.Request) {
		got := make([]int64, srcP.Shards)
		for d, c := range counts {
			s, _ := routing.SourceShard(srcP, dstP, d)
			got[s] += c
		}
		var bad []string
		for s := range want {
			if got[s] != want[s] {
				bad = append(bad, fmt.Sprintf("source shard %d: copied %d, its destination shards hold %d", s, want[s], got[s]))
			}
		}
		if len(bad) > 0 {
			return fatal(fmt.Errorf("verification failed: %s (total copied %d, destination holds %d)", strings.Join(bad, "; "), wantTotal, gotTotal))
		}
		return nil
	}
	if gotTotal != wantTotal {
		return fatal(fmt.Errorf("verification failed: copied %d documents, destination [%s] holds %d", wantTotal, plan.DestIndex, gotTotal))
	}
	return nil
}

// swapAlias points alias at the destination and away from every other
// index, in one transaction.
func (r *taskRun) swapAlias(ctx context.Context, alias string) error {
	st, err := r.m.store.Load(ctx)
	if err != nil {
		return err
	}
	actions := []*sluicev1.AliasAction{}
	if a, ok := st.Aliases[alias]; ok {
		for _, x := range a.Info.GetIndices() {
			if x != r.rec.Plan.DestIndex {
				actions = append(actions, &sluicev1.AliasAction{Type: sluicev1.AliasActionType_ALIAS_ACTION_TYPE_REMOVE, Alias: alias, Index: x})
			}
		}
	}
	actions = append(actions, &sluicev1.AliasAction{Type: sluicev1.AliasActionType_ALIAS_ACTION_TYPE_ADD, Alias: alias, Index: r.rec.Plan.DestIndex})
	return r.m.md.UpdateAliases(ctx, actions)
}
