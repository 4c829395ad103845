package replication

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluice-search/sluice/cluster/state"
	"github.com/sluice-search/sluice/cluster/throttle"
	"github.com/sluice-search/sluice/node/engine"
	"github.com/sluice-search/sluice/node/shard"
	nodev1 "github.com/sluice-search/sluice/proto/sluice/node/v1"
)

// StartRecovery is the primary's side of a copy's peer recovery: the
// copy joins the group as tracked (new operations reach it from now), the
// primary refreshes and sends a checkpoint C with a translog retention
// lock above it, waits for the copy to install C, sends it every
// operation above C, adds it to the in-sync set and says done.
func (s *Service) StartRecovery(stream grpc.BidiStreamingServer[nodev1.StartRecoveryRequest, nodev1.StartRecoveryResponse]) error {
	ctx := stream.Context()
	start, err := stream.Recv()
	if err != nil {
		return err
	}
	if err := checkShard(start.GetShard()); err != nil {
		return err
	}
	if start.GetTargetAllocationId() == "" || start.GetTargetNode() == "" {
		return fmt.Errorf("%w: target_allocation_id and target_node are required", ErrInvalid)
	}
	id := stateID(start.GetShard())
	g, err := s.group(id)
	if err != nil {
		return err
	}
	// One of OutgoingRecoveries: the others wait here, before the
	// primary retains translog or refreshes for them.
	queued, active := outgoingQueued.WithLabelValues(s.cfg.NodeID), outgoingActive.WithLabelValues(s.cfg.NodeID)
	queued.Inc()
	select {
	case s.outgoing <- struct{}{}:
		queued.Dec()
		active.Inc()
		defer func() {
			active.Dec()
			<-s.outgoing
		}()
	case <-ctx.Done():
		queued.Dec()
		return ctx.Err()
	}
	t, err := g.track(start.GetTargetAllocationId(), start.GetTargetNode())
	if err != nil {
		return err
	}
	done := false
	defer func() {
		if !done {
			g.untrack(t)
		}
	}()
	g.mu.Lock()
	eng := g.sh.Engine()
	g.mu.Unlock()
	began := time.Now()
	cp, err := refreshedCheckpoint(ctx, eng)
	if err != nil {
		return err
	}
	defer cp.Release()
	release, err := eng.RetainTranslogFrom(cp.SeqNo + 1)
	if err != nil {
		return err
	}
	defer release()
	data, err := cp.MarshalBinary()
	if err != nil {
		return err
	}
	g.mu.Lock()
	gcp := g.gcp
	g.mu.Unlock()
	if err := stream.Send(&nodev1.StartRecoveryResponse{PrimaryTerm: g.term.Load(), Checkpoint: data, GlobalCheckpoint: gcp}); err != nil {
		return err
	}
	installed, err := stream.Recv()
	if err != nil {
		return err
	}
	if !installed.GetInstalled() {
		return fmt.Errorf("%w: recovery of %s: expected the target's installed message", ErrInvalid, t.alloc)
	}
	ops, err := g.sendHistory(ctx, t, eng, cp.SeqNo)
	if err != nil {
		return fmt.Errorf("recovery of %s: operations above %d: %w", t.alloc, cp.SeqNo, err)
	}
	if err := g.joinSynced(ctx, t, eng, cp); err != nil {
		return err
	}
	done = true
	g.log.Info("copy recovered and in sync", "copy", t.alloc, "node", t.node, "files", len(cp.Files),
		"checkpoint_seq_no", cp.SeqNo, "ops", ops, "took", time.Since(began).Round(time.Millisecond))
	return stream.Send(&nodev1.StartRecoveryResponse{PrimaryTerm: g.term.Load(), Done: true, Ops: ops})
}

// track adds a recovering copy to the group (replacing one of the same
// allocation: a retried recovery).
func (g *Group) track(alloc, node string) (*target, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.usableLocked(); err != nil {
		return nil, err
	}
	if alloc == g.alloc {
		return nil, fmt.Errorf("%w: the primary cannot recover from itself", ErrInvalid)
	}
	if old := g.targets[alloc]; old != nil {
		g.dropLocked(old)
	}
	t := &target{alloc: alloc, node: node, lcp: -1, visible: -1}
	g.targets[alloc] = t
	return t, nil
}

// untrack removes a copy whose recovery failed.
func (g *Group) untrack(t *target) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !t.inSync {
		g.dropLocked(t)
	}
}

// joinSynced is a recovery's last segment sync and join, as OpenSearch's
// recovery of a segment-replicated copy forces a last round of segment
// replication before the copy takes a primary's role: segments added
// outside the translog (SyncSegments) since first, the recovery's
// checkpoint, are in no operation the copy got, so with adds held off the
// copy installs the primary's newest checkpoint when it is newer than
// first — and commits it before it answers, as SyncSegments has it; the
// install gives up with ctx, the recovery's, rather than hold the adds
// off — and then joins. Every add before is in that checkpoint; every add
// after counts the copy as in sync and waits for it — a copy in the
// in-sync set, which alone may be handed the primary's role, holds every
// added segment.
func (g *Group) joinSynced(ctx context.Context, t *target, eng *engine.Engine, first *engine.ReplicationCheckpoint) error {
	g.segments.Lock()
	defer g.segments.Unlock()
	cp, err := eng.Checkpoint(ctx)
	if err != nil {
		return err
	}
	defer cp.Release()
	if cp.Newer(first) {
		if err := g.install(ctx, t, cp, true); err != nil {
			return fmt.Errorf("recovery of %s: install checkpoint %d/%d: %w", t.alloc, cp.Term, cp.Version, err)
		}
	}
	return g.join(ctx, t)
}

