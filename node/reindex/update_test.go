package reindex_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/sluice-search/sluice/cluster/routing"
	"github.com/sluice-search/sluice/node"
	"github.com/sluice-search/sluice/node/engine/document"
	"github.com/sluice-search/sluice/node/engine/mapping"
	"github.com/sluice-search/sluice/node/engine/translog"
	"github.com/sluice-search/sluice/node/nodetest"
	"github.com/sluice-search/sluice/node/reindex"
	"github.com/sluice-search/sluice/node/shard"
	nodev1 "github.com/sluice-search/sluice/proto/sluice/node/v1"
)

// recordingReplicator is a primary's replication group that keeps a copy
// of every operation it is handed, as a replica's translog would hold it.
type recordingReplicator struct {
	mu      sync.Mutex
	ops     []translog.Op
	largest int // bytes of ids and sources in one Replicate call, at most
}

func (r *recordingReplicator) Replicate(_ context.Context, ops []translog.Op) func() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, op := range ops {
		n += len(op.ID) + len(op.Source) + len(op.Routing)
	}
	r.largest = max(r.largest, n)
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
// openReplicated opens shard src on n with rep as its replication group
// and indexes docs documents with a doc-values-only price, refreshed; rep
// then forgets what it got.
func openReplicated(t *testing.T, n *testNode, rep *recordingReplicator, docs int) *shard.Shard {
	t.Helper()
	ctx := context.Background()
	price := mapping.NewField(document.Long)
	price.Index = false // doc values only: updatable in place
	m, err := mapping.New(mapping.DynamicDefault, map[string]mapping.Field{
		"title": mapping.NewField(document.Text), "price": price})
	if err != nil {
		t.Fatal(err)
	}
	src, err := n.host.Open(ctx, shard.Meta{ID: shard.ID{IndexUUID: "src"}, Index: "src", Mapping: m, Replicator: rep})
	if err != nil {
		t.Fatal(err)
	}
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
	return src
}

func TestUpdateByQueryReplicatesEachID(t *testing.T) {
	ctx := context.Background()
	n := startNode(t)
	rep := &recordingReplicator{}
	const docs = 200
	openReplicated(t, n, rep, docs)

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

// An update-by-query slice that stops between checkpoints (its caller
// gone, here) still hands its group the updates it applied: the primary
// holds them, and a copy that never got them would have a gap in its
// sequence numbers.
func TestUpdateByQueryStoppedReplicatesWhatItApplied(t *testing.T) {
	n := startNode(t)
	rep := &recordingReplicator{}
	src := openReplicated(t, n, rep, 300)
	before := src.Engine().Stats().SeqNo

	req := sliceReq("src", 0, "", routing.Params{Shards: 1, RoutingShards: 1}, nil)
	req.SourceShards, req.UpdateDocValues = 1, []byte(`{"price":7}`)
	req.RequestsPerSecond, req.CheckpointInterval = 200, durationpb.New(time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := n.client.RunReindexSlice(ctx, req); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); src.Engine().Stats().SeqNo < before+3; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the slice applied no update")
		}
	}
	cancel()
	// Every sequence number the primary gave since reaches the group.
	var missing []int64
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		got := map[int64]bool{}
		rep.mu.Lock()
		for _, op := range rep.ops {
			got[int64(op.SeqNo)] = true
		}
		rep.mu.Unlock()
		missing = missing[:0]
		for seq := before + 1; seq <= src.Engine().Stats().SeqNo; seq++ {
			if !got[seq] {
				missing = append(missing, seq)
			}
		}
		if len(missing) == 0 || time.Now().After(deadline) {
			break
		}
	}
	if len(missing) > 0 {
		t.Fatalf("operations %v applied on the primary never reached its replication group", missing)
	}
}

