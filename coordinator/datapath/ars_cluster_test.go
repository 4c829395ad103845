package datapath_test

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/sluice-search/sluice/cluster/etcdtest"
	"github.com/sluice-search/sluice/cluster/nodeconn"
	"github.com/sluice-search/sluice/cluster/state"
	"github.com/sluice-search/sluice/coordinator/datapath"
	"github.com/sluice-search/sluice/node"
	nodev1 "github.com/sluice-search/sluice/proto/sluice/node/v1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// slowNodes delays the shard searches of one node, and counts the shard
// searches and gets each node was sent and served. The calls themselves go
// to the real nodes.
type slowNodes struct {
	pool  *nodeconn.Pool
	slow  string
	delay time.Duration

	mu        sync.Mutex
	searched  map[string]int // answered
	attempted map[string]int // sent, answered or not
	gets      map[string]int
}

func (s *slowNodes) Client(nodeID string) (nodev1.NodeClient, error) {
	c, err := s.pool.Client(nodeID)
	if err != nil {
		return nil, err
	}
	return slowClient{NodeClient: c, node: nodeID, s: s}, nil
}

// counts returns copies of the counters.
func (s *slowNodes) counts() (searched, attempted, gets map[string]int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.searched), maps.Clone(s.attempted), maps.Clone(s.gets)
}

type slowClient struct {
	nodev1.NodeClient
	node string
	s    *slowNodes
}

func (c slowClient) ShardSearch(ctx context.Context, req *nodev1.ShardSearchRequest, opts ...grpc.CallOption) (*nodev1.ShardSearchResponse, error) {
	if c.node == c.s.slow {
		time.Sleep(c.s.delay)
	}
	resp, err := c.NodeClient.ShardSearch(ctx, req, opts...)
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	c.s.attempted[c.node]++
	if err == nil {
		c.s.searched[c.node]++
	}
	return resp, err
}

func (c slowClient) ShardGet(ctx context.Context, req *nodev1.ShardGetRequest, opts ...grpc.CallOption) (*nodev1.ShardGetResponse, error) {
	c.s.mu.Lock()
	c.s.gets[c.node]++
	c.s.mu.Unlock()
	return c.NodeClient.ShardGet(ctx, req, opts...)
}

