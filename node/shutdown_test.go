package node

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/sluice-search/sluice/cluster/metadata"
	"github.com/sluice-search/sluice/cluster/state"
	"github.com/sluice-search/sluice/node/shard"
	statev1 "github.com/sluice-search/sluice/proto/sluice/state/v1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// ready asks n's health service for its readiness.
func ready(t *testing.T, n *Node) bool {
	t.Helper()
	resp, err := n.Health().Check(context.Background(), &healthpb.HealthCheckRequest{Service: ReadinessService})
	if err != nil {
		t.Fatal(err)
	}
	return resp.Status == healthpb.HealthCheckResponse_SERVING
}

// TestReadinessWaitsForRecovery: a restarted node is live from Start but
// ready only once its shard copies are open again, and stays so.
func TestReadinessWaitsForRecovery(t *testing.T) {
	fastProgress(t)
	e := newEnv(t)
	dir := t.TempDir()
	n := e.startNode(t, dir, nil)
	if _, err := e.md.CreateIndex(context.Background(), &sluicev1.CreateIndexRequest{Name: "x", Settings: &sluicev1.IndexSettings{NumberOfShards: 2}}, metadata.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitShards(t, "x", started)
	n.Stop()

	gate := make(chan struct{})
	wrap, _ := gated(gate)
	n = e.startNode(t, dir, wrap)
	defer n.Stop()
	e.waitShards(t, "x", func(sh *sluicev1.ShardRouting) bool {
		return initializing(sh) && sh.Recovery.GetStage() == sluicev1.RecoveryStage_RECOVERY_STAGE_LOADING
	})
	if ready(t, n) {
		t.Fatal("ready while its shards are recovering")
	}
	close(gate)
	e.waitShards(t, "x", started)
	deadline := time.Now().Add(5 * time.Second)
	for !ready(t, n) {
		if time.Now().After(deadline) {
			t.Fatal("not ready once its shards started")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestNotRecovered: what readiness waits for, and what it does not (a
// copy that cannot recover, or is not the node's to recover).
func TestNotRecovered(t *testing.T) {
	const (
		started = sluicev1.ShardState_SHARD_STATE_STARTED
		initing = sluicev1.ShardState_SHARD_STATE_INITIALIZING
		left    = sluicev1.ShardState_SHARD_STATE_NODE_LEFT
		failed  = sluicev1.ShardState_SHARD_STATE_FAILED
	)
	shards := []*statev1.ShardRouting{
		// 0: a replica recovering from a started primary: waited for.
		{Copies: []*statev1.ShardCopy{{NodeId: "n2", Primary: true, State: started}, {NodeId: "n1", State: initing}}},
		// 1: a primary reopening: waited for.
		{Copies: []*statev1.ShardCopy{{NodeId: "n1", Primary: true, State: left}}},
		// 2: a replica whose primary is gone: nothing to recover from.
		{Copies: []*statev1.ShardCopy{{NodeId: "n3", Primary: true, State: left}, {NodeId: "n1", State: initing}}},
		// 3: a replica whose primary's node is not registered.
		{Copies: []*statev1.ShardCopy{{NodeId: "n9", Primary: true, State: started}, {NodeId: "n1", State: initing}}},
		// 4: failed: retried, and shown in health; not waited for.
		{Copies: []*statev1.ShardCopy{{NodeId: "n1", Primary: true, State: failed}}},
		// 5: a relocation target: a move, not a restart.
		{Copies: []*statev1.ShardCopy{{NodeId: "n2", Primary: true, State: started, AllocationId: "p"}, {NodeId: "n1", State: initing, RelocatingFrom: "p"}}},
		// 6: started.
		{Copies: []*statev1.ShardCopy{{NodeId: "n2", Primary: true, State: started}, {NodeId: "n1", State: started}}},
		// 7: not on n1.
		{Copies: []*statev1.ShardCopy{{NodeId: "n2", Primary: true, State: initing}}},
	}
	x := &state.Index{Meta: &statev1.Index{Name: "x", Uuid: "ux"}}
	for _, r := range shards {
		x.Shards = append(x.Shards, &state.Shard{Routing: r})
	}
	st := &state.Snapshot{Nodes: map[string]*state.Node{}, ByUUID: map[string]*state.Index{"ux": x}}
	for _, id := range []string{"n1", "n2", "n3"} {
		st.Nodes[id] = &state.Node{ID: id, Info: &statev1.Node{}}
	}
	want := []string{"x[0] SHARD_STATE_INITIALIZING", "x[1] SHARD_STATE_NODE_LEFT"}
	if diff := cmp.Diff(want, notRecovered(st, "n1")); diff != "" {
		t.Errorf("notRecovered (-want +got):\n%s", diff)
	}
}

// TestShutdownHandsOffPrimaries: a node shut down gracefully hands its
// primary to the in-sync replica while it still runs (so the shard always
// has a primary taking writes), and the new primary holds every
// acknowledged write.
func TestShutdownHandsOffPrimaries(t *testing.T) {
	old := shutdownReadGrace
	shutdownReadGrace = 50 * time.Millisecond
	t.Cleanup(func() { shutdownReadGrace = old })
	rc := newReplicated(t, 2, 1)
	p, r, term := rc.copies(t)
	mustBulk(t, rc.shard(t, p), bulkOps(0, 200), shard.RefreshNone)

	// Watch the routing: the primary must change while p is registered.
	var handedLive atomic.Bool
	stop := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		ctx := context.Background()
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			np, _, nt := rc.copies(t)
			if np != r || nt <= term {
				continue
			}
			resp, err := rc.e.c.Get(ctx, rc.e.store.Keys.Node(p))
			if err == nil && len(resp.Kvs) == 1 {
				handedLive.Store(true)
			}
			return
		}
	}()
	start := time.Now()
	rc.nodes[p].Shutdown(10 * time.Second)
	close(stop)
	<-watched
	if !handedLive.Load() {
		t.Fatalf("the primary was not handed to %s while %s still ran", r, p)
	}
	if took := time.Since(start); took > 8*time.Second {
		t.Errorf("shutdown took %v: it waited for its timeout", took)
	}
	s := rc.waitPrimary(t, r, term)
	for i := range 200 {
		if _, found, err := s.Get(context.Background(), fmt.Appendf(nil, "d%d", i), true); err != nil || !found {
			t.Fatalf("acknowledged d%d after the hand-off: %v %v", i, found, err)
		}
	}
	mustBulk(t, s, bulkOps(200, 220), shard.RefreshNone)
	// Back, it recovers a replica from the new primary.
	rc.start(t, p, "")
	rc.waitGreenWithin(t, 30*time.Second)
	if np, _, _ := rc.copies(t); np != r {
		t.Fatalf("primary %s after the restart, want %s", np, r)
	}
}

// TestShutdownWithoutReplicas: a primary with no other copy is closed at
// once, as before: nothing to wait for.
func TestShutdownWithoutReplicas(t *testing.T) {
	rc := newReplicated(t, 1, 0)
	start := time.Now()
	rc.nodes["n1"].Shutdown(10 * time.Second)
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("shutdown took %v", took)
	}
}
