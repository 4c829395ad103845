package replication

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"

	"github.com/sluice-search/sluice/cluster/etcdtest"
	"github.com/sluice-search/sluice/cluster/state"
	"github.com/sluice-search/sluice/node/shard"
	statev1 "github.com/sluice-search/sluice/proto/sluice/state/v1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// TestStalePrimaryStopsAcknowledging: a primary whose replica fails, and
// which cannot remove it from the in-sync set because the shard's term
// moved on in etcd (another copy was promoted), acknowledges nothing —
// the bulk fails UNAVAILABLE — and acknowledges nothing more, without
// even trying, until the routing shows it primary at its term.
func TestStalePrimaryStopsAcknowledging(t *testing.T) {
	ctx := context.Background()
	store, h := newHost(t)
	var dials atomic.Int32
	svc := New(Config{NodeID: "n1", Host: h, Store: store, Logger: slog.New(slog.DiscardHandler),
		Dial: func(node string) (grpc.ClientConnInterface, error) {
			dials.Add(1)
			return nil, fmt.Errorf("node [%s] unreachable", node)
		}})
	id := state.ShardID{Index: "u1"}
	// In etcd the replica was promoted at term 3; this primary, at term
	// 2, has not heard.
	sh := openPrimary(t, svc, store, h, id, twoCopies(3, "r"))
	g, err := svc.group(id)
	if err != nil {
		t.Fatal(err)
	}
	op := []shard.Op{{Kind: shard.OpIndex, ID: []byte("a"), Source: []byte(`{}`)}}
	if _, err := sh.Bulk(ctx, op, shard.RefreshNone); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("bulk with a failed replica and a stale term: %v, want ErrUnavailable", err)
	}
	tried := dials.Load()
	if _, err := sh.Bulk(ctx, op, shard.RefreshNone); !errors.Is(err, ErrUnavailable) || dials.Load() != tried {
		t.Fatalf("second bulk: %v, %d more dials; want ErrUnavailable at once", err, dials.Load()-tried)
	}
	// The routing shows another primary: still stale.
	g.follow(twoCopies(3, "r"))
	if _, err := sh.Bulk(ctx, op, shard.RefreshNone); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("bulk after the routing showed another primary: %v", err)
	}
}

// twoCopies is the routing entry of a shard with copies p on n1 and r on
// n2, both in sync, primary the primary's allocation id.
func twoCopies(term int64, primary string) *statev1.ShardRouting {
	return &statev1.ShardRouting{PrimaryTerm: term, InSync: []string{"p", "r"}, Copies: []*statev1.ShardCopy{
		{NodeId: "n1", AllocationId: "p", Primary: primary == "p", State: sluicev1.ShardState_SHARD_STATE_STARTED},
		{NodeId: "n2", AllocationId: "r", Primary: primary == "r", State: sluicev1.ShardState_SHARD_STATE_STARTED}}}
}

// openPrimary opens copy p of shard id on svc as its primary at term 2,
// whose group sees p primary at term 2 with r in sync, while etcd holds
// inEtcd.
func openPrimary(t *testing.T, svc *Service, store *state.Store, h *shard.Host, id state.ShardID, inEtcd *statev1.ShardRouting) *shard.Shard {
	t.Helper()
	ctx := context.Background()
	var txn state.Txn
	txn.Put(store.Keys.Shard(id.Index, id.Shard), inEtcd)
	if err := store.Commit(ctx, &txn); err != nil {
		t.Fatal(err)
	}
	if err := svc.OpenPrimary(ctx, shard.Meta{ID: shard.ID{IndexUUID: id.Index}, Index: "x"}, id, Role{AllocationID: "p", Primary: true, Term: 2}); err != nil {
		t.Fatal(err)
	}
	g, err := svc.group(id)
	if err != nil {
		t.Fatal(err)
	}
	g.follow(twoCopies(2, "p"))
	sh, err := h.Get(shard.ID{IndexUUID: id.Index})
	if err != nil {
		t.Fatal(err)
	}
	return sh
}

// newHost is a shard host over a temporary directory, and a store over a
// real etcd.
func newHost(t *testing.T) (*state.Store, *shard.Host) {
	t.Helper()
	store := state.NewStore(etcdtest.New(t), "")
	h, err := shard.NewHost(shard.HostOptions{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.CloseAll(context.Background()) })
	return store, h
}