// TestClusterSearchUsesEveryCopy: on a real cluster, an index of one
// shard with two replicas has a copy on each of three nodes, the same
// documents on each (replicated by the primary). Searches spread over the
// copies by adaptive replica selection and avoid the copy whose node
// answers slowly; when a copy's node stops, every search still answers in
// full from the other copies (the failed shard request is retried) and
// the stopped copy is tried only now and then; a realtime get goes to the
// primary; a point-in-time pins a live copy and its searches stay on it.
//
// The data path under test reads the cluster state once, when the index is
// green: it is a coordinator that has not yet heard that the node left (its
// lease has seconds to run; its connections fail at once), so the stopped
// copy stays in its routing and the retry is what keeps searches whole.
func TestClusterSearchUsesEveryCopy(t *testing.T) {
	tc := startCluster(t)
	ctx := context.Background()
	const index, docs = "ars", 30
	if _, err := tc.client.CreateIndex(ctx, &sluicev1.CreateIndexRequest{Name: index, WaitForActiveShards: true,
		Settings: &sluicev1.IndexSettings{NumberOfShards: 1, NumberOfReplicas: 2}, Mapping: textMapping()}); err != nil {
		t.Fatal(err)
	}
	waitGreen(t, tc, index)
	// wait_for: visible on every in-sync copy once acknowledged.
	resp, err := tc.client.Bulk(ctx, &sluicev1.BulkRequest{Index: index, Items: docItems(0, docs), Refresh: sluicev1.RefreshPolicy_REFRESH_POLICY_WAIT_FOR})
	if err != nil || resp.Errors {
		t.Fatalf("bulk: %v, %v", resp, err)
	}

	cache := state.NewCache(state.NewStore(etcdtest.Client(t, tc.Etcd), ""), slog.New(slog.DiscardHandler))
	st, err := cache.Refresh(ctx)
	if err != nil {
		t.Fatal(err)
	}
	x, err := st.ResolveOne(index)
	if err != nil {
		t.Fatal(err)
	}
	r := x.Shards[0].Routing
	primary := state.Primary(r).GetNodeId()
	var replicas []string
	for _, c := range r.GetCopies() {
		if !st.Serving(r, c) {
			t.Fatalf("copy %v does not serve reads; routing %v", c, r)
		}
		if !c.GetPrimary() {
			replicas = append(replicas, c.GetNodeId())
		}
	}
	if len(replicas) != 2 {
		t.Fatalf("replicas on %v, want 2; routing %v", replicas, r)
	}
	slow, stopped := replicas[0], replicas[1]
	pool := nodeconn.New(cache)
	t.Cleanup(pool.Close)
	sn := &slowNodes{pool: pool, slow: slow, delay: 30 * time.Millisecond,
		searched: map[string]int{}, attempted: map[string]int{}, gets: map[string]int{}}
	d := datapath.New(cache, sn, datapath.Options{Logger: slog.New(slog.DiscardHandler)})

	search := func() {
		t.Helper()
		r, err := d.Search(ctx, &sluicev1.SearchRequest{Indices: []string{index}, Size: proto.Int32(3),
			Query: &sluicev1.Query{Kind: &sluicev1.Query_Match{Match: &sluicev1.MatchQuery{Field: "title", Query: "document"}}}})
		if err != nil {
			t.Fatal(err)
		}
		if r.Total.GetValue() != docs || r.Shards.GetFailed() != 0 || len(r.Hits) != 3 {
			t.Fatalf("search: %d hits of %d, shards %v", len(r.Hits), r.Total.GetValue(), r.Shards)
		}
	}
	for range 60 {
		search()
	}
	got, tried, _ := sn.counts()
	t.Logf("60 searches: served %v, sent %v (primary %s, slow %s)", got, tried, primary, slow)
	if got[primary] < 5 || got[stopped] < 5 || got[slow] > 12 {
		t.Errorf("shard searches per copy %v (sent %v): want both fast copies (%s, %s) used, the slow one (%s) much less",
			got, tried, primary, stopped, slow)
	}

	// A copy's node stops: every search still answers in full, from the
	// other copies.
	before := tried[stopped]
	i := slices.IndexFunc(tc.Nodes, func(n *node.Node) bool { return n.ID() == stopped })
	tc.Nodes[i].Stop()
	for range 40 {
		search()
	}
	_, tried, _ = sn.counts()
	if n := tried[stopped] - before; n == 0 || n > 10 {
		t.Errorf("the stopped copy was tried by %d of 40 searches: want a few (a failure ranks it last, the others' averages pull it back)", n)
	}

	// A realtime get goes to the primary.
	g, err := d.Get(ctx, &sluicev1.GetRequest{Index: index, Id: "doc-0007"})
	if err != nil || !g.Found {
		t.Fatalf("get: %v %v", g, err)
	}
	if _, _, gets := sn.counts(); !maps.Equal(gets, map[string]int{primary: 1}) {
		t.Errorf("shard gets per node %v, want one, on the primary %s", gets, primary)
	}

	// A point-in-time pins a live copy, and its searches stay on it.
	pit, err := d.OpenPointInTime(ctx, &sluicev1.OpenPointInTimeRequest{Indices: []string{index}, KeepAlive: durationpb.New(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	pinned, err := datapath.PITNodes(pit.Id)
	if err != nil || len(pinned) != 1 || pinned[0] == stopped {
		t.Fatalf("pit pinned %v (%v); want a live copy", pinned, err)
	}
	before2, _, _ := sn.counts()
	for range 5 {
		if _, err := d.Search(ctx, &sluicev1.SearchRequest{Pit: &sluicev1.PointInTime{Id: pit.Id}, Size: proto.Int32(1)}); err != nil {
			t.Fatal(err)
		}
	}
	after, _, _ := sn.counts()
	for _, n := range []string{primary, slow, stopped} {
		want := before2[n]
		if n == pinned[0] {
			want += 5
		}
		if after[n] != want {
			t.Errorf("%s served %d shard searches after the PIT opened, want %d (the PIT's searches all on %s)", n, after[n]-before2[n], want-before2[n], pinned[0])
		}
	}
}