// A ShardIngest batch that fails part way (a mapping update the cluster
// refuses) still hands the shard's group the documents it indexed: the
// primary holds them, and its copies must not miss their sequence numbers.
func TestIngestFailedBatchReplicatesWhatItApplied(t *testing.T) {
	ctx := context.Background()
	n := startNode(t)
	rep := &recordingReplicator{}
	dst, err := n.host.Open(ctx, shard.Meta{ID: shard.ID{IndexUUID: "dst"}, Index: "dst", Mapping: nodetest.Mapping(t), Replicator: rep})
	if err != nil {
		t.Fatal(err)
	}
	before := dst.Engine().Stats().SeqNo
	var docs []*nodev1.IngestDoc
	for i := range 40 {
		src := docSource(i)
		if i == 30 {
			// A new field, whose mapping update the cluster refuses
			// (it has no index dst): fails the batch.
			src = `{"unmapped":1}`
		}
		docs = append(docs, &nodev1.IngestDoc{Id: fmt.Sprintf("d%05d", i), Source: []byte(src)})
	}
	st, err := n.client.ShardIngest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Send(&nodev1.ShardIngestRequest{Shard: &nodev1.ShardID{IndexUuid: "dst"}, Docs: docs}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CloseAndRecv(); err == nil {
		t.Fatal("a batch whose mapping update the cluster refused was taken")
	}
	after := dst.Engine().Stats().SeqNo
	if after == before {
		t.Fatal("the batch indexed nothing before it failed: the test covers nothing")
	}
	got := map[int64]bool{}
	rep.mu.Lock()
	for _, op := range rep.ops {
		got[int64(op.SeqNo)] = true
	}
	rep.mu.Unlock()
	for seq := before + 1; seq <= after; seq++ {
		if !got[seq] {
			t.Fatalf("operation %d indexed on the primary (of %d..%d) never reached its replication group", seq, before+1, after)
		}
	}
}

// An update-by-query slice whose caller went away is resumed from the last
// checkpoint it got, in the reader the node kept: the documents the run
// updated after that checkpoint are not version conflicts (under
// conflicts=abort, the task's end) — they were this slice's own writes.
func TestUpdateByQueryResumesPastItsOwnUpdates(t *testing.T) {
	n := startNode(t)
	rep := &recordingReplicator{}
	const docs = 300
	src := openReplicated(t, n, rep, docs)

	req := sliceReq("src", 0, "", routing.Params{Shards: 1, RoutingShards: 1}, nil)
	req.SourceShards, req.UpdateDocValues = 1, []byte(`{"price":7}`)
	req.RequestsPerSecond = 500
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := n.client.RunReindexSlice(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	first, err := st.Recv() // a checkpoint
	if err != nil {
		t.Fatal(err)
	}
	seq := src.Engine().Stats().SeqNo
	for deadline := time.Now().Add(10 * time.Second); src.Engine().Stats().SeqNo < seq+5; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the slice updated nothing after its first checkpoint")
		}
	}
	cancel() // its later checkpoints never reach the caller
	for deadline := time.Now().Add(10 * time.Second); n.runner.KeptReaders() == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the stopped slice kept no reader")
		}
	}

	req.Cursor, req.RequestsPerSecond = first.GetCursor(), 0
	last, _, err := runSlice(context.Background(), n.client, req)
	if err != nil {
		t.Fatalf("resumed slice: %v", err)
	}
	if !last.Done || last.VersionConflicts != 0 {
		t.Fatalf("resumed slice: %v, want done without conflicts", last)
	}
	if err := src.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	rd := src.Acquire()
	defer rd.Release()
	for _, l := range rd.Leaves() {
		dv := l.Reader.NumericDocValues("price")
		for doc := range l.Reader.MaxDoc() {
			if v, _ := dv.Get(doc); v != 7 {
				t.Fatalf("doc %d has price %d after the resumed slice, want 7", l.DocBase+doc, v)
			}
		}
	}
}

// An update-by-query slice sends its shard's replicas its updates in
// batches of at most BatchBytes, not everything it did between two
// checkpoints (seconds of updates: one message past any size limit, and
// as much heap).
func TestUpdateByQueryBatchesItsReplication(t *testing.T) {
	const batch = 4 << 10
	nn := nodetest.Start(t, nil, node.Config{Reindex: reindex.Options{CheckpointInterval: time.Hour, BatchBytes: batch}})
	n := &testNode{host: nn.Shards(), runner: nn.Reindex(), addr: nn.Advertise(), client: nodev1.NewReindexClient(nn.Conn)}
	rep := &recordingReplicator{}
	const docs = 2000
	openReplicated(t, n, rep, docs)
	rep.mu.Lock()
	rep.largest = 0
	rep.mu.Unlock()

	req := sliceReq("src", 0, "", routing.Params{Shards: 1, RoutingShards: 1}, nil)
	req.SourceShards, req.UpdateDocValues = 1, []byte(`{"price":7}`)
	last, _, err := runSlice(context.Background(), n.client, req)
	if err != nil {
		t.Fatal(err)
	}
	if !last.Done || last.Updated != docs {
		t.Fatalf("last message %v", last)
	}
	rep.mu.Lock()
	defer rep.mu.Unlock()
	if len(rep.ops) != docs {
		t.Fatalf("%d updates replicated, want %d", len(rep.ops), docs)
	}
	if op := len("d00000") + len(req.UpdateDocValues); rep.largest > batch+op {
		t.Fatalf("one replication batch of %d bytes, want at most %d", rep.largest, batch+op)
	}
}
