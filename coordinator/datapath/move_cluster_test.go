package datapath_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/sluice-search/sluice/node"
	"github.com/sluice-search/sluice/node/shard"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// A drain on a real cluster moves a primary to another node by
// relocation — a target recovers from it, joins the in-sync set, takes the
// primary's role at term + 1 — and loses no acknowledged document; the
// drained node ends holding nothing, on its disk too.
func TestClusterDrainMovesPrimary(t *testing.T) {
	tc := startCluster(t)
	ctx := context.Background()
	tc.CreateIndex(t, "moving", 1, textMapping())
	resp, err := tc.client.Bulk(ctx, &sluicev1.BulkRequest{Index: "moving", Items: docItems(0, 200)})
	if err != nil || resp.Errors {
		t.Fatalf("bulk: %v, %v", resp, err)
	}
	info, err := tc.client.GetIndex(ctx, &sluicev1.GetIndexRequest{Name: "moving"})
	if err != nil {
		t.Fatal(err)
	}
	from, term := info.Index.Shards[0].NodeId, info.Index.Shards[0].PrimaryTerm
	if _, err := tc.client.DrainNode(ctx, &sluicev1.DrainNodeRequest{NodeId: from}); err != nil {
		t.Fatal(err)
	}
	var sh *sluicev1.ShardRouting
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		h, err := tc.client.ClusterHealth(ctx, &sluicev1.ClusterHealthRequest{Indices: []string{"moving"}})
		if err != nil {
			t.Fatal(err)
		}
		shards := h.Indices[0].Shards
		if len(shards) == 1 && shards[0].NodeId != from && shards[0].State == sluicev1.ShardState_SHARD_STATE_STARTED {
			sh = shards[0]
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the primary did not move off %s: %v", from, shards)
		}
	}
	if !sh.Primary || sh.PrimaryTerm != term+1 || !sh.InSync {
		t.Errorf("moved copy = %v, want the in-sync primary at term %d", sh, term+1)
	}
	if n := tc.Count(t, "moving", nil); n != 200 {
		t.Errorf("count after the move = %d, want 200", n)
	}
	resp, err = tc.client.Bulk(ctx, &sluicev1.BulkRequest{Index: "moving", Items: docItems(200, 250)})
	if err != nil || resp.Errors {
		t.Fatalf("bulk to the moved primary: %v, %v", resp, err)
	}
	if n := tc.Count(t, "moving", nil); n != 250 {
		t.Errorf("count = %d, want 250", n)
	}
	dr, err := tc.client.DrainNode(ctx, &sluicev1.DrainNodeRequest{NodeId: from})
	if err != nil || dr.Copies != 0 {
		t.Errorf("drained node: %v, %v", dr, err)
	}
	// The drained node deletes the moved copy's data: the shard is fully
	// active on the other node.
	i := slices.IndexFunc(tc.Nodes, func(n *node.Node) bool { return n.ID() == from })
	if i < 0 {
		t.Fatalf("no node %s", from)
	}
	dir := tc.Nodes[i].Shards().Path(shard.ID{IndexUUID: info.Index.Uuid})
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		_, err := os.Stat(dir)
		if errors.Is(err, os.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the drained node still holds %s (%v)", dir, err)
		}
	}
}
