package allocator

import (
	"context"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/sluice-search/sluice/cluster/etcdtest"
	"github.com/sluice-search/sluice/cluster/state"
	nodev1 "github.com/sluice-search/sluice/proto/sluice/node/v1"
	statev1 "github.com/sluice-search/sluice/proto/sluice/state/v1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// fakeNode serves what the allocator asks of a data node — health and
// GetCopyState — on a real loopback listener. A narrow stand-in: the
// node's replication service is another package's (and not there yet).
type fakeNode struct {
	nodev1.UnimplementedReplicationServer
	addr       string
	srv        *grpc.Server
	checkpoint int64 // 0: answer UNIMPLEMENTED
}

func (f *fakeNode) GetCopyState(context.Context, *nodev1.GetCopyStateRequest) (*nodev1.GetCopyStateResponse, error) {
	if f.checkpoint == 0 {
		return nil, status.Error(codes.Unimplemented, "no replication here")
	}
	return &nodev1.GetCopyStateResponse{PrimaryTerm: 1, LocalCheckpoint: f.checkpoint}, nil
}

func startFakeNode(t *testing.T, checkpoint int64) *fakeNode {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeNode{addr: lis.Addr().String(), srv: grpc.NewServer(), checkpoint: checkpoint}
	h := health.NewServer()
	healthpb.RegisterHealthServer(f.srv, h)
	nodev1.RegisterReplicationServer(f.srv, f)
	go f.srv.Serve(lis)
	t.Cleanup(f.srv.Stop)
	return f
}

// TestFollowerCheckFailover: a node whose process is gone — its server
// stopped, its lease still live — fails its follower check within about a
// second; its primary is replaced, in one write at term + 1, by the
// in-sync replica that says it is furthest ahead, and a replica out of
// the in-sync set is never chosen.
func TestFollowerCheckFailover(t *testing.T) {
	srv := etcdtest.Start(t)
	c := etcdtest.Client(t, srv)
	s := state.NewStore(c, "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	nodes := map[string]*fakeNode{
		"n1": startFakeNode(t, 500), // the primary
		"n2": startFakeNode(t, 100), // in sync, behind
		"n3": startFakeNode(t, 300), // in sync, ahead
		"n4": startFakeNode(t, 900), // recovering: not in sync
	}
	var tx state.Txn
	for id, n := range nodes {
		tx.Put(s.Keys.Node(id), &statev1.Node{Address: n.addr})
	}
	tx.Put(s.Keys.Index("x"), &statev1.Index{Name: "x", Uuid: "ux", Settings: &sluicev1.IndexSettings{
		NumberOfShards: 1, NumberOfRoutingShards: 1, NumberOfReplicas: 3}})
	tx.Put(s.Keys.Shard("ux", 0), &statev1.ShardRouting{PrimaryTerm: 4, InSync: []string{"p", "r2", "r3"}, Copies: []*statev1.ShardCopy{
		{NodeId: "n1", AllocationId: "p", Primary: true, State: started},
		{NodeId: "n2", AllocationId: "r2", State: started},
		{NodeId: "n3", AllocationId: "r3", State: started},
		{NodeId: "n4", AllocationId: "r4", State: initializing},
	}})
	if err := s.Commit(ctx, &tx); err != nil {
		t.Fatal(err)
	}
	cache := state.NewCache(s, quiet())
	conns := map[string]*grpc.ClientConn{}
	for _, n := range nodes {
		cc, err := grpc.NewClient(n.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		conns[n.addr] = cc
	}
	conn := func(addr string) (grpc.ClientConnInterface, error) { return conns[addr], nil }
	t.Cleanup(func() {
		for _, cc := range conns {
			cc.Close()
		}
	})
	a := New(Config{Store: s, Cache: cache, ID: "c1", SessionTTL: time.Second, Interval: time.Hour, Conn: conn,
		FollowerCheckInterval: 200 * time.Millisecond, Logger: quiet()})
	done := make(chan struct{}, 2)
	go func() { cache.Run(ctx); done <- struct{}{} }()
	go func() { a.Run(ctx); done <- struct{}{} }()
	t.Cleanup(func() { cancel(); <-done; <-done })
	for !a.IsLeader() {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // a passing round of checks: nothing changes
	if r := load(t, s); r.PrimaryTerm != 4 {
		t.Fatalf("routing changed while every node passed its checks: %v", r)
	}

	killed := time.Now()
	nodes["n1"].srv.Stop()
	var r *statev1.ShardRouting
	for deadline := time.Now().Add(5 * time.Second); ; {
		if r = load(t, s); r.PrimaryTerm != 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no promotion after the primary's node stopped: %v", r)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if took := time.Since(killed); took > 1500*time.Millisecond {
		t.Errorf("promotion took %v after the process stopped", took)
	}
	p := state.Primary(r)
	if r.PrimaryTerm != 5 || p.GetAllocationId() != "r3" || r.Copies[0] != p {
		t.Fatalf("promoted %v at term %d, want r3 (furthest ahead of the in-sync copies) at term 5", p, r.PrimaryTerm)
	}
	old := state.CopyOnNode(r, "n1")
	if old.GetState() != nodeLeft || old.GetPrimary() || state.InSync(r, old.GetAllocationId()) || old.GetAllocationId() == "p" {
		t.Errorf("the old primary's copy is %v (in sync %v), want a NODE_LEFT replica under a new id, out of the in-sync set", old, r.InSync)
	}
	t.Logf("promoted r3 at term 5 %v after the primary's server stopped; n1: %s", time.Since(killed).Round(time.Millisecond), old.GetReason())
}

func load(t *testing.T, s *state.Store) *statev1.ShardRouting {
	t.Helper()
	st, err := s.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st.Indices["x"].Shards[0].Routing
}

// slowHealth answers health checks after a delay (a node that hangs).
type slowHealth struct {
	healthpb.UnimplementedHealthServer
	delay chan time.Duration
}

func (h *slowHealth) Check(ctx context.Context, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	d := <-h.delay
	h.delay <- d
	select {
	case <-time.After(d):
	case <-ctx.Done():
	}
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

// TestFollowerRetries: checks that time out fail a node only after
// FollowerCheckRetries in a row (a slow node is not a dead one); a check
// that passes makes it available again.
func TestFollowerRetries(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &slowHealth{delay: make(chan time.Duration, 1)}
	h.delay <- time.Second
	g := grpc.NewServer()
	healthpb.RegisterHealthServer(g, h)
	go g.Serve(lis)
	defer g.Stop()
	cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	f := newFollowers(func(string) (grpc.ClientConnInterface, error) { return cc, nil }, 20*time.Millisecond, 50*time.Millisecond, 3, quiet())
	st := &state.Snapshot{Nodes: map[string]*state.Node{"n1": {ID: "n1", Info: &statev1.Node{Address: lis.Addr().String()}}}}
	f.sync(context.Background(), st)
	defer f.stop()
	<-f.changed
	why, ok := f.unreachable()["n1"]
	if !ok {
		t.Fatal("verdict changed, but n1 is not unreachable")
	}
	if want := "follower check failed (3 in a row"; len(why) < len(want) || why[:len(want)] != want {
		t.Errorf("reason %q, want it to start with %q", why, want)
	}
	<-h.delay
	h.delay <- 0
	<-f.changed
	if len(f.unreachable()) != 0 {
		t.Errorf("unreachable %v after a passing check", f.unreachable())
	}
}

// TestFollowerNewRegistration: a node that failed its check and registers
// again (a restarted process: a new lease) is checked at once, not at the
// next interval, so its copies come back without waiting a round.
func TestFollowerNewRegistration(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close() // the process is gone: connection refused
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	// One check at start, the next an hour later.
	f := newFollowers(func(string) (grpc.ClientConnInterface, error) { return cc, nil }, time.Hour, time.Second, 3, quiet())
	defer f.stop()
	node := func(lease int64) *state.Snapshot {
		return &state.Snapshot{Nodes: map[string]*state.Node{"n1": {ID: "n1", Lease: lease, Info: &statev1.Node{Address: addr}}}}
	}
	f.sync(context.Background(), node(1))
	<-f.changed
	if _, ok := f.unreachable()["n1"]; !ok {
		t.Fatal("verdict changed, but n1 is not unreachable")
	}
	lis, err = net.Listen("tcp", addr) // the process is back
	if err != nil {
		t.Skipf("the address was taken meanwhile: %v", err)
	}
	g := grpc.NewServer()
	h := health.NewServer()
	healthpb.RegisterHealthServer(g, h)
	go g.Serve(lis)
	defer g.Stop()
	f.sync(context.Background(), node(1)) // the same registration: no new check
	if _, ok := f.unreachable()["n1"]; !ok {
		t.Fatal("n1 available again without a check")
	}
	f.sync(context.Background(), node(2))
	deadline := time.Now().Add(5 * time.Second)
	for len(f.unreachable()) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("n1 still unreachable after it registered again: %v", f.unreachable())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
