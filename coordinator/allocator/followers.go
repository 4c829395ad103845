package allocator

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/sluice-search/sluice/cluster/state"
)

// Follower checks (Elasticsearch's FollowersChecker): while it leads, the
// allocator asks every registered data node's gRPC health service whether
// it serves, every FollowerCheckInterval. A node whose process is gone is
// known within one interval — the call fails at once, connection refused —
// rather than when its lease runs out (10 s): one failed check that could
// not reach the node (UNAVAILABLE) or found it not serving fails the node
// at once, as Elasticsearch fails a disconnected node; a check that times
// out or fails otherwise counts, and FollowerCheckRetries of them in a row
// fail it. A failed node counts as gone for allocation (Plan): its copies
// are NODE_LEFT and its primaries replaced by in-sync replicas, which is
// safe while the node may still run — cut off from this coordinator but
// not from etcd or its replicas — because the promotion raises the primary
// term, and every copy refuses operations of an older term, so the old
// primary can no longer acknowledge a write. One passing check makes it
// available again.

// followers runs the follower checks of the registered nodes.
type followers struct {
	conn     func(addr string) (grpc.ClientConnInterface, error)
	interval time.Duration
	timeout  time.Duration
	retries  int
	log      *slog.Logger
	changed  chan struct{} // a value after a verdict changes

	mu    sync.Mutex
	nodes map[string]*follower
	wg    sync.WaitGroup
}

type follower struct {
	addr     string
	lease    int64 // the registration checked
	cancel   context.CancelFunc
	failures int    // checks failed in a row
	reason   string // why the node failed; "" while it passes
}

func newFollowers(conn func(string) (grpc.ClientConnInterface, error), interval, timeout time.Duration, retries int, log *slog.Logger) *followers {
	return &followers{conn: conn, interval: interval, timeout: timeout, retries: retries, log: log,
		changed: make(chan struct{}, 1), nodes: map[string]*follower{}}
}

// sync checks the nodes registered in st: it starts checking new ones
// (and ones whose address or lease changed) and stops checking those that
// left. A new lease is a new registration — a restarted process, which
// registers once it has marked its copies recovering — so the verdict on
// the process before it is dropped at once rather than at the next check:
// its copies come back INITIALIZING and their recovery's progress shows.
func (f *followers) sync(ctx context.Context, st *state.Snapshot) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for id, fl := range f.nodes {
		if n, ok := st.Nodes[id]; !ok || n.Info.GetAddress() != fl.addr || n.Lease != fl.lease {
			fl.cancel()
			delete(f.nodes, id)
		}
	}
	for id, n := range st.Nodes {
		if _, ok := f.nodes[id]; ok {
			continue
		}
		cctx, cancel := context.WithCancel(ctx)
		fl := &follower{addr: n.Info.GetAddress(), lease: n.Lease, cancel: cancel}
		f.nodes[id] = fl
		f.wg.Go(func() { f.run(cctx, id, fl) })
	}
}

// stop ends every check and forgets every verdict.
func (f *followers) stop() {
	f.mu.Lock()
	for id, fl := range f.nodes {
		fl.cancel()
		delete(f.nodes, id)
	}
	f.mu.Unlock()
	f.wg.Wait()
}

// unreachable returns the failed nodes with why.
func (f *followers) unreachable() map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]string{}
	for id, fl := range f.nodes {
		if fl.reason != "" {
			out[id] = fl.reason
		}
	}
	return out
}

func (f *followers) run(ctx context.Context, id string, fl *follower) {
	t := time.NewTicker(f.interval)
	defer t.Stop()
	for {
		err := f.check(ctx, fl.addr)
		if ctx.Err() != nil {
			return
		}
		f.record(id, fl, err)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// check asks a node's health service once.
func (f *followers) check(ctx context.Context, addr string) error {
	conn, err := f.conn(addr)
	if err != nil {
		return status.Error(codes.Unavailable, err.Error())
	}
	cctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	resp, err := healthpb.NewHealthClient(conn).Check(cctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		return err
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return status.Errorf(codes.Unavailable, "not serving (%s)", resp.GetStatus())
	}
	return nil
}

// record takes a check's outcome into the node's verdict.
func (f *followers) record(id string, fl *follower, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.nodes[id] != fl {
		return // stopped meanwhile
	}
	before := fl.reason
	if err == nil {
		fl.failures, fl.reason = 0, ""
		if before != "" {
			f.log.Info("follower check passes again", "node", id)
		}
	} else {
		fl.failures++
		if fl.reason == "" && (status.Code(err) == codes.Unavailable || fl.failures >= f.retries) {
			fl.reason = fmt.Sprintf("follower check failed (%d in a row, at %s): %v", fl.failures, fl.addr, err)
			f.log.Warn("node failed its follower checks", "node", id, "failures", fl.failures, "err", err)
		}
	}
	if fl.reason != before {
		select {
		case f.changed <- struct{}{}:
		default:
		}
	}
}
