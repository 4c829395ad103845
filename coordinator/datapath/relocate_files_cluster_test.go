package datapath_test

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/sluice-search/sluice/node"
	"github.com/sluice-search/sluice/node/engine"
	"github.com/sluice-search/sluice/node/shard"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// A primary of an index without replicas, with many segments (merged
// while they come), deletes, in-place doc-value updates and terms raised
// by earlier moves, relocates onto a node that joins: the target gets the
// segments only as files, is promoted, takes writes, is restarted (reopened
// at a new term) and is then moved off again, recovering a new copy from
// it. At every step each file of its current checkpoint is there to be
// served, and at the end every document is there with its last doc value.
// (An e2e run once saw a promoted target unable to serve its files: the
// test harness had lazily unmounted the node's tmpfs under the running
// node; this is the engine and node path of that run, which keeps them.)
func TestClusterRelocatedPrimaryKeepsItsFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster, adds a node and restarts it")
	}
	tc := startCluster(t)
	ctx := context.Background()
	const index = "relo"
	m := textMapping()
	m.Properties["price"] = &sluicev1.FieldMapping{Type: sluicev1.FieldType_FIELD_TYPE_LONG, Index: proto.Bool(false)}
	tc.CreateIndex(t, index, 1, m)
	info, err := tc.client.GetIndex(ctx, &sluicev1.GetIndexRequest{Name: index})
	if err != nil {
		t.Fatal(err)
	}
	sid := shard.ID{IndexUUID: info.Index.Uuid}

	// want is every document and its price: the items below keep it as
	// they are made (a failed bulk fails the test).
	want := map[string]int64{}
	docID := func(i int) string { return fmt.Sprintf("doc-%04d", i) }
	doc := func(i int, price int64) *sluicev1.BulkItem {
		want[docID(i)] = price
		return &sluicev1.BulkItem{Action: sluicev1.BulkAction_BULK_ACTION_INDEX, Id: docID(i),
			Source: fmt.Appendf(nil, `{"n":%d,"price":%d,"title":"document %d","tag":"t%d"}`, i, price, i, i%7)}
	}
	setPrice := func(i int, price int64) *sluicev1.BulkItem {
		want[docID(i)] = price
		return &sluicev1.BulkItem{Action: sluicev1.BulkAction_BULK_ACTION_UPDATE_DOC_VALUES, Id: docID(i), Source: fmt.Appendf(nil, `{"price":%d}`, price)}
	}
	del := func(i int) *sluicev1.BulkItem {
		delete(want, docID(i))
		return &sluicev1.BulkItem{Action: sluicev1.BulkAction_BULK_ACTION_DELETE, Id: docID(i)}
	}
	bulk := func(items ...*sluicev1.BulkItem) {
		t.Helper()
		resp, err := tc.client.Bulk(ctx, &sluicev1.BulkRequest{Index: index, Items: items})
		if err != nil || resp.Errors {
			t.Fatalf("bulk: %v, %v", resp, err)
		}
		if _, err := tc.client.Refresh(ctx, &sluicev1.RefreshRequest{Indices: []string{index}}); err != nil {
			t.Fatal(err)
		}
	}
	// write is one round of segments: new documents, a re-indexed one, a
	// deleted one and in-place updates of older ones, each bulk refreshed
	// into a segment of its own (and the merge policy merging them).
	next := 0
	write := func(rounds int, price int64) {
		t.Helper()
		for range rounds {
			var items []*sluicev1.BulkItem
			for i := next; i < next+40; i++ {
				items = append(items, doc(i, int64(i)))
			}
			bulk(items...)
			if next > 0 {
				bulk(doc(next-40, price), del(next-39), setPrice(next-38, price), setPrice(next-37, price+1))
			}
			next += 40
		}
	}

	// Earlier terms: the primary moves twice among the three nodes.
	write(6, 1000)
	term := shardOf(t, tc, index).PrimaryTerm
	for range 2 {
		from := shardOf(t, tc, index).NodeId
		drain(t, tc, from, false)
		waitPrimary(t, tc, index, func(sh *sluicev1.ShardRouting) bool { return sh.NodeId != from })
		drain(t, tc, from, true)
		write(3, 2000)
	}

	// A fourth node joins and every other node is drained: the primary
	// relocates onto it.
	id := "node-4"
	cfg := node.Config{ID: id, DataDir: filepath.Join(t.TempDir(), id), Listen: "127.0.0.1:0",
		EtcdEndpoints: tc.EtcdEndpoints(), LeaseTTL: 2 * time.Second}
	n4 := startNode(t, cfg)
	for _, n := range tc.Nodes {
		drain(t, tc, n.ID(), false)
	}
	sh := waitPrimary(t, tc, index, func(sh *sluicev1.ShardRouting) bool { return sh.NodeId == id })
	if sh.PrimaryTerm < term+3 {
		t.Errorf("primary on %s at term %d, want at least %d (three moves)", id, sh.PrimaryTerm, term+3)
	}
	servesCheckpoint(t, n4, sid)
	checkDocs(t, tc, index, want)

	// The promoted copy takes writes, merges, and is restarted: reopened at
	// a new term from what it committed.
	write(6, 3000)
	servesCheckpoint(t, n4, sid)
	n4.Stop()
	n4 = startNode(t, cfg)
	// Reopened at a new term.
	waitPrimary(t, tc, index, func(re *sluicev1.ShardRouting) bool { return re.NodeId == id && re.PrimaryTerm > sh.PrimaryTerm })
	servesCheckpoint(t, n4, sid)
	checkDocs(t, tc, index, want)
	write(2, 4000)

	// It is moved off again: a new copy recovers every file from it.
	drain(t, tc, tc.Nodes[0].ID(), true)
	drain(t, tc, id, false)
	waitPrimary(t, tc, index, func(sh *sluicev1.ShardRouting) bool { return sh.NodeId == tc.Nodes[0].ID() })
	servesCheckpoint(t, tc.Nodes[0], sid)
	checkDocs(t, tc, index, want)
}

