package reindex_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/sluice-search/sluice/cluster/routing"
	"github.com/sluice-search/sluice/node/engine/document"
	"github.com/sluice-search/sluice/node/engine/mapping"
	"github.com/sluice-search/sluice/node/engine/translog"
	"github.com/sluice-search/sluice/node/shard"
)

// recordingReplicator is a primary's replication group that keeps a copy
// of every operation it is handed, as a replica's translog would hold it.
type recordingReplicator struct {
	mu  sync.Mutex
	ops []translog.Op
}

func (r *recordingReplicator) Replicate(_ context.Context, ops []translog.Op) func() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, op := range ops {
		op.ID, op.Source, op.Routing = slices.Clone(op.ID), slices.Clone(op.Source), slices.Clone(op.Routing)
		r.ops = append(r.ops, op)
	}
	return func() error { return nil }
}

func (r *recordingReplicator) WaitVisible(context.Context, int64) error { return nil }

func (r *recordingReplicator) SyncSegments(ctx context.Context, add func(context.Context) error) error {
	return add(ctx)
}

// An update-by-query slice on a primary with replicas hands its group
// each update with the id of the document it updated: a promoted replica
// replays exactly those. (The slice reads ids into a reused buffer; the
// batch keeps each op until its sync.)
func TestUpdateByQueryReplicatesEachID(t *testing.T) {
	ctx := context.Background()
	price := mapping.NewField(document.Long)
	price.Index = false // doc values only: updatable in place
	m, err := mapping.New(mapping.DynamicDefault, map[string]mapping.Field{
		"title": mapping.NewField(document.Text), "price": price})
	if err != nil {
		t.Fatal(err)
	}
	n := startNode(t)
	rep := &recordingReplicator{}
	src, err := n.host.Open(ctx, shard.Meta{ID: shard.ID{IndexUUID: "src"}, Index: "src", Mapping: m, Replicator: rep})
	if err != nil {
		t.Fatal(err)
	}
	const docs = 200
	var ops []shard.Op
	for i := range docs {
		ops = append(ops, shard.Op{Kind: shard.OpIndex, ID: fmt.Appendf(nil, "d%05d", i), Source: fmt.Appendf(nil, `{"title":"doc %d","price":%d}`, i, i)})
	}
	res, err := src.Bulk(ctx, ops, shard.RefreshImmediate)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	rep.mu.Lock()
	rep.ops = nil
	rep.mu.Unlock()

	req := sliceReq("src", 0, "", routing.Params{Shards: 1, RoutingShards: 1}, nil)
	req.SourceShards, req.UpdateDocValues = 1, []byte(`{"price":7}`)
	last, _, err := runSlice(ctx, n.client, req)
	if err != nil {
		t.Fatal(err)
	}
	if !last.Done || last.Updated != docs {
		t.Fatalf("last message %v, want done with %d updated", last, docs)
	}
	rep.mu.Lock()
	defer rep.mu.Unlock()
	got := map[string]int{}
	for _, op := range rep.ops {
		if op.Type != translog.OpUpdateDocValues {
			t.Fatalf("replicated op %+v, want an in-place update", op)
		}
		got[string(op.ID)]++
	}
	for i := range docs {
		if id := fmt.Sprintf("d%05d", i); got[id] != 1 {
			t.Errorf("update of %s replicated %d times, want once", id, got[id])
		}
	}
	if len(rep.ops) != docs {
		t.Errorf("%d updates replicated, want %d", len(rep.ops), docs)
	}
}
