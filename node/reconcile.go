package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/sluice-search/sluice/cluster/state"
	"github.com/sluice-search/sluice/node/engine"
	statev1 "github.com/sluice-search/sluice/proto/sluice/state/v1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// reconciler makes the open shards match the routing table: level-triggered
// on every new cluster state (and on a timer, to retry failed reports), so
// a missed event or a restart converges the same way.
//
// Opens run in the background, at most `recoveries` at a time (each holds
// one of the slots in sem), so a pass never waits for a recovery and a
// restarted node replays its shards' translogs side by side. A pass
// starts the opens it finds missing, harvests the ones that finished, and
// leaves alone shards that are still opening (no close, delete or update
// overlaps an open; an unwanted one is cancelled and dealt with once it
// ends). While a shard opens its routing entry stays INITIALIZING, and
// once a second (progressEvery) the node writes the recovery's stage and
// progress into it.
type reconciler struct {
	nodeID     string
	host       shardSet
	store      *state.Store
	cache      *state.Cache
	log        *slog.Logger
	recoveries int
	sem        chan struct{} // recovery slots
	kick       chan struct{} // an open ended: reconcile again

	mu      sync.Mutex // held while reconciling; stop takes it to wait
	open    map[state.ShardID]*openShard
	opening map[state.ShardID]*opening
	failed  map[state.ShardID]*openFailure
	// stored: the shards with data on this node (stored.go), found when
	// the first pass lists the data dir (scanned) or opened since.
	stored  map[state.ShardID]*storedCopy
	scanned bool
	halted  bool
	held    bool           // no new opens: the node is shutting down
	opens   sync.WaitGroup // running opens
}

// A shard that fails to open is reported FAILED and retried, as
// Elasticsearch retries a failed allocation (index.allocation.max_retries,
// 5): a passing cause (a full disk, a file still locked) heals without an
// operator, and a lasting one (a corrupt file) stays FAILED with its reason
// after the last attempt. Attempt n waits n × openRetryBase after the one
// before; a node restart starts counting again.
const maxOpenAttempts = 5

var openRetryBase = 5 * time.Second // a variable for tests

// progressEvery: how often a recovering shard's progress is written into
// its routing entry. Each write is one guarded etcd transaction and a
// reload of the cluster state by every process watching it, so it is
// done only while a recovery runs, for at most `recoveries` shards per
// node. A variable for tests.
var progressEvery = time.Second

// DefaultConcurrentRecoveries is how many shards a node opens at once
// (Elasticsearch's cluster.routing.allocation.node_initial_primaries_recoveries).
const DefaultConcurrentRecoveries = 4

// openFailure counts failed opens of one allocation of a shard.
type openFailure struct {
	alloc    string
	attempts int
	next     time.Time // when to try again
}

type openShard struct {
	alloc    string
	role     copyRole // the role it was opened with, or last given
	indexRev int64    // mod revision of the index metadata it was given
}

// opening is a shard open, or a promotion, running in the background.
type opening struct {
	rt   *statev1.ShardCopy // the latest routing of the copy asking for it
	role copyRole           // the latest role asked of it
	ran  copyRole           // the role it runs with
	// promotion: an open replica taking the primary role (promote), not
	// an open; it reports no progress.
	promotion bool
	// reopen is set when the open is cancelled because the copy's role
	// changed under it: what it opened is closed when it ends, so the
	// next pass opens the copy in its new role.
	reopen   bool
	indexRev int64
	rec      *engine.Recovery
	running  atomic.Bool // holds a slot (else queued)
	cancel   context.CancelFunc
	done     chan struct{}
	err      error // set before done is closed
	// reported is the reason last published (reportProgress), so that a
	// queued shard's unchanged progress costs no etcd read each second.
	reported string
}

func newReconciler(nodeID string, host shardSet, store *state.Store, cache *state.Cache, recoveries int, log *slog.Logger) *reconciler {
	if recoveries <= 0 {
		recoveries = DefaultConcurrentRecoveries
	}
	return &reconciler{nodeID: nodeID, host: host, store: store, cache: cache, log: log, recoveries: recoveries,
		sem: make(chan struct{}, recoveries), kick: make(chan struct{}, 1),
		open: map[state.ShardID]*openShard{}, opening: map[state.ShardID]*opening{}, failed: map[state.ShardID]*openFailure{},
		stored: map[state.ShardID]*storedCopy{}}
}

