package replication

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-search/sluice/cluster/state"
	"github.com/sluice-search/sluice/node/engine"
	"github.com/sluice-search/sluice/node/engine/translog"
	"github.com/sluice-search/sluice/node/shard"
	nodev1 "github.com/sluice-search/sluice/proto/sluice/node/v1"
	statev1 "github.com/sluice-search/sluice/proto/sluice/state/v1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// Group is a primary copy's replication group (shard.Replicator): the
// in-sync copies, and the tracked copies — recovering, they receive new
// operations but are not in sync yet. It sends the primary's operations
// to every copy, fails a copy that does not take them out of the in-sync
// set before anything is acknowledged, tracks the global checkpoint and
// publishes each refresh's checkpoint.
type Group struct {
	svc   *Service
	id    state.ShardID
	alloc string
	term  atomic.Int64
	log   *slog.Logger

	// segments is held for reading by SyncSegments while it adds
	// segments outside the translog and syncs them, and for writing by a
	// recovery's last checkpoint and join: a copy joins the in-sync set
	// either holding every add or counted by the adds after it.
	segments sync.RWMutex

	mu      sync.Mutex
	sh      *shard.Shard
	targets map[string]*target // by allocation id
	gcp     int64
	// changed is closed and replaced when a copy's visible seqNo or the
	// set of copies changes (WaitVisible).
	changed chan struct{}
	latest  *engine.ReplicationCheckpoint // retained by the group
	// stale: the primary may no longer be primary (a failed copy could
	// not be removed, or the routing shows another primary or a newer
	// term); it acknowledges nothing until the routing shows it current.
	stale  error
	closed bool

	stop    chan struct{}
	done    chan struct{}
	started bool
	sends   sync.WaitGroup // checkpoint senders
}

// target is one other copy of the group.
type target struct {
	alloc, node string
	// inSync: in the in-sync set (else tracked: recovering). failed: a
	// tracked copy that missed an operation (its recovery fails).
	inSync, failed bool
	lcp, visible   int64
	// sending: a checkpoint sender runs; pending is the next checkpoint
	// for it (latest wins).
	sending bool
	pending *engine.ReplicationCheckpoint
	// since: when the oldest checkpoint offered and not yet shown was
	// published (zero: none waits); the replica lag histogram measures
	// from it.
	since time.Time
}

func newGroup(svc *Service, id state.ShardID, alloc string, term int64) *Group {
	g := &Group{svc: svc, id: id, alloc: alloc, log: svc.log.With("shard", id.String(), "group", alloc),
		targets: map[string]*target{}, gcp: -1, changed: make(chan struct{}),
		stop: make(chan struct{}), done: make(chan struct{})}
	g.term.Store(term)
	return g
}

// attach gives the group its open primary and the global checkpoint
// known (-1: none).
func (g *Group) attach(sh *shard.Shard, gcp int64) {
	g.mu.Lock()
	g.sh, g.gcp = sh, gcp
	g.mu.Unlock()
}

func (g *Group) setTerm(term int64) {
	g.term.Store(term)
}

// notifyLocked wakes WaitVisible, with g.mu held.
func (g *Group) notifyLocked() {
	close(g.changed)
	g.changed = make(chan struct{})
}

// follow takes the shard's routing entry: in-sync copies join the group,
// copies that are gone, failed or moved leave it, and the primary's own
// standing (primary at its term, or not) decides whether it may
// acknowledge.
func (g *Group) follow(r *statev1.ShardRouting) {
	g.mu.Lock()
	defer g.mu.Unlock()
	term := g.term.Load()
	p := state.Primary(r)
	switch {
	case p.GetAllocationId() != g.alloc:
		g.stale = fmt.Errorf("%w: shard %s: copy %s is no longer the primary (primary %s, term %d)", ErrUnavailable, g.id, g.alloc, p.GetAllocationId(), r.GetPrimaryTerm())
	case r.GetPrimaryTerm() > term:
		g.stale = fmt.Errorf("%w: shard %s: primary term %d is newer than this primary's %d", ErrUnavailable, g.id, r.GetPrimaryTerm(), term)
	case r.GetPrimaryTerm() == term:
		g.stale = nil
	}
	var joined []*target
	for _, c := range r.GetCopies() {
		a := c.GetAllocationId()
		if a == "" || a == g.alloc || c.GetNodeId() == "" || !state.InSync(r, a) {
			continue
		}
		if t := g.targets[a]; t == nil {
			t = &target{alloc: a, node: c.GetNodeId(), inSync: true, lcp: -1, visible: -1}
			g.targets[a] = t
			joined = append(joined, t)
		}
	}
	for a, t := range g.targets {
		c := state.CopyByAllocation(r, a)
		if c == nil || c.GetNodeId() != t.node ||
			c.GetState() == sluicev1.ShardState_SHARD_STATE_FAILED || c.GetState() == sluicev1.ShardState_SHARD_STATE_UNASSIGNED {
			g.dropLocked(t)
		}
	}
	for _, t := range joined {
		if g.latest != nil && g.started {
			g.offerLocked(t, g.latest)
		}
	}
	if len(joined) > 0 {
		g.notifyLocked()
	}
}

