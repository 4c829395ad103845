package replication

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/sluice-search/sluice/cluster/state"
	"github.com/sluice-search/sluice/node/engine"
	"github.com/sluice-search/sluice/node/shard"
	nodev1 "github.com/sluice-search/sluice/proto/sluice/node/v1"
)

// slowReplica is a replica copy's node, as a primary's group reaches it:
// it takes operations at once and installs a checkpoint after delay,
// recording the versions it installed.
type slowReplica struct {
	delay time.Duration
	mu    sync.Mutex
	got   []int64
}

func (r *slowReplica) Invoke(_ context.Context, method string, args, reply any, _ ...grpc.CallOption) error {
	switch req := args.(type) {
	case *nodev1.ReplicateOpsRequest:
		var lcp int64 = -1
		for _, op := range req.GetOps() {
			lcp = max(lcp, op.GetSeqNo())
		}
		reply.(*nodev1.ReplicateOpsResponse).LocalCheckpoint = lcp
		return nil
	case *nodev1.PublishCheckpointRequest:
		cp, err := engine.DecodeCheckpoint(req.GetCheckpoint())
		if err != nil {
			return err
		}
		time.Sleep(r.delay)
		r.mu.Lock()
		r.got = append(r.got, cp.Version)
		r.mu.Unlock()
		reply.(*nodev1.PublishCheckpointResponse).VisibleSeqNo = cp.SeqNo
		return nil
	}
	return fmt.Errorf("%s: not served by this test", method)
}

func (r *slowReplica) NewStream(context.Context, *grpc.StreamDesc, string, ...grpc.CallOption) (grpc.ClientStream, error) {
	return nil, errors.New("no streams in this test")
}

// installed is the newest checkpoint version the replica installed (-1:
// none).
func (r *slowReplica) installed() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	v := int64(-1)
	for _, g := range r.got {
		v = max(v, g)
	}
	return v
}

// sourceShard opens shard "src" on h holding docs d0..d<n-1> and returns
// it with a reader of them (released at the test's end).
func sourceShard(t *testing.T, h *shard.Host, n int) (*shard.Shard, *engine.Reader) {
	t.Helper()
	src, err := h.Open(context.Background(), shard.Meta{ID: shard.ID{IndexUUID: "src"}, Index: "src"})
	if err != nil {
		t.Fatal(err)
	}
	var ops []shard.Op
	for i := range n {
		ops = append(ops, shard.Op{Kind: shard.OpIndex, ID: fmt.Appendf(nil, "d%d", i), Source: fmt.Appendf(nil, `{"n":%d}`, i)})
	}
	if _, err := src.Bulk(context.Background(), ops, shard.RefreshImmediate); err != nil {
		t.Fatal(err)
	}
	rd := src.Acquire()
	t.Cleanup(rd.Release)
	return src, rd
}

// TestAddIndexesWaitsForInSyncCopies: segments added to a primary outside
// its translog (AddIndexes, a reindex's segment copy) are installed on
// every in-sync copy when AddIndexes returns — a copy handed the primary's
// role later holds them, as no translog replay could bring them back —
// and an add whose copy cannot take them while the primary's term has
// ended is not acknowledged.
func TestAddIndexesWaitsForInSyncCopies(t *testing.T) {
	ctx := context.Background()
	store, h := newHost(t)
	_, rd := sourceShard(t, h, 50)

	for _, tt := range []struct {
		name    string
		etcd    int64 // the shard's term in etcd; the primary's is 2
		reach   bool  // the replica's node answers
		wantErr error
	}{
		{name: "replica installs", etcd: 2, reach: true},
		{name: "term ended, replica gone", etcd: 3, wantErr: ErrUnavailable},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rep := &slowReplica{delay: time.Second}
			svc := New(Config{NodeID: "n1", Host: h, Store: store, Logger: slog.New(slog.DiscardHandler),
				Dial: func(node string) (grpc.ClientConnInterface, error) {
					if !tt.reach {
						return nil, fmt.Errorf("node [%s] unreachable", node)
					}
					return rep, nil
				}})
			id := state.ShardID{Index: "dst-" + fmt.Sprint(tt.etcd)}
			primary := "p"
			if tt.etcd != 2 {
				primary = "r" // promoted in etcd; this primary has not heard
			}
			sh := openPrimary(t, svc, store, h, id, twoCopies(tt.etcd, primary))
			res, err := sh.AddIndexes(ctx, rd, engine.AddIndexesOptions{Marker: "test/0"})
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("AddIndexes: %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil || res.Docs != 50 {
				t.Fatalf("AddIndexes: %+v %v", res, err)
			}
			cp, err := sh.Engine().Checkpoint(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer cp.Release()
			if got := rep.installed(); got < cp.Version {
				t.Fatalf("when AddIndexes returned the replica had installed checkpoint version %d, the primary's holding the added segments is %d", got, cp.Version)
			}
		})
	}
}