// queuedReason is the reason of a copy waiting for a recovery slot; a
// starting node marks its copies with it (markRecovering).
func (r *reconciler) queuedReason() string {
	return fmt.Sprintf("recovering on node [%s]: queued (at most %d shards recover at once)", r.nodeID, r.recoveries)
}

// markRecovering runs when the node starts, before it registers: the
// copies the routing table says it holds as STARTED (or NODE_LEFT) were
// opened by a previous run of the node, so they become INITIALIZING until
// this run has opened them — a quick restart never shows them started
// before they are. Failures are logged: the pass that opens a copy also
// reports it INITIALIZING first.
func (r *reconciler) markRecovering(ctx context.Context) {
	n, err := r.store.MarkRecovering(ctx, r.nodeID, r.queuedReason(), 50)
	if err != nil {
		r.log.Warn("mark shards recovering", "marked", n, "err", err)
		return
	}
	if n > 0 {
		r.log.Info("shards held before the restart marked recovering", "shards", n)
	}
}

func (r *reconciler) run(ctx context.Context) {
	tick := time.NewTicker(min(5*time.Second, openRetryBase))
	defer tick.Stop()
	progress := time.NewTicker(progressEvery)
	defer progress.Stop()
	failures := r.host.failures()
	for {
		changed := r.cache.Changed()
		if st := r.cache.State(); st != nil {
			r.reconcile(ctx, st)
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-tick.C:
		case <-failures:
		case <-r.kick:
		case <-progress.C:
			r.reportProgress(ctx)
			continue // progress alone changes nothing to reconcile
		}
	}
}

// wanted reports whether the routing asks this node to hold the copy.
func (r *reconciler) wanted(rt *statev1.ShardCopy) bool {
	if rt.GetNodeId() != r.nodeID {
		return false
	}
	switch rt.GetState() {
	case sluicev1.ShardState_SHARD_STATE_INITIALIZING, sluicev1.ShardState_SHARD_STATE_STARTED, sluicev1.ShardState_SHARD_STATE_NODE_LEFT:
		return true
	}
	return false
}

// want is a copy the routing asks this node to hold.
type want struct {
	x    *state.Index
	rt   *statev1.ShardCopy // this node's copy
	role copyRole
}