// join makes a recovered copy in sync: from the moment it counts as in
// sync here, a failure to take an operation removes it from the set in
// etcd (rather than only failing its recovery), so whichever of that and
// AddInSync lands first, the copy never counts as in sync while missing
// an acknowledged operation.
func (g *Group) join(ctx context.Context, t *target) error {
	g.mu.Lock()
	if t.failed {
		g.mu.Unlock()
		return fmt.Errorf("%w: copy %s missed an operation during its recovery", ErrUnavailable, t.alloc)
	}
	t.inSync = true
	g.mu.Unlock()
	if err := g.svc.cfg.Store.AddInSync(ctx, g.id, g.term.Load(), g.alloc, t.alloc); err != nil {
		g.mu.Lock()
		t.inSync = false
		if errors.Is(err, state.ErrStaleTerm) {
			g.stale = fmt.Errorf("%w: shard %s: %v", ErrUnavailable, g.id, err)
		}
		g.mu.Unlock()
		return fmt.Errorf("recovery of %s: add to the in-sync set: %w", t.alloc, err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.latest != nil && g.started {
		g.offerLocked(t, g.latest)
	}
	g.notifyLocked()
	return nil
}

// recover is a replica copy's peer recovery from its primary (the
// target's side of StartRecovery). While the primary is not ready (not
// yet started as primary, unreachable) it tries again for up to
// RecoveryWait.
func (s *Service) recover(ctx context.Context, id state.ShardID, sh *shard.Shard, role Role) error {
	deadline := time.Now().Add(s.cfg.RecoveryWait)
	for attempt := 1; ; attempt++ {
		err := s.recoverOnce(ctx, id, sh, role)
		if err == nil || !retryable(err) || time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		s.log.Info("recovery: primary not ready, trying again", "shard", id, "attempt", attempt, "err", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(min(time.Duration(attempt)*200*time.Millisecond, 2*time.Second)):
		}
		s.mu.Lock()
		if info := s.copies[id]; info != nil {
			role = info.role // a newer primary, maybe
		}
		s.mu.Unlock()
		if st := s.cfg.Cache.State(); st != nil {
			if r := routingOf(st, id); r != nil {
				if p := state.Primary(r); p != nil && st.Live(p.GetNodeId()) {
					role.PrimaryNode, role.PrimaryAllocation = p.GetNodeId(), p.GetAllocationId()
				}
			}
		}
	}
}

// retryable: the primary may become ready (it is opening, promoting,
// unreachable for now).
func retryable(err error) bool {
	if errors.Is(err, ErrUnavailable) || errors.Is(err, shard.ErrNotPrimary) || errors.Is(err, shard.ErrNotHere) {
		return true
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.NotFound, codes.DeadlineExceeded:
		return true
	}
	return false
}

func (s *Service) recoverOnce(ctx context.Context, id state.ShardID, sh *shard.Shard, role Role) error {
	rep := sh.Replica()
	c, err := s.client(role.PrimaryNode)
	if err != nil {
		return err
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.StartRecovery(rctx)
	if err != nil {
		return err
	}
	if err := stream.Send(&nodev1.StartRecoveryRequest{Shard: protoID(id), TargetAllocationId: role.AllocationID, TargetNode: s.cfg.NodeID}); err != nil {
		return err
	}
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	cp, err := engine.DecodeCheckpoint(first.GetCheckpoint())
	if err != nil {
		return fmt.Errorf("%w: recovery checkpoint: %w", ErrInvalid, err)
	}
	if err := rep.SetPrimaryTerm(first.GetPrimaryTerm()); err != nil {
		return err
	}
	rep.UpdateGlobalCheckpoint(first.GetGlobalCheckpoint())
	began := time.Now()
	res, err := rep.Recover(ctx, cp, s.throttled(s.fetcher(id, role.PrimaryNode)))
	if err != nil {
		return fmt.Errorf("recovery: install the primary's checkpoint: %w", err)
	}
	filesTook := time.Since(began)
	if err := stream.Send(&nodev1.StartRecoveryRequest{Installed: true}); err != nil {
		return err
	}
	last, err := stream.Recv()
	if err != nil {
		return err
	}
	if !last.GetDone() {
		return fmt.Errorf("%w: recovery: the primary did not say done", ErrInvalid)
	}
	_ = stream.CloseSend()
	s.log.Info("replica recovered from its primary", "shard", id, "primary", role.PrimaryNode,
		"files_fetched", res.Fetched, "bytes_fetched", res.FetchedBytes, "files_reused", res.Reused,
		"ops", last.GetOps(), "files_took", filesTook.Round(time.Millisecond), "took", time.Since(began).Round(time.Millisecond))
	return nil
}

// throttled paces fetch's bytes at the node's RecoveryBytesPerSec, shared
// by every recovery the node runs: each chunk waits for its bytes before
// it is written.
func (s *Service) throttled(fetch engine.FetchFunc) engine.FetchFunc {
	return func(ctx context.Context, f engine.FileMeta, w io.Writer) error {
		return fetch(ctx, f, &paced{ctx: ctx, rate: s.recoveryRate, w: w})
	}
}

type paced struct {
	ctx  context.Context
	rate *throttle.Throttle
	w    io.Writer
}

func (p *paced) Write(b []byte) (int, error) {
	if err := p.rate.WaitN(p.ctx, len(b)); err != nil {
		return 0, err
	}
	return p.w.Write(b)
}
