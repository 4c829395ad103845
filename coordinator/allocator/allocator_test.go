package allocator

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/sluice-search/sluice/cluster/etcdtest"
	"github.com/sluice-search/sluice/cluster/metadata"
	"github.com/sluice-search/sluice/cluster/state"
	statev1 "github.com/sluice-search/sluice/proto/sluice/state/v1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// coordinator runs one allocator with its own client and cache.
func coordinator(t *testing.T, ctx context.Context, endpoints []string, id string) *Allocator {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	store := state.NewStore(c, "")
	cache := state.NewCache(store, quiet())
	a := New(Config{Store: store, Cache: cache, ID: id, SessionTTL: time.Second, Interval: 200 * time.Millisecond, Logger: quiet()})
	done := make(chan struct{}, 2)
	go func() { cache.Run(ctx); done <- struct{}{} }()
	go func() { a.Run(ctx); done <- struct{}{} }()
	t.Cleanup(func() { <-done; <-done })
	return a
}

func addNode(t *testing.T, s *state.Store, id, zone string) {
	t.Helper()
	var tx state.Txn
	tx.Put(s.Keys.Node(id), &statev1.Node{Address: "127.0.0.1:1", Zone: zone, DiskFreeBytes: 100, DiskTotalBytes: 200})
	if err := s.Commit(context.Background(), &tx); err != nil {
		t.Fatal(err)
	}
}

func waitIndex(t *testing.T, s *state.Store, name string, pred func(*sluicev1.IndexInfo) bool) *sluicev1.IndexInfo {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	var info *sluicev1.IndexInfo
	for time.Now().Before(deadline) {
		st, err := s.Load(context.Background())
		if err == nil && st.Indices[name] != nil {
			info = st.Info(st.Indices[name])
			if pred(info) {
				return info
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("index %s never reached the expected routing; last %v", name, info.GetShards())
	return nil
}

func allAssigned(info *sluicev1.IndexInfo) bool {
	for _, sh := range info.Shards {
		if sh.NodeId == "" || sh.State != sluicev1.ShardState_SHARD_STATE_INITIALIZING {
			return false
		}
	}
	return true
}

func TestElectionFailoverAndPlacement(t *testing.T) {
	srv := etcdtest.Start(t)
	c := etcdtest.Client(t, srv)
	s := state.NewStore(c, "")
	md := metadata.New(s)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addNode(t, s, "n1", "a")
	addNode(t, s, "n2", "b")

	a1 := coordinator(t, ctx, srv.Endpoints(), "c1")
	a2 := coordinator(t, ctx, srv.Endpoints(), "c2")

	if _, err := md.CreateIndex(ctx, &sluicev1.CreateIndexRequest{Name: "one",
		Settings: &sluicev1.IndexSettings{NumberOfShards: 4}}, metadata.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	info := waitIndex(t, s, "one", allAssigned)
	perNode := map[string]int{}
	for _, sh := range info.Shards {
		perNode[sh.NodeId]++
	}
	if perNode["n1"] != 2 || perNode["n2"] != 2 {
		t.Errorf("placement %v, want 2 per node", perNode)
	}

	leaderID, err := Leader(ctx, c, s.Keys)
	if err != nil || (leaderID != "c1" && leaderID != "c2") {
		t.Fatalf("Leader = %q, %v", leaderID, err)
	}
	if a1.IsLeader() == a2.IsLeader() {
		t.Fatalf("leader flags c1=%v c2=%v", a1.IsLeader(), a2.IsLeader())
	}
	// Kill the leader's session by revoking its lease, as if its process
	// had died: the other coordinator must take over and place shards.
	resp, err := c.Get(ctx, s.Keys.Election()+"/", clientv3.WithFirstCreate()...)
	if err != nil || len(resp.Kvs) == 0 {
		t.Fatalf("election key: %v", err)
	}
	if _, err := c.Revoke(ctx, clientv3.LeaseID(resp.Kvs[0].Lease)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		id, _ := Leader(ctx, c, s.Keys)
		if id != "" && id != leaderID {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("leadership stayed with %s", leaderID)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := md.CreateIndex(ctx, &sluicev1.CreateIndexRequest{Name: "two",
		Settings: &sluicev1.IndexSettings{NumberOfShards: 2}}, metadata.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitIndex(t, s, "two", allAssigned)
}

func TestNodeLeftWaitsForNode(t *testing.T) {
	srv := etcdtest.Start(t)
	c := etcdtest.Client(t, srv)
	s := state.NewStore(c, "")
	md := metadata.New(s)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addNode(t, s, "n1", "")
	addNode(t, s, "n2", "")
	coordinator(t, ctx, srv.Endpoints(), "c1")
	if _, err := md.CreateIndex(ctx, &sluicev1.CreateIndexRequest{Name: "x",
		Settings: &sluicev1.IndexSettings{NumberOfShards: 2}}, metadata.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	before := waitIndex(t, s, "x", allAssigned)
	for i, sh := range before.Shards { // started, as their nodes would report
		if err := s.SetShardState(ctx, state.ShardID{Index: before.Uuid, Shard: i}, sh.NodeId, sh.AllocationId,
			state.ShardReport{State: sluicev1.ShardState_SHARD_STATE_STARTED}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Delete(ctx, s.Keys.Node("n1")); err != nil {
		t.Fatal(err)
	}
	after := waitIndex(t, s, "x", func(info *sluicev1.IndexInfo) bool {
		for _, sh := range info.Shards {
			if sh.NodeId == "n1" && sh.State == sluicev1.ShardState_SHARD_STATE_NODE_LEFT {
				return true
			}
		}
		return false
	})
	for i, sh := range after.Shards {
		if sh.NodeId != before.Shards[i].NodeId || sh.AllocationId != before.Shards[i].AllocationId {
			t.Errorf("shard %d moved: %v -> %v", i, before.Shards[i], sh)
		}
	}
	if after.Health != sluicev1.HealthStatus_HEALTH_STATUS_RED {
		t.Errorf("health %v", after.Health)
	}
}

func TestPlanNoNodes(t *testing.T) {
	srv := etcdtest.Start(t)
	s := state.NewStore(etcdtest.Client(t, srv), "")
	md := metadata.New(s)
	if _, err := md.CreateIndex(context.Background(), &sluicev1.CreateIndexRequest{Name: "x"}, metadata.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	st, _ := s.Load(context.Background())
	n := 0
	changes, _ := Plan(Input{State: st, Keys: s.Keys, Now: time.Now(), NewID: func() string { n++; return fmt.Sprint(n) }})
	if p := state.Primary(changes[0].Routing); len(changes) != 1 || p.Reason != "no live data nodes" || p.NodeId != "" {
		t.Errorf("plan = %v", changes)
	}
}
