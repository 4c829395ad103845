package datapath

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/sluice-search/sluice/cluster/etcdtest"
	"github.com/sluice-search/sluice/cluster/nodeconn"
	"github.com/sluice-search/sluice/cluster/state"
	"github.com/sluice-search/sluice/node"
	"github.com/sluice-search/sluice/node/nodetest"
	"github.com/sluice-search/sluice/node/shard"
	nodev1 "github.com/sluice-search/sluice/proto/sluice/node/v1"
	statev1 "github.com/sluice-search/sluice/proto/sluice/state/v1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

func TestReplicaSelectorOrder(t *testing.T) {
	ms := float64(time.Millisecond)
	tests := []struct {
		name  string
		stats map[string]nodeStats
		nodes []string
		want  []string
		after map[string]float64 // ewma after the choice
	}{
		{"unmeasured first, then by average", map[string]nodeStats{"a": {ewma: 5 * ms}, "b": {ewma: 2 * ms}},
			[]string{"a", "b", "c"}, []string{"c", "b", "a"}, map[string]float64{"a": 2.5 * ms, "b": ms, "c": 0}},
		{"outstanding requests weigh cubed", map[string]nodeStats{"a": {ewma: 2 * ms, outstanding: 1}, "b": {ewma: 10 * ms}},
			[]string{"a", "b"}, []string{"b", "a"}, nil},
		{"ties keep routing order (the primary first)", map[string]nodeStats{"a": {ewma: ms}, "b": {ewma: ms}},
			[]string{"b", "a"}, []string{"b", "a"}, nil},
		{"losers catch up halfway with the winner", map[string]nodeStats{"a": {ewma: 1 * ms}, "b": {ewma: 9 * ms}, "c": {ewma: 3 * ms}},
			[]string{"a", "b", "c"}, []string{"a", "c", "b"}, map[string]float64{"a": ms, "b": 5 * ms, "c": 2 * ms}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newReplicaSelector()
			for n, st := range tt.stats {
				s.nodes[n] = &nodeStats{ewma: st.ewma, outstanding: st.outstanding}
			}
			if got := s.order(tt.nodes); !slices.Equal(got, tt.want) {
				t.Errorf("order = %v, want %v", got, tt.want)
			}
			for n, want := range tt.after {
				if got := s.stats(n).ewma; got != want {
					t.Errorf("%s: ewma %v, want %v", n, got, want)
				}
			}
		})
	}
	// A failure another copy might not have counts as a slow response; a
	// failure of the request itself (invalid) only ends it.
	ctx := context.Background()
	s := newReplicaSelector()
	s.nodes["a"] = &nodeStats{ewma: 10 * ms}
	done := s.begin(ctx, "a")
	if s.stats("a").outstanding != 1 {
		t.Fatal("begin did not count the request")
	}
	done(invalidf("bad query"))
	if st := s.stats("a"); st.outstanding != 0 || st.ewma != 10*ms {
		t.Errorf("after an invalid request: %+v", st)
	}
	s.begin(ctx, "a")(status.Error(codes.Unavailable, "connection refused"))
	if st := s.stats("a"); st.outstanding != 0 || st.ewma < arsAlpha*float64(arsFailure) {
		t.Errorf("after an unavailable node: %+v, want the average at least %v", st, arsAlpha*float64(arsFailure))
	}
}

// slowNodes delays every call to the nodes in slow, and counts the shard
// searches each node served. The calls themselves go to real nodes.
type slowNodes struct {
	pool *nodeconn.Pool
	slow map[string]time.Duration

	mu        sync.Mutex
	searched  map[string]int
	attempted map[string]int
}

func (s *slowNodes) Client(nodeID string) (nodev1.NodeClient, error) {
	c, err := s.pool.Client(nodeID)
	if err != nil {
		return nil, err
	}
	return slowClient{NodeClient: c, node: nodeID, s: s}, nil
}

type slowClient struct {
	nodev1.NodeClient
	node string
	s    *slowNodes
}

func (c slowClient) ShardSearch(ctx context.Context, req *nodev1.ShardSearchRequest, opts ...grpc.CallOption) (*nodev1.ShardSearchResponse, error) {
	time.Sleep(c.s.slow[c.node])
	resp, err := c.NodeClient.ShardSearch(ctx, req, opts...)
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	c.s.attempted[c.node]++
	if err == nil {
		c.s.searched[c.node]++
	}
	return resp, err
}