// TestAddIndexesCopiedDocsHaveNoVersion: through the shard's API, a doc a
// segment copy brought has no version in the destination (seq_no -2) —
// not the source's, which a write in the destination could take — so a
// bulk write conditional on the version a client read from the source is
// a conflict, however the destination's own seqNos run; a plain update
// gives the doc a destination version.
func TestAddIndexesCopiedDocsHaveNoVersion(t *testing.T) {
	ctx := context.Background()
	_, h := newHost(t)
	src, rd := sourceShard(t, h, 10)
	dst, err := h.Open(ctx, shard.Meta{ID: shard.ID{IndexUUID: "dst"}, Index: "dst"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dst.AddIndexes(ctx, rd, engine.AddIndexesOptions{Marker: "test/0"}); err != nil {
		t.Fatal(err)
	}
	// The destination's own writes take seqNos 0..9, each some copied
	// doc's version in the source.
	var writes []shard.Op
	for i := range 10 {
		writes = append(writes, shard.Op{Kind: shard.OpIndex, ID: fmt.Appendf(nil, "new%d", i), Source: []byte(`{"n":0}`)})
	}
	if _, err := dst.Bulk(ctx, writes, shard.RefreshImmediate); err != nil {
		t.Fatal(err)
	}
	var conds []shard.Op
	for i := range 10 {
		id := fmt.Appendf(nil, "d%d", i)
		sd, found, err := src.Get(ctx, id, true)
		if err != nil || !found {
			t.Fatalf("source get d%d: %v %v", i, found, err)
		}
		dd, found, err := dst.Get(ctx, id, true)
		if err != nil || !found || dd.Version != (engine.DocVersion{SeqNo: engine.UnassignedSeqNo}) {
			t.Fatalf("destination get d%d: version %+v found %v %v, want seq_no -2", i, dd.Version, found, err)
		}
		conds = append(conds, shard.Op{Kind: shard.OpUpdate, ID: id, Source: []byte(`{"n":-1}`), If: &sd.Version})
	}
	res, err := dst.Bulk(ctx, conds, shard.RefreshImmediate)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if !errors.Is(r.Err, engine.ErrVersionConflict) {
			t.Errorf("update of d%d if its source version %+v: %v, want a version conflict", i, conds[i].If, r.Err)
		}
	}
	res, err = dst.Bulk(ctx, []shard.Op{{Kind: shard.OpUpdate, ID: []byte("d0"), Source: []byte(`{"n":-1}`)}}, shard.RefreshImmediate)
	if err != nil || res[0].Err != nil {
		t.Fatalf("update of d0: %v %v", err, res[0].Err)
	}
	dd, _, err := dst.Get(ctx, []byte("d0"), true)
	if err != nil || dd.Version != (engine.DocVersion{SeqNo: res[0].SeqNo, PrimaryTerm: res[0].Term}) {
		t.Fatalf("d0 after an update: version %+v %v, want %d/%d", dd.Version, err, res[0].SeqNo, res[0].Term)
	}
}
