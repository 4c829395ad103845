package datapath_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/fieldmaskpb"

	"github.com/sluice-search/sluice/node"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// An index without replicas spreads onto a node that joins: its primaries
// are rebalanced (a relocation with the primary's hand-off, term + 1)
// while writers run, and every acknowledged write is there at the end.
// With rebalance_enable "none" the new node gets nothing; set back to
// "all", the one primary of four that makes 2, 1, 1 into 1, 1, 1, 1 moves.
func TestClusterRebalancesPrimariesOntoNewNode(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster and adds a node")
	}
	tc := startCluster(t)
	ctx := context.Background()
	const index = "spread"
	setRebalance := func(v string) {
		t.Helper()
		if _, err := tc.client.UpdateClusterSettings(ctx, &sluicev1.UpdateClusterSettingsRequest{
			Settings: &sluicev1.ClusterSettings{RebalanceEnable: v}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"rebalance_enable"}}}); err != nil {
			t.Fatal(err)
		}
	}
	setRebalance("none")
	// Four primaries on the three nodes: 2, 1, 1.
	tc.CreateIndex(t, index, 4, textMapping())
	if resp, err := tc.client.Bulk(ctx, &sluicev1.BulkRequest{Index: index, Items: docItems(0, 400)}); err != nil || resp.Errors {
		t.Fatalf("bulk: %v, %v", resp, err)
	}
	// A fourth node joins.
	id := "node-4"
	startNode(t, node.Config{ID: id, DataDir: filepath.Join(t.TempDir(), id), Listen: "127.0.0.1:0",
		EtcdEndpoints: tc.EtcdEndpoints(), LeaseTTL: 2 * time.Second})
	before := primaries(t, tc, index)

	w := startWriters(tc, index, 2)
	time.Sleep(2 * time.Second) // allocator rounds: the join, then every Interval
	if got := primaries(t, tc, index); fmt.Sprint(got) != fmt.Sprint(before) {
		t.Errorf("rebalanced with rebalance_enable none: %v, were %v", got, before)
	}
	setRebalance("all")
	var moved []*sluicev1.ShardRouting
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		h, err := tc.client.ClusterHealth(ctx, &sluicev1.ClusterHealthRequest{Indices: []string{index}})
		if err != nil {
			t.Fatal(err)
		}
		moved = moved[:0]
		for _, sh := range h.Indices[0].Shards {
			if sh.NodeId == id && sh.Primary && sh.State == sluicev1.ShardState_SHARD_STATE_STARTED {
				moved = append(moved, sh)
			}
		}
		if len(moved) > 0 && h.RelocatingShards == 0 && h.Status == sluicev1.HealthStatus_HEALTH_STATUS_GREEN {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no primary moved to %s: %v", id, h.Indices[0].Shards)
		}
	}
	time.Sleep(time.Second) // writes go on to the moved primary
	acked := w.stop()
	waitGreen(t, tc, index)
	for _, sh := range moved {
		if sh.PrimaryTerm < 2 || !sh.InSync {
			t.Errorf("moved primary %v: want in sync, at a term raised by the hand-off", sh)
		}
	}
	counts := map[string]int{}
	for _, node := range primaries(t, tc, index) {
		counts[node]++
	}
	t.Logf("primaries per node after rebalancing: %v; %d acknowledged writes", counts, len(acked))
	if len(moved) != 1 || len(counts) != 4 {
		t.Errorf("primaries per node %v, want one moved to %s (1, 1, 1, 1)", counts, id)
	}
	// Nothing lost: the 400 first documents and every acknowledged write.
	if len(acked) == 0 {
		t.Fatal("no write was acknowledged")
	}
	ids := slices.Sorted(func(yield func(string) bool) {
		for doc := range acked {
			if !yield(doc) {
				return
			}
		}
	})
	for i := range 400 {
		ids = append(ids, fmt.Sprintf("doc-%04d", i))
	}
	if _, err := tc.client.Refresh(ctx, &sluicev1.RefreshRequest{Indices: []string{index}}); err != nil {
		t.Fatal(err)
	}
	for lo := 0; lo < len(ids); lo += 500 {
		batch := ids[lo:min(lo+500, len(ids))]
		q := &sluicev1.Query{Kind: &sluicev1.Query_Ids{Ids: &sluicev1.IdsQuery{Values: batch}}}
		if got := tc.Count(t, index, q); got != int64(len(batch)) {
			t.Errorf("ids %s..: %d of %d found", batch[0], got, len(batch))
		}
	}
}

// primaries maps each shard of index to its primary's node.
func primaries(t *testing.T, tc *testCluster, index string) map[int32]string {
	t.Helper()
	info, err := tc.client.GetIndex(context.Background(), &sluicev1.GetIndexRequest{Name: index})
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]string{}
	for _, sh := range info.Index.Shards {
		if sh.Primary {
			out[sh.Shard] = sh.NodeId
		}
	}
	return out
}