// startNode starts a data node of tc's cluster; t.Cleanup stops it.
func startNode(t *testing.T, cfg node.Config) *node.Node {
	t.Helper()
	n, err := node.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Stop)
	return n
}

// drain drains node id, or ends its drain.
func drain(t *testing.T, tc *testCluster, id string, undo bool) {
	t.Helper()
	if _, err := tc.client.DrainNode(context.Background(), &sluicev1.DrainNodeRequest{NodeId: id, Undrain: undo}); err != nil {
		t.Fatal(err)
	}
}

// shardOf is the routing of the one copy of index's one shard.
func shardOf(t *testing.T, tc *testCluster, index string) *sluicev1.ShardRouting {
	t.Helper()
	h, err := tc.client.ClusterHealth(context.Background(), &sluicev1.ClusterHealthRequest{Indices: []string{index}})
	if err != nil {
		t.Fatal(err)
	}
	if sh := h.Indices[0].Shards; len(sh) != 1 {
		t.Fatalf("index %s has copies %v, want one", index, sh)
	}
	return h.Indices[0].Shards[0]
}

// waitPrimary waits until index's one copy is a started, in-sync primary
// that ok accepts, and nothing is moving.
func waitPrimary(t *testing.T, tc *testCluster, index string, ok func(*sluicev1.ShardRouting) bool) *sluicev1.ShardRouting {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		h, err := tc.client.ClusterHealth(context.Background(), &sluicev1.ClusterHealthRequest{Indices: []string{index}})
		if err != nil {
			t.Fatal(err)
		}
		shards := h.Indices[0].Shards
		if len(shards) == 1 && ok(shards[0]) && shards[0].Primary && shards[0].InSync &&
			shards[0].State == sluicev1.ShardState_SHARD_STATE_STARTED && h.RelocatingShards == 0 {
			return shards[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("index %s: the primary did not get where it should: %v", index, shards)
		}
	}
}

// servesCheckpoint checks that the primary of sid on n can open, to serve
// to a recovering copy, every file of its current checkpoint.
func servesCheckpoint(t *testing.T, n *node.Node, sid shard.ID) {
	t.Helper()
	// The node takes the primary's role a moment after the routing
	// says so.
	var eng *engine.Engine
	for deadline := time.Now().Add(10 * time.Second); eng == nil; time.Sleep(20 * time.Millisecond) {
		if sh, err := n.Shards().Get(sid); err == nil {
			eng = sh.Engine()
		}
		if eng == nil && time.Now().After(deadline) {
			t.Fatalf("shard %v on %s is not an open primary", sid, n.ID())
		}
	}
	cp, err := eng.Checkpoint(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Release()
	for _, f := range cp.Files {
		in, err := eng.OpenIndexFile(f.Name)
		if err != nil {
			t.Errorf("%s: checkpoint %d/%d lists %s, which it cannot serve: %v", n.ID(), cp.Term, cp.Version, f.Name, err)
			continue
		}
		if got := int64(len(in.Bytes())); got != f.Length {
			t.Errorf("%s: %s has %d bytes, its checkpoint says %d", n.ID(), f.Name, got, f.Length)
		}
		in.Close()
	}
	t.Logf("%s serves checkpoint %d/%d: %d files, %d segments", n.ID(), cp.Term, cp.Version, len(cp.Files), len(cp.Infos.Segments))
}

// checkDocs checks that index holds exactly want's documents, each with
// its price doc value.
func checkDocs(t *testing.T, tc *testCluster, index string, want map[string]int64) {
	t.Helper()
	if n := tc.Count(t, index, nil); n != int64(len(want)) {
		t.Errorf("index %s holds %d documents, want %d", index, n, len(want))
	}
	ids := slices.Sorted(maps.Keys(want))
	for lo := 0; lo < len(ids); lo += 500 {
		batch := ids[lo:min(lo+500, len(ids))]
		r, err := tc.client.Search(context.Background(), &sluicev1.SearchRequest{Indices: []string{index}, Size: proto.Int32(int32(len(batch))),
			Query:          &sluicev1.Query{Kind: &sluicev1.Query_Ids{Ids: &sluicev1.IdsQuery{Values: batch}}},
			DocvalueFields: []string{"price"}, FetchSource: proto.Bool(false)})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Hits) != len(batch) {
			t.Errorf("ids %s..: %d of %d found", batch[0], len(r.Hits), len(batch))
		}
		for _, h := range r.Hits {
			if got := h.Fields["price"].GetLongValue(); got != want[h.Id] {
				t.Errorf("%s: price %d, want %d", h.Id, got, want[h.Id])
			}
		}
	}
}