// dropLocked removes a copy from the group, with g.mu held.
func (g *Group) dropLocked(t *target) {
	if g.targets[t.alloc] == t {
		delete(g.targets, t.alloc)
	}
	t.failed = true
	if t.pending != nil {
		t.pending.Release()
		t.pending = nil
	}
	g.notifyLocked()
}

// Replicate sends ops to every copy of the group at once; the wait
// returns once each in-sync copy has them durably or has been removed
// from the in-sync set (shard.Replicator).
func (g *Group) Replicate(ctx context.Context, ops []translog.Op) func() error {
	g.mu.Lock()
	if err := g.usableLocked(); err != nil {
		g.mu.Unlock()
		return func() error { return err }
	}
	targets := make([]*target, 0, len(g.targets))
	for _, t := range g.targets {
		targets = append(targets, t)
	}
	gcp := g.gcp
	g.mu.Unlock()
	if len(targets) == 0 {
		return func() error { return nil }
	}
	pops := toProtoOps(ops)
	term := g.term.Load()
	type result struct {
		t    *target
		resp *nodev1.ReplicateOpsResponse
		err  error
	}
	results := make(chan result, len(targets))
	// Not the caller's context: a client giving up must not fail a copy.
	sctx := context.WithoutCancel(ctx)
	for _, t := range targets {
		go func() {
			resp, err := g.sendOps(sctx, t, term, gcp, pops)
			results <- result{t, resp, err}
		}()
	}
	return func() error {
		var errs []error
		for range targets {
			r := <-results
			if r.err == nil {
				g.progress(r.t, r.resp.GetLocalCheckpoint())
				continue
			}
			if err := g.fail(sctx, r.t, r.err); err != nil {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	}
}

// usableLocked says why the group acknowledges nothing, with g.mu held.
func (g *Group) usableLocked() error {
	switch {
	case g.closed:
		return fmt.Errorf("%w: shard %s: the primary copy is closing", ErrUnavailable, g.id)
	case g.stale != nil:
		return g.stale
	}
	return nil
}

// sendOps sends one ReplicateOps to a copy.
func (g *Group) sendOps(ctx context.Context, t *target, term, gcp int64, ops []*nodev1.ReplicatedOp) (*nodev1.ReplicateOpsResponse, error) {
	c, err := g.svc.client(t.node)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, g.svc.cfg.OpsTimeout)
	defer cancel()
	return c.ReplicateOps(ctx, &nodev1.ReplicateOpsRequest{Shard: protoID(g.id), AllocationId: t.alloc,
		PrimaryTerm: term, GlobalCheckpoint: gcp, Ops: ops})
}

// progress records a copy's local checkpoint and raises the global
// checkpoint: the lowest local checkpoint of the in-sync copies.
func (g *Group) progress(t *target, lcp int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	t.lcp = max(t.lcp, lcp)
	low, any := int64(-1), false
	for _, o := range g.targets {
		if !o.inSync {
			continue
		}
		if !any || o.lcp < low {
			low = o.lcp
		}
		any = true
	}
	if any && low > g.gcp {
		g.gcp = low
	}
}

// fail handles a copy that did not take an operation: a tracked copy
// leaves the group (its recovery fails); an in-sync copy is removed from
// the in-sync set in etcd first — guarded by this primary's term — and if
// that fails, the primary is stale and the error says nothing may be
// acknowledged.
func (g *Group) fail(ctx context.Context, t *target, cause error) error {
	g.mu.Lock()
	if !t.inSync {
		g.dropLocked(t)
		g.mu.Unlock()
		g.log.Warn("recovering copy failed to take operations; its recovery fails", "copy", t.alloc, "node", t.node, "err", cause)
		return nil
	}
	g.mu.Unlock()
	term := g.term.Load()
	reason := fmt.Sprintf("node [%s] failed to take operations from the primary (term %d): %v", t.node, term, cause)
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	err := g.svc.cfg.Store.RemoveInSync(rctx, g.id, term, g.alloc, t.alloc, reason)
	cancel()
	g.mu.Lock()
	defer g.mu.Unlock()
	if err != nil {
		g.stale = fmt.Errorf("%w: shard %s: copy %s on node [%s] failed (%v) and could not be removed from the in-sync set: %v",
			ErrUnavailable, g.id, t.alloc, t.node, cause, err)
		g.log.Error("primary stops acknowledging: a failed copy could not leave the in-sync set", "copy", t.alloc, "err", err)
		return g.stale
	}
	g.log.Warn("copy removed from the in-sync set", "copy", t.alloc, "node", t.node, "cause", cause)
	g.dropLocked(t)
	return nil
}

// WaitVisible returns once seq is visible on every in-sync copy; a copy
// that does not show it within VisibleTimeout is failed.
func (g *Group) WaitVisible(ctx context.Context, seq int64) error {
	timer := time.NewTimer(g.svc.cfg.VisibleTimeout)
	defer timer.Stop()
	for {
		g.mu.Lock()
		if err := g.usableLocked(); err != nil {
			g.mu.Unlock()
			return err
		}
		var lag []*target
		for _, t := range g.targets {
			if t.inSync && t.visible < seq {
				lag = append(lag, t)
			}
		}
		ch := g.changed
		g.mu.Unlock()
		if len(lag) == 0 {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("shard %s: waiting for seq %d on the replicas: %w", g.id, seq, ctx.Err())
		case <-timer.C:
			for _, t := range lag {
				if err := g.fail(ctx, t, fmt.Errorf("seq %d not visible within %v", seq, g.svc.cfg.VisibleTimeout)); err != nil {
					return err
				}
			}
		}
	}
}

// SyncSegments runs add, refreshes, and sends the checkpoint that holds
// what add did to every in-sync copy at once, as Replicate sends
// operations: it returns once each has installed and committed it (what
// add did is in no translog) or has been removed from the in-sync set
// (shard.Replicator).
func (g *Group) SyncSegments(ctx context.Context, add func(context.Context) error) error {
	g.segments.RLock()
	defer g.segments.RUnlock()
	g.mu.Lock()
	err := g.usableLocked()
	if err == nil && g.sh == nil {
		err = fmt.Errorf("%w: shard %s: the primary copy is opening", ErrUnavailable, g.id)
	}
	sh := g.sh
	g.mu.Unlock()
	if err != nil {
		return err
	}
	if err := add(ctx); err != nil {
		return err
	}
	cp, err := refreshedCheckpoint(ctx, sh.Engine())
	if err != nil {
		return err
	}
	defer cp.Release()
	targets := g.inSync()
	// Not the caller's context: a client giving up must not fail a copy.
	sctx := context.WithoutCancel(ctx)
	errs := make([]error, len(targets))
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Go(func() {
			if err := g.install(sctx, t, cp, true); err != nil {
				errs[i] = g.fail(sctx, t, fmt.Errorf("install checkpoint %d/%d of added segments: %w", cp.Term, cp.Version, err))
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.usableLocked()
}

// refreshedCheckpoint refreshes eng and returns a checkpoint of what it
// shows then, retained for the caller.
func refreshedCheckpoint(ctx context.Context, eng *engine.Engine) (*engine.ReplicationCheckpoint, error) {
	if _, err := eng.Refresh(ctx); err != nil {
		return nil, err
	}
	return eng.Checkpoint(ctx)
}

// install sends cp to t and waits until t has installed it (or a newer
// one), recording what t shows.
func (g *Group) install(ctx context.Context, t *target, cp *engine.ReplicationCheckpoint, commit bool) error {
	g.mu.Lock()
	gcp := g.gcp
	g.mu.Unlock()
	visible, err := g.sendCheckpoint(ctx, t, cp, gcp, commit)
	if err != nil {
		return err
	}
	g.mu.Lock()
	if visible > t.visible {
		t.visible = visible
		g.notifyLocked()
	}
	g.mu.Unlock()
	return nil
}

// start begins publishing checkpoints after each refresh.
func (g *Group) start() {
	g.mu.Lock()
	g.started = true
	eng := g.sh.Engine()
	g.mu.Unlock()
	go g.publishLoop(eng)
}

// publishLoop takes a checkpoint after each refresh and publishes it.
func (g *Group) publishLoop(eng *engine.Engine) {
	defer close(g.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-g.stop
		cancel()
	}()
	for {
		ch := eng.RefreshNotify()
		cp, err := eng.Checkpoint(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			g.log.Warn("replication checkpoint", "err", err)
		} else {
			g.publish(cp)
		}
		select {
		case <-g.stop:
			return
		case <-ch:
		}
		select {
		case <-g.stop:
			return
		default:
		}
	}
}

// publish makes cp (retained for the group) the latest checkpoint and
// offers it to every in-sync copy.
func (g *Group) publish(cp *engine.ReplicationCheckpoint) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed || (g.latest != nil && !cp.Newer(g.latest)) {
		cp.Release()
		return
	}
	if g.latest != nil {
		g.latest.Release()
	}
	g.latest = cp
	for _, t := range g.targets {
		if t.inSync {
			g.offerLocked(t, cp)
		}
	}
}

// offerLocked queues cp for t (latest wins), with g.mu held.
func (g *Group) offerLocked(t *target, cp *engine.ReplicationCheckpoint) {
	if g.closed || t.failed {
		return
	}
	if t.pending != nil {
		t.pending.Release()
	}
	t.pending = cp.Retain()
	if t.since.IsZero() {
		t.since = time.Now()
	}
	if !t.sending {
		t.sending = true
		g.sends.Go(func() { g.sendCheckpoints(t) })
	}
}

// sendCheckpoints sends t its pending checkpoints until none is left.
func (g *Group) sendCheckpoints(t *target) {
	for {
		g.mu.Lock()
		cp, since := t.pending, t.since
		t.pending, t.since = nil, time.Time{}
		if cp == nil || g.closed || t.failed {
			t.sending = false
			g.mu.Unlock()
			if cp != nil {
				cp.Release()
			}
			return
		}
		g.mu.Unlock()
		err := g.install(context.Background(), t, cp, false)
		cp.Release()
		g.mu.Lock()
		if err != nil && (t.since.IsZero() || since.Before(t.since)) {
			t.since = since // still not shown
		}
		sh := g.sh
		g.mu.Unlock()
		if err != nil {
			g.log.Warn("publish checkpoint", "copy", t.alloc, "node", t.node, "err", err)
		} else {
			observeLag(sh, time.Since(since))
		}
	}
}

// sendCheckpoint has t install cp — and, if commit, commit it before it
// answers — within ctx, the group's life and a 10-minute bound.
func (g *Group) sendCheckpoint(ctx context.Context, t *target, cp *engine.ReplicationCheckpoint, gcp int64, commit bool) (int64, error) {
	data, err := cp.MarshalBinary()
	if err != nil {
		return 0, err
	}
	c, err := g.svc.client(t.node)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	go func() {
		select {
		case <-g.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	resp, err := c.PublishCheckpoint(ctx, &nodev1.PublishCheckpointRequest{Shard: protoID(g.id), AllocationId: t.alloc,
		PrimaryTerm: g.term.Load(), GlobalCheckpoint: gcp, Checkpoint: data, PrimaryNode: g.svc.cfg.NodeID,
		Commit: commit})
	if err != nil {
		return 0, err
	}
	return resp.GetVisibleSeqNo(), nil
}

// inSync lists the group's in-sync copies.
func (g *Group) inSync() []*target {
	g.mu.Lock()
	defer g.mu.Unlock()
	var targets []*target
	for _, t := range g.targets {
		if t.inSync {
			targets = append(targets, t)
		}
	}
	return targets
}

// preCopy sends a merged segment's files to every in-sync copy before the
// merge commits (engine.Options.MergedSegmentPreCopy).
func (g *Group) preCopy(ctx context.Context, files []engine.FileMeta) error {
	targets := g.inSync()
	metas := make([]*nodev1.FileMeta, len(files))
	for i, f := range files {
		metas[i] = &nodev1.FileMeta{Name: f.Name, Length: f.Length, Checksum: f.Checksum}
	}
	errs := make([]error, len(targets))
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Go(func() {
			c, err := g.svc.client(t.node)
			if err == nil {
				_, err = c.PreCopyFiles(ctx, &nodev1.PreCopyFilesRequest{Shard: protoID(g.id), AllocationId: t.alloc,
					PrimaryTerm: g.term.Load(), Files: metas, PrimaryNode: g.svc.cfg.NodeID})
			}
			if err != nil {
				errs[i] = fmt.Errorf("copy %s on node [%s]: %w", t.alloc, t.node, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// resyncAll resyncs every in-sync copy with this primary's history: each
// writes a trim record (operations of older terms above the primary's
// highest seqNo are void) and gets the primary's operations above the
// global checkpoint (or its own local checkpoint). A copy that fails is
// removed from the in-sync set.
func (g *Group) resyncAll(ctx context.Context) {
	targets := g.inSync()
	var wg sync.WaitGroup
	for _, t := range targets {
		wg.Go(func() {
			n, err := g.resync(ctx, t)
			if err != nil {
				if ferr := g.fail(ctx, t, fmt.Errorf("resync: %w", err)); ferr != nil {
					g.log.Error("resync", "copy", t.alloc, "err", ferr)
				}
				return
			}
			g.log.Info("copy resynced", "copy", t.alloc, "node", t.node, "ops", n)
		})
	}
	wg.Wait()
}

func (g *Group) resync(ctx context.Context, t *target) (int64, error) {
	c, err := g.svc.client(t.node)
	if err != nil {
		return 0, err
	}
	g.mu.Lock()
	eng, gcp := g.sh.Engine(), g.gcp
	g.mu.Unlock()
	term := g.term.Load()
	rctx, cancel := context.WithTimeout(ctx, g.svc.cfg.OpsTimeout)
	resp, err := c.Resync(rctx, &nodev1.ResyncRequest{Shard: protoID(g.id), AllocationId: t.alloc, PrimaryTerm: term,
		TrimAboveSeqNo: max(eng.Writer().MaxSeqNo(), 0), GlobalCheckpoint: gcp})
	cancel()
	if err != nil {
		return 0, err
	}
	from := resp.GetLocalCheckpoint()
	if gcp >= 0 {
		from = min(from, gcp)
	}
	return g.sendHistory(ctx, t, eng, from)
}

// sendHistory sends t the primary's logged operations above seqNo.
func (g *Group) sendHistory(ctx context.Context, t *target, eng *engine.Engine, above int64) (int64, error) {
	snap, err := eng.TranslogSnapshot(ctx, above)
	if err != nil {
		return 0, err
	}
	defer snap.Close()
	const maxOps, maxBytes = 1000, 4 << 20
	var batch []*nodev1.ReplicatedOp
	var bytes int
	var sent int64
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		g.mu.Lock()
		gcp := g.gcp
		g.mu.Unlock()
		resp, err := g.sendOps(ctx, t, g.term.Load(), gcp, batch)
		if err != nil {
			return err
		}
		g.progress(t, resp.GetLocalCheckpoint())
		sent += int64(len(batch))
		batch, bytes = nil, 0
		return nil
	}
	for {
		op, err := snap.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return sent, err
		}
		p := copyProtoOp(op)
		batch = append(batch, p)
		bytes += len(p.Id) + len(p.Source) + len(p.Routing)
		if len(batch) >= maxOps || bytes >= maxBytes {
			if err := flush(); err != nil {
				return sent, err
			}
		}
	}
	return sent, flush()
}

// close stops the group: checkpoints are no longer published, and
// Replicate fails.
func (g *Group) close() {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return
	}
	g.closed = true
	started := g.started
	if g.latest != nil {
		g.latest.Release()
		g.latest = nil
	}
	for _, t := range g.targets {
		if t.pending != nil {
			t.pending.Release()
			t.pending = nil
		}
	}
	g.notifyLocked()
	g.mu.Unlock()
	close(g.stop)
	if started {
		<-g.done
	}
	g.sends.Wait()
}
