package replication

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/sluice-search/sluice/cluster/etcdtest"
	"github.com/sluice-search/sluice/cluster/state"
	"github.com/sluice-search/sluice/node/engine/document"
	"github.com/sluice-search/sluice/node/engine/mapping"
	"github.com/sluice-search/sluice/node/shard"
	statev1 "github.com/sluice-search/sluice/proto/sluice/state/v1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// TestHistoryReachesTheCopyAsLogged: the operations a primary streams
// from its translog (a resync here; a peer recovery's phase 2 sends them
// the same way, sendHistory) reach the copy's translog with their own ids
// and sources, so the copy, promoted, replays every acknowledged write.
// The translog snapshot reuses its buffer from one record to the next: a
// batch that kept the records' bytes sent every op with the ids and
// sources of the last ones read, and a copy promoted right after a
// recovery (a primary's relocation target) lost what its segments did not
// hold yet.
func TestHistoryReachesTheCopyAsLogged(t *testing.T) {
	ctx := context.Background()
	store := state.NewStore(etcdtest.New(t), "")
	id := state.ShardID{Index: "u1"}
	key := shard.ID{IndexUUID: id.Index}
	m, err := mapping.New(mapping.DynamicDefault, map[string]mapping.Field{"n": mapping.NewField(document.Long)})
	if err != nil {
		t.Fatal(err)
	}
	meta := shard.Meta{ID: key, Index: "x", Mapping: m}

	// n2 holds a replica copy "r" that has nothing yet, served over gRPC.
	h2, err := shard.NewHost(shard.HostOptions{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h2.CloseAll(ctx) })
	svc2 := New(Config{NodeID: "n2", Host: h2, Store: store, Logger: slog.New(slog.DiscardHandler)})
	if _, err := h2.OpenReplica(ctx, meta); err != nil {
		t.Fatal(err)
	}
	svc2.copies[id] = &copyInfo{role: Role{AllocationID: "r", Term: 1, PrimaryNode: "n1", PrimaryAllocation: "p"}}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	svc2.Register(srv)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })

	// n1's primary "p" logs writes of distinct ids before "r" is in its
	// group.
	h1, err := shard.NewHost(shard.HostOptions{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h1.CloseAll(ctx) })
	svc1 := New(Config{NodeID: "n1", Host: h1, Store: store, Logger: slog.New(slog.DiscardHandler),
		Dial: func(node string) (grpc.ClientConnInterface, error) {
			if node != "n2" {
				return nil, fmt.Errorf("node [%s] unknown", node)
			}
			return conn, nil
		}})
	if err := svc1.OpenPrimary(ctx, meta, id, Role{AllocationID: "p", Primary: true, Term: 1}); err != nil {
		t.Fatal(err)
	}
	sh, err := h1.Get(key)
	if err != nil {
		t.Fatal(err)
	}
	const docs = 50
	ops := make([]shard.Op, docs)
	for i := range ops {
		ops[i] = shard.Op{Kind: shard.OpIndex, ID: fmt.Appendf(nil, "doc-%03d", i), Source: fmt.Appendf(nil, `{"n":%d}`, i)}
	}
	mustBulk(t, sh, ops)

	// "r" joins the group in sync; the resync streams it the history.
	g, err := svc1.group(id)
	if err != nil {
		t.Fatal(err)
	}
	g.follow(&statev1.ShardRouting{PrimaryTerm: 1, InSync: []string{"p", "r"}, Copies: []*statev1.ShardCopy{
		{NodeId: "n1", AllocationId: "p", Primary: true, State: sluicev1.ShardState_SHARD_STATE_STARTED},
		{NodeId: "n2", AllocationId: "r", State: sluicev1.ShardState_SHARD_STATE_STARTED}}})
	g.resyncAll(ctx)
	if n := len(g.inSync()); n != 1 {
		t.Fatalf("%d copies in sync after the resync, want 1 (it failed)", n)
	}

	// Promoted, "r" replays its translog: every write is there as written.
	psh, err := h2.Promote(ctx, key, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	rd := psh.Acquire()
	n := rd.NumDocs()
	rd.Release()
	var wrong []string
	for i := range docs {
		doc, found, err := psh.Get(ctx, ops[i].ID, true)
		if err != nil {
			t.Fatal(err)
		}
		if !found || string(doc.Source) != string(ops[i].Source) {
			wrong = append(wrong, fmt.Sprintf("%s: found %v, source %s", ops[i].ID, found, doc.Source))
		}
	}
	if n != docs || len(wrong) > 0 {
		t.Errorf("promoted copy: %d docs, want %d; %d ids wrong, e.g. %v", n, docs, len(wrong), wrong[:min(3, len(wrong))])
	}
}