// TestSearchUsesEveryCopy: three real data nodes each hold a copy of one
// shard with the same documents, and the routing entry names them as a
// primary and two in-sync started replicas (as node-level replication will
// make them; the copies are registered under node ids of their own, so no
// node's routing reconciler takes them for its own). Searches spread over
// the copies by adaptive replica selection, avoid the copy whose node
// answers slowly, go on without a shard failure when a copy's node stops,
// and a realtime get and writes still go to the primary.
func TestSearchUsesEveryCopy(t *testing.T) {
	etcd := etcdtest.New(t)
	store := state.NewStore(etcd, "")
	ctx := context.Background()
	const uuid, docs = "u-ars", 30
	var tx state.Txn
	var nodes []*nodetest.Node
	copies := []*statev1.ShardCopy{}
	for i := range 3 {
		n := nodetest.Start(t, etcd, node.Config{})
		s := n.Open(t, shard.Meta{ID: shard.ID{IndexUUID: uuid}, Index: "x", RefreshInterval: -1})
		for d := range docs {
			if _, err := s.IndexDoc(ctx, fmt.Appendf(nil, "d%d", d), fmt.Appendf(nil, `{"title":"river %d"}`, d), false); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, n)
		id := fmt.Sprint("copy-", i)
		tx.Put(store.Keys.Node(id), &statev1.Node{Address: n.Addr()})
		copies = append(copies, &statev1.ShardCopy{NodeId: id, AllocationId: fmt.Sprint("a", i), Primary: i == 0,
			State: sluicev1.ShardState_SHARD_STATE_STARTED})
	}
	tx.Put(store.Keys.Index("x"), &statev1.Index{Name: "x", Uuid: uuid, State: sluicev1.IndexState_INDEX_STATE_OPEN,
		Settings: &sluicev1.IndexSettings{NumberOfShards: 1, NumberOfRoutingShards: 1, NumberOfReplicas: 2},
		Mapping:  &sluicev1.Mapping{Properties: map[string]*sluicev1.FieldMapping{"title": {Type: sluicev1.FieldType_FIELD_TYPE_TEXT}}}})
	tx.Put(store.Keys.Shard(uuid, 0), &statev1.ShardRouting{PrimaryTerm: 1, InSync: []string{"a0", "a1", "a2"}, Copies: copies})
	if err := store.Commit(ctx, &tx); err != nil {
		t.Fatal(err)
	}
	cache := state.NewCache(store, slog.New(slog.DiscardHandler))
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { cache.Run(cctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	if _, err := cache.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	pool := nodeconn.New(cache)
	t.Cleanup(pool.Close)
	sn := &slowNodes{pool: pool, slow: map[string]time.Duration{"copy-2": 30 * time.Millisecond}, searched: map[string]int{}, attempted: map[string]int{}}
	d := New(cache, sn, Options{Logger: slog.New(slog.DiscardHandler)})

	search := func() *sluicev1.SearchResponse {
		t.Helper()
		r, err := d.Search(ctx, &sluicev1.SearchRequest{Indices: []string{"x"}, Size: proto.Int32(3),
			Query: &sluicev1.Query{Kind: &sluicev1.Query_Match{Match: &sluicev1.MatchQuery{Field: "title", Query: "river"}}}})
		if err != nil {
			t.Fatal(err)
		}
		if r.Total.GetValue() != docs || r.Shards.GetFailed() != 0 || len(r.Hits) != 3 {
			t.Fatalf("search: %d hits of %d, shards %v", len(r.Hits), r.Total.GetValue(), r.Shards)
		}
		return r
	}
	for range 60 {
		search()
	}
	sn.mu.Lock()
	got := maps.Clone(sn.searched)
	sn.mu.Unlock()
	if got["copy-0"] < 5 || got["copy-1"] < 5 || got["copy-2"] > 12 {
		t.Errorf("shard searches per copy %v: want both fast copies used, the slow one (copy-2) much less", got)
	}
	t.Logf("60 searches: %v", got)

	// A copy's node stops: every search still answers in full, from the
	// other copies (the failed shard request is retried).
	sn.mu.Lock()
	tried := sn.attempted["copy-1"]
	sn.mu.Unlock()
	nodes[1].Stop()
	for range 40 {
		search()
	}
	sn.mu.Lock()
	if n := sn.attempted["copy-1"] - tried; n == 0 || n > 10 {
		t.Errorf("the stopped copy was tried by %d of 40 searches: want a few (a failure ranks it last, the others' averages pull it back)", n)
	}
	sn.mu.Unlock()
	// A realtime get goes to the primary.
	g, err := d.Get(ctx, &sluicev1.GetRequest{Index: "x", Id: "d7"})
	if err != nil || !g.Found {
		t.Fatalf("get from the primary: %v %v", g, err)
	}
	// A point-in-time pins a copy, and its searches stay on it.
	pit, err := d.OpenPointInTime(ctx, &sluicev1.OpenPointInTimeRequest{Indices: []string{"x"}, KeepAlive: durationpb.New(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	ps, err := decodePIT(pit.Id)
	if err != nil || len(ps) != 1 || ps[0].node == "copy-1" {
		t.Fatalf("pit pinned %v (%v); want a live copy", ps, err)
	}
	sn.mu.Lock()
	before := maps.Clone(sn.searched)
	sn.mu.Unlock()
	for range 5 {
		if _, err := d.Search(ctx, &sluicev1.SearchRequest{Pit: &sluicev1.PointInTime{Id: pit.Id}, Size: proto.Int32(1)}); err != nil {
			t.Fatal(err)
		}
	}
	sn.mu.Lock()
	defer sn.mu.Unlock()
	for n, c := range sn.searched {
		if want := before[n] + map[bool]int{true: 5}[n == ps[0].node]; c != want {
			t.Errorf("%s served %d shard searches after the PIT opened, want %d (the PIT's searches all on %s)", n, c-before[n], want-before[n], ps[0].node)
		}
	}
}