func (r *reconciler) reconcile(ctx context.Context, st *state.Snapshot) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.halted {
		return
	}
	desired := map[state.ShardID]want{}
	now := time.Now()
	for uuid, x := range st.ByUUID {
		for n, sh := range x.Shards {
			id := state.ShardID{Index: uuid, Shard: n}
			if sh == nil {
				continue
			}
			if c := state.CopyOnNode(sh.Routing, r.nodeID); c != nil && (r.wanted(c) || r.retryDue(id, c, now)) {
				desired[id] = want{x, c, roleOf(st, sh.Routing, c)}
			}
		}
	}
	// Opens that ended: open shards join r.open (and are closed below if
	// no longer wanted); failures are reported and retried.
	for id, o := range r.opening {
		select {
		case <-o.done:
		default:
			if w, ok := desired[id]; !ok {
				o.cancel() // no longer ours: stop recovering it
			} else if w.role.Term >= o.ran.Term { // else a view from before its activation
				if w.role.Term > o.ran.Term && w.role.Primary != o.ran.Primary && !o.promotion && !o.reopen {
					// Made primary (or replica) at a newer term while it
					// opened in its old role: a replica's recovery would
					// ask a primary that is now a replica for ever.
					r.log.Info("shard copy's role changed while it opened; opening it again in its new role", "shard", id, "role", w.role, "was", o.ran)
					o.reopen = true
					o.cancel()
				}
				o.rt, o.role = w.rt, w.role
				if w.rt.GetState() != sluicev1.ShardState_SHARD_STATE_INITIALIZING || w.rt.GetReason() != o.reported {
					o.reported = "" // changed by another: the next progress report writes it again
				}
			}
			continue
		}
		delete(r.opening, id)
		if o.promotion {
			r.promoted(ctx, id, o)
			continue
		}
		if o.err == nil {
			delete(r.failed, id)
			role := o.role
			if o.reopen { // opened in its old role before the cancel took: the pass below changes it
				role = o.ran
			}
			r.open[id] = &openShard{alloc: o.rt.GetAllocationId(), role: role, indexRev: o.indexRev}
			r.log.Info("opened shard", "shard", id, "took", o.rec.Progress().Elapsed)
			continue
		}
		if errors.Is(o.err, context.Canceled) && o.reopen {
			// The host refuses to open a copy in another role than the
			// one open: close it for the pass below.
			if err := r.host.closeShard(ctx, id); err != nil {
				r.log.Warn("close shard to reopen it in its new role", "shard", id, "err", err)
			}
			continue
		}
		if errors.Is(o.err, context.Canceled) {
			// Cancelled because unwanted (the node stopping harvests
			// nothing); its data is dealt with below.
			continue
		}
		r.openFailed(ctx, id, o)
	}
	// Close what is no longer ours.
	for id := range r.open {
		if _, ok := desired[id]; ok {
			continue
		}
		if err := r.host.closeShard(ctx, id); err != nil {
			r.log.Warn("close shard", "shard", id, "err", err)
		}
		delete(r.open, id)
	}
	// Delete the data of copies neither open, opening nor wanted here once
	// nothing needs it: their index is deleted, or the shard is fully
	// active on other nodes.
	r.deleteUnneeded(ctx, st, desired)
	// A shard that failed while open is closed; the open below then
	// reports the host's refusal FAILED, with the reason.
	for id := range r.open {
		if err := r.host.failure(id); err != nil {
			r.log.Error("shard failed", "shard", id, "err", err)
			if err := r.host.closeShard(ctx, id); err != nil {
				r.log.Warn("close failed shard", "shard", id, "err", err)
			}
			delete(r.open, id)
		}
	}
	updated := map[string]bool{}
	for id, w := range desired {
		if _, busy := r.opening[id]; busy {
			continue
		}
		o, isOpen := r.open[id]
		switch {
		case isOpen && w.role.Term < o.role.Term:
			// A view of the state from before this node raised the term
			// (ActivatePrimary): the watch brings the newer one.
			continue
		case !isOpen:
			if f := r.failed[id]; f != nil && f.alloc == w.rt.GetAllocationId() && (f.attempts >= maxOpenAttempts || now.Before(f.next)) {
				continue // backing off; the state may not show the FAILED report yet
			}
			if !w.role.Primary && !r.dropFailedReplica(ctx, id, w.rt) {
				continue // tried again at the next pass
			}
			r.startOpen(ctx, id, w.x, w.rt, w.role)
			continue
		case o.role != w.role && w.role.Primary && !o.role.Primary:
			// Promoted: in the background, as an open (promote).
			delete(r.open, id)
			r.promote(ctx, id, w.rt, w.role, o.indexRev)
			continue
		case o.role != w.role:
			// Demoted, a new term or primary: the copy takes its new role
			// in place (a few field writes), or is closed and opened again
			// in it.
			if err := r.host.setRole(ctx, id, w.role); err != nil {
				if r.held {
					// Shutting down (its primary handed off, say): the copy
					// stays open as it is until the node stops, so a search
					// whose query phase pinned a reader here gets its fetch
					// phase; no new reads or writes come to it.
					r.log.Info("shard copy keeps its old role until the node stops", "shard", id, "role", w.role, "err", err)
					o.role = w.role
					continue
				}
				r.log.Warn("shard copy cannot take its new role; closing it to reopen it", "shard", id, "role", w.role, "err", err)
				if err := r.host.closeShard(ctx, id); err != nil {
					r.log.Warn("close shard", "shard", id, "err", err)
				}
				delete(r.open, id)
				r.startOpen(ctx, id, w.x, w.rt, w.role)
				continue
			}
			o.role = w.role
		case o.indexRev != w.x.ModRevision:
			if !updated[id.Index] {
				if err := r.host.updateIndex(ctx, w.x.Meta); err != nil {
					r.log.Warn("update index", "index", w.x.Name(), "err", err)
					continue
				}
				updated[id.Index] = true
			}
			o.indexRev = w.x.ModRevision
		}
		o.alloc = w.rt.GetAllocationId()
		if w.rt.GetState() == sluicev1.ShardState_SHARD_STATE_NODE_LEFT {
			// The cluster holds this node for gone; a report would be
			// dropped. The allocator turns the copy INITIALIZING when it
			// sees the node again, and the next pass reports it STARTED.
			continue
		}
		if w.rt.GetState() != sluicev1.ShardState_SHARD_STATE_STARTED || w.rt.GetReason() != "" || w.rt.GetRecovery() != nil {
			r.report(ctx, id, w.rt, state.ShardReport{State: sluicev1.ShardState_SHARD_STATE_STARTED})
		}
	}
}

