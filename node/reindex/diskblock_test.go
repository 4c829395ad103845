package reindex_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluice-search/sluice/cluster/etcdtest"
	"github.com/sluice-search/sluice/cluster/routing"
	"github.com/sluice-search/sluice/cluster/state"
	"github.com/sluice-search/sluice/node"
	"github.com/sluice-search/sluice/node/nodetest"
	"github.com/sluice-search/sluice/node/reindex"
	nodev1 "github.com/sluice-search/sluice/proto/sluice/node/v1"
	statev1 "github.com/sluice-search/sluice/proto/sluice/state/v1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// floodReason is what the allocator writes on an index with a copy on a
// node past the flood stage (cluster/watermark).
const floodReason = "disk of node [n1] at /data/n1 is 96.0% used (4b free of 100b), past the flood-stage disk watermark [95%]"

// wantBlocked checks that err is the flood-stage refusal of index dst,
// as a bulk gets it: RESOURCE_EXHAUSTED naming the node and its disk.
func wantBlocked(t *testing.T, err error) {
	t.Helper()
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(status.Convert(err).Message(), "index [dst] refuses writes: "+floodReason) {
		t.Fatalf("slice into a blocked index: %v, want RESOURCE_EXHAUSTED naming the disk", err)
	}
}

// A node writes nothing into a destination index whose flood-stage disk
// block its cluster state shows — a document copy, a segment copy, and a
// document copy whose destination gets the block while it runs — and the
// same slices copy everything once the block is lifted.
func TestFloodStageBlocksReindexWrites(t *testing.T) {
	tests := []struct {
		name     string
		method   sluicev1.ReindexCopyMethod
		midRun   bool // the block comes while the slice runs
		throttle float32
	}{
		{name: "documents", method: sluicev1.ReindexCopyMethod_REINDEX_COPY_METHOD_DOCUMENTS},
		{name: "segments", method: sluicev1.ReindexCopyMethod_REINDEX_COPY_METHOD_SEGMENTS},
		{name: "documents, blocked while running", method: sluicev1.ReindexCopyMethod_REINDEX_COPY_METHOD_DOCUMENTS, midRun: true, throttle: 500},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			etcd := etcdtest.New(t)
			nn := nodetest.Start(t, etcd, node.Config{Reindex: reindex.Options{CheckpointInterval: 10 * time.Millisecond, Workers: 2, BatchDocs: 50}})
			n := &testNode{host: nn.Shards(), runner: nn.Reindex(), addr: nn.Advertise(), client: nodev1.NewReindexClient(nn.Conn)}
			store := state.NewStore(etcd, "")
			// block puts index dst in the cluster state, with or without
			// the allocator's disk block, and waits for the node to see it.
			block := func(on bool) {
				t.Helper()
				x := &statev1.Index{Name: "dst", Uuid: "dst", Settings: &sluicev1.IndexSettings{NumberOfShards: 2}}
				if on {
					x.DiskBlock = &statev1.DiskBlock{NodeId: "n1", Reason: floodReason}
				}
				var tx state.Txn
				tx.Put(store.Keys.Index("dst"), x)
				if err := store.Commit(ctx, &tx); err != nil {
					t.Fatal(err)
				}
				for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
					st := nn.Cache().State()
					if x := st.ByUUID["dst"]; st != nil && x != nil && (x.WriteBlocked() != nil) == on {
						return
					}
					if time.Now().After(deadline) {
						t.Fatal("the node's cluster state did not show the block")
					}
				}
			}
			p := routing.Params{Shards: 2, RoutingShards: 2}
			n.open(t, "src", "src", 0, 1)
			n.open(t, "dst", "dst", 0, 1)
			want := load(t, []*testNode{n, n}, "src", p, 600)
			req := func(s int) *nodev1.RunReindexSliceRequest {
				r := sliceReq("src", s, "dst", p, nil)
				r.CopyMethod, r.SourceShards, r.RequestsPerSecond = tt.method, int32(p.Shards), tt.throttle
				return r
			}
			if tt.midRun {
				block(false)
				st, err := n.client.RunReindexSlice(ctx, req(0))
				if err != nil {
					t.Fatal(err)
				}
				if _, err := st.Recv(); err != nil {
					t.Fatal(err)
				}
				block(true)
				for {
					m, err := st.Recv()
					if err != nil {
						wantBlocked(t, err)
						break
					}
					if m.Done {
						t.Fatalf("the slice ran to its end past the block: %v", m)
					}
				}
			} else {
				block(true)
				_, _, err := runSlice(ctx, n.client, req(0))
				wantBlocked(t, err)
				if got := contents(t, []*testNode{n}, "dst", 2); len(got) != 0 {
					t.Fatalf("%d documents written into the blocked index", len(got))
				}
			}
			// Space returned: the allocator lifts the block, and the
			// slices copy everything.
			block(false)
			var copied int64
			for s := range p.Shards {
				last, _, err := runSlice(ctx, n.client, req(s))
				if err != nil {
					t.Fatalf("slice %d once the block is lifted: %v", s, err)
				}
				if !last.Done || last.CopyMethod != tt.method {
					t.Fatalf("slice %d: %v", s, last)
				}
				copied += last.Copied
			}
			if got := contents(t, []*testNode{n}, "dst", 2); len(got) != len(want) || copied != int64(len(want)) {
				t.Fatalf("copied %d, destination holds %d, want %d", copied, len(got), len(want))
			}
		})
	}
}

// A node receiving a remote slice's documents (ShardIngest) refuses them
// while its destination index is blocked, and the sending slice fails
// with the refusal.
func TestFloodStageBlocksShardIngest(t *testing.T) {
	ctx := context.Background()
	blocked := (&state.Index{Meta: &statev1.Index{Name: "dst", Uuid: "dst", DiskBlock: &statev1.DiskBlock{NodeId: "n1", Reason: floodReason}}}).WriteBlocked()
	a := startNode(t)
	bn := nodetest.Start(t, nil, node.Config{Reindex: reindex.Options{CheckpointInterval: 10 * time.Millisecond, Workers: 2, BatchDocs: 50,
		WriteBlocked: func(uuid string) error {
			if uuid == "dst" {
				return blocked
			}
			return nil
		}}})
	b := &testNode{host: bn.Shards(), runner: bn.Reindex(), addr: bn.Advertise(), client: nodev1.NewReindexClient(bn.Conn)}
	p := routing.Params{Shards: 1, RoutingShards: 1}
	a.open(t, "src", "src", 0)
	b.open(t, "dst", "dst", 0)
	load(t, []*testNode{a}, "src", p, 200)
	_, _, err := runSlice(ctx, a.client, sliceReq("src", 0, "dst", p, map[int32]string{0: b.addr}))
	wantBlocked(t, err)
	if got := contents(t, []*testNode{b}, "dst", 1); len(got) != 0 {
		t.Fatalf("%d documents written into the blocked index", len(got))
	}
}