// dropFailedReplica deals with a replica copy that failed while open here
// (a damaged file found by the scrubber or a verification; the host keeps
// the failure until the data is deleted): it is reported FAILED and leaves
// the in-sync set in one write, so it can never be promoted, and only then
// is its data deleted, for the open that follows to recover it from the
// primary from nothing. It says whether the copy can be opened now (false:
// the report failed; the next pass tries again).
func (r *reconciler) dropFailedReplica(ctx context.Context, id state.ShardID, rt *statev1.ShardCopy) bool {
	ferr := r.host.failure(id)
	if ferr == nil {
		return true
	}
	return r.dropDamagedReplica(ctx, id, rt, ferr)
}

// dropDamagedReplica reports a damaged replica copy FAILED out of the
// in-sync set and then deletes its data; it says whether both happened.
func (r *reconciler) dropDamagedReplica(ctx context.Context, id state.ShardID, rt *statev1.ShardCopy, ferr error) bool {
	if !r.report(ctx, id, rt, state.ShardReport{State: sluicev1.ShardState_SHARD_STATE_FAILED, LeaveInSync: true,
		Reason: fmt.Sprintf("replica copy failed on node [%s], out of the in-sync set, recovering it from the primary: %v", r.nodeID, ferr)}) {
		return false
	}
	if err := r.host.deleteShard(ctx, id); err != nil {
		r.log.Warn("delete failed replica copy", "shard", id, "err", err)
		return false
	}
	r.log.Warn("failed replica copy deleted; recovering it from the primary", "shard", id, "failure", ferr)
	return true
}

// startOpen opens a shard in the background, once a recovery slot is
// free. A primary is opened only once its activation is recorded
// (state.Store.ActivatePrimary): INITIALIZING and, for a shard that ever
// had a started copy, term + 1 in the same write, so a primary reopened
// here never writes in its earlier run's term; if that write fails, the
// next pass tries again. A replica the routing table shows STARTED or
// NODE_LEFT (held by an earlier run of this node, if markRecovering could
// not say so), or FAILED and tried again, is reported INITIALIZING first.
func (r *reconciler) startOpen(ctx context.Context, id state.ShardID, x *state.Index, rt *statev1.ShardCopy, role copyRole) {
	if r.held {
		return
	}
	switch {
	case role.Primary:
		term, err := r.store.ActivatePrimary(ctx, id, r.nodeID, rt.GetAllocationId(), r.queuedReason())
		if err != nil {
			if !errors.Is(err, state.ErrStale) && ctx.Err() == nil {
				r.log.Warn("record primary activation", "shard", id, "err", err)
			}
			return
		}
		if term != role.Term {
			r.log.Info("primary reopened at a new term", "shard", id, "term", term, "was", role.Term)
		}
		role.Term = term
	case rt.GetState() == sluicev1.ShardState_SHARD_STATE_STARTED, rt.GetState() == sluicev1.ShardState_SHARD_STATE_NODE_LEFT,
		// A replica's retried open is a recovery: its primary adds only
		// a recovering copy to the in-sync set.
		rt.GetState() == sluicev1.ShardState_SHARD_STATE_FAILED:
		r.report(ctx, id, rt, state.ShardReport{State: sluicev1.ShardState_SHARD_STATE_INITIALIZING, Reason: r.queuedReason()})
	}
	r.stored[id] = &storedCopy{seen: true}
	meta := x.Meta
	r.background(ctx, id, &opening{rt: rt, role: role, indexRev: x.ModRevision, rec: new(engine.Recovery)}, func(octx context.Context, o *opening) error {
		select {
		case r.sem <- struct{}{}:
		case <-octx.Done():
			return octx.Err()
		}
		defer func() { <-r.sem }()
		o.running.Store(true)
		return r.host.openShard(octx, meta, id, role, o.rec)
	})
}

// promote gives an open replica copy the primary role it was given in
// the background (shardSet.setRole: its engine reopens as a primary,
// replaying its translog, and it resyncs the other copies over RPCs —
// seconds, or up to the replication timeout for a copy that does not
// answer), tracked in r.opening as an open is: passes go on for the
// node's other shards meanwhile, and none touches this one until it
// ends. The lock need not cover it: the allocator's etcd write that made
// the copy primary (term + 1) is what fences the old primary, and a
// newer write (another promotion, a move) only changes the role the next
// pass compares with the one promoted (promoted). A promotion takes no
// recovery slot: a failover must not queue behind recoveries.
func (r *reconciler) promote(ctx context.Context, id state.ShardID, rt *statev1.ShardCopy, role copyRole, indexRev int64) {
	r.background(ctx, id, &opening{rt: rt, role: role, promotion: true, indexRev: indexRev, rec: new(engine.Recovery)},
		func(octx context.Context, _ *opening) error { return r.host.setRole(octx, id, role) })
}

// promoted harvests an ended promotion: the copy is open as the primary
// of the role it was promoted to (a later change of role is the next
// pass's), or, failed, it is closed for the next pass to open it in its
// role.
func (r *reconciler) promoted(ctx context.Context, id state.ShardID, o *opening) {
	if o.err == nil {
		r.open[id] = &openShard{alloc: o.ran.AllocationID, role: o.ran, indexRev: o.indexRev}
		r.log.Info("promoted shard copy", "shard", id, "term", o.ran.Term)
		return
	}
	r.log.Warn("shard copy cannot take its new role; closing it to reopen it", "shard", id, "role", o.ran, "err", o.err)
	if err := r.host.closeShard(ctx, id); err != nil {
		r.log.Warn("close shard", "shard", id, "err", err)
	}
}

// background runs an open or a promotion of shard id (o) in the
// background, as r.opening[id] until run returns; a pass harvests it.
func (r *reconciler) background(ctx context.Context, id state.ShardID, o *opening, run func(context.Context, *opening) error) {
	octx, cancel := context.WithCancel(ctx)
	o.ran, o.cancel, o.done = o.role, cancel, make(chan struct{})
	r.opening[id] = o
	r.opens.Go(func() {
		defer cancel()
		defer func() {
			close(o.done)
			select {
			case r.kick <- struct{}{}:
			default:
			}
		}()
		o.err = run(octx, o)
	})
}

// openFailed records a failed open, reports it FAILED and schedules the
// next attempt.
func (r *reconciler) openFailed(ctx context.Context, id state.ShardID, o *opening) {
	alloc := o.rt.GetAllocationId()
	f := r.failed[id]
	if f == nil || f.alloc != alloc {
		f = &openFailure{alloc: alloc}
		r.failed[id] = f
	}
	if !o.role.Primary && errors.Is(o.err, engine.ErrMarkedCorrupted) {
		// Found damaged by an earlier run of the node: out of the in-sync
		// set and deleted, it recovers from the primary at the next pass.
		// Until the report that takes it out of the set is written (its
		// node held for gone, etcd unreachable), it is not reported
		// FAILED in the set, and is tried again after a pause.
		if !r.dropDamagedReplica(ctx, id, o.rt, o.err) {
			f.next = time.Now().Add(openRetryBase)
		}
		return
	}
	f.attempts++
	wait := time.Duration(f.attempts) * openRetryBase
	f.next = time.Now().Add(wait)
	retry := fmt.Sprintf("attempt %d of %d, next in %v", f.attempts, maxOpenAttempts, wait)
	if f.attempts >= maxOpenAttempts {
		retry = fmt.Sprintf("attempt %d of %d; restart the node to try again", f.attempts, maxOpenAttempts)
	}
	r.log.Error("open shard failed", "shard", id, "attempt", f.attempts, "err", o.err)
	r.report(ctx, id, o.rt, state.ShardReport{State: sluicev1.ShardState_SHARD_STATE_FAILED,
		Reason: fmt.Sprintf("open failed (%s): %v", retry, o.err)})
}

// reportProgress writes the progress of every recovery running (or
// queued) into its routing entry: INITIALIZING, a reason a person reads
// (`sluice health`, `sluice state`) and the structured ShardRecovery.
func (r *reconciler) reportProgress(ctx context.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.halted {
		return
	}
	for id, o := range r.opening {
		select {
		case <-o.done:
			continue // the next pass reports how it ended
		default:
		}
		if o.promotion {
			continue // a started copy, not a recovery
		}
		rec := &sluicev1.ShardRecovery{Stage: sluicev1.RecoveryStage_RECOVERY_STAGE_QUEUED}
		reason := r.queuedReason()
		if o.running.Load() {
			p := o.rec.Progress()
			rec, reason = recoveryProto(p), recoveryReason(r.nodeID, p)
		}
		if reason == o.reported {
			continue
		}
		if r.report(ctx, id, o.rt, state.ShardReport{State: sluicev1.ShardState_SHARD_STATE_INITIALIZING, Reason: reason, Recovery: rec}) {
			o.reported = reason
		}
	}
}

// recoveryStages are the engine's stages as the API's.
var recoveryStages = map[engine.RecoveryStage]sluicev1.RecoveryStage{
	engine.RecoveryLoading:    sluicev1.RecoveryStage_RECOVERY_STAGE_LOADING,
	engine.RecoveryScanning:   sluicev1.RecoveryStage_RECOVERY_STAGE_SCANNING_TRANSLOG,
	engine.RecoveryReplaying:  sluicev1.RecoveryStage_RECOVERY_STAGE_REPLAYING_TRANSLOG,
	engine.RecoveryRefreshing: sluicev1.RecoveryStage_RECOVERY_STAGE_REFRESHING,
	engine.RecoveryDone:       sluicev1.RecoveryStage_RECOVERY_STAGE_REFRESHING, // about to report STARTED
}

func recoveryProto(p engine.RecoveryProgress) *sluicev1.ShardRecovery {
	return &sluicev1.ShardRecovery{Stage: recoveryStages[p.Stage], Ops: p.Ops, OpsTotal: p.OpsTotal,
		Bytes: p.Bytes, BytesTotal: p.BytesTotal, Elapsed: durationpb.New(p.Elapsed.Round(time.Millisecond))}
}

// recoveryReason says what a recovery is doing, e.g. "recovering on node
// [n1]: replaying translog, 12000 of 50000 ops, 11.2 of 48.0 MiB, 3.1s".
func recoveryReason(nodeID string, p engine.RecoveryProgress) string {
	s := fmt.Sprintf("recovering on node [%s]: %s", nodeID, p.Stage)
	switch p.Stage {
	case engine.RecoveryScanning, engine.RecoveryReplaying:
		s += fmt.Sprintf(", %d of %d ops, %.1f of %.1f MiB", p.Ops, p.OpsTotal, float64(p.Bytes)/(1<<20), float64(p.BytesTotal)/(1<<20))
	}
	return s + fmt.Sprintf(", %.1fs", p.Elapsed.Seconds())
}

// retryDue reports whether a FAILED copy on this node is due for another
// open: one this process has not tried (as after a restart), or one whose
// backoff has passed with attempts left.
func (r *reconciler) retryDue(id state.ShardID, rt *statev1.ShardCopy, now time.Time) bool {
	if rt.GetNodeId() != r.nodeID || rt.GetState() != sluicev1.ShardState_SHARD_STATE_FAILED {
		return false
	}
	f := r.failed[id]
	return f == nil || f.alloc != rt.GetAllocationId() || f.attempts < maxOpenAttempts && !now.Before(f.next)
}

// report writes a shard's state into its routing entry, guarded by the
// allocation id; a stale report (the copy moved or was deleted) is dropped.
// It says whether the entry now holds the report.
func (r *reconciler) report(ctx context.Context, id state.ShardID, rt *statev1.ShardCopy, rep state.ShardReport) bool {
	err := r.store.SetShardState(ctx, id, r.nodeID, rt.GetAllocationId(), rep)
	if err != nil && !errors.Is(err, state.ErrStale) && ctx.Err() == nil {
		// Retried by the next reconcile (timer or change).
		r.log.Warn("report shard state", "shard", id, "state", rep.State.String(), "err", err)
	}
	return err == nil
}

// stop halts reconciling, cancels the opens in progress and waits for
// them; shards they opened stay open in the host, for its CloseAll.
func (r *reconciler) stop() {
	r.mu.Lock()
	r.halted = true
	for _, o := range r.opening {
		o.cancel()
	}
	r.mu.Unlock()
	r.opens.Wait()
}

// holdOpens stops opening shards: the node is shutting down, and a copy
// it would open now (its old primary, handed off and to be reopened as a
// replica; a new copy) would only start a recovery the node cuts short.
// It reopens them when it is back. A copy that cannot take a new role in
// place is left open until the node stops rather than closed.
func (r *reconciler) holdOpens() {
	r.mu.Lock()
	r.held = true
	r.mu.Unlock()
}

// closeAll closes every open shard (they commit).
func (r *reconciler) closeAll(ctx context.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for id := range r.open {
		if err := r.host.closeShard(ctx, id); err != nil {
			r.log.Error("close shard on shutdown", "shard", id, "err", err)
		}
		delete(r.open, id)
	}
}

// openShards lists the open shards (for tests).
func (r *reconciler) openShards() []state.ShardID {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]state.ShardID, 0, len(r.open))
	for id := range r.open {
		out = append(out, id)
	}
	return out
}
