package shard

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sluice-search/sluice/node/engine/translog"
)

func TestCollectorReportsEachShard(t *testing.T) {
	ctx := context.Background()
	h := newHost(t, nil)
	for shard, docs := range []int{5, 8} {
		s, err := h.Open(ctx, Meta{ID: ID{IndexUUID: "u1", Shard: shard}, Index: "books"})
		if err != nil {
			t.Fatal(err)
		}
		for i := range docs {
			if _, err := s.IndexDoc(ctx, fmt.Appendf(nil, "%d", i), fmt.Appendf(nil, `{"n":%d}`, i), false); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
	}
	want := `
# HELP sluice_shard_docs Live documents as of the last refresh.
# TYPE sluice_shard_docs gauge
sluice_shard_docs{index="books",shard="0"} 5
sluice_shard_docs{index="books",shard="1"} 8
`
	if err := testutil.CollectAndCompare(h.Collector(), strings.NewReader(want), "sluice_shard_docs"); err != nil {
		t.Fatal(err)
	}
	// Sequence numbers start at 1.
	if err := testutil.CollectAndCompare(h.Collector(), strings.NewReader(`
# HELP sluice_shard_max_seq_no Highest sequence number assigned.
# TYPE sluice_shard_max_seq_no gauge
sluice_shard_max_seq_no{index="books",shard="0"} 5
sluice_shard_max_seq_no{index="books",shard="1"} 8
`), "sluice_shard_max_seq_no"); err != nil {
		t.Fatal(err)
	}
	// Every described metric is collected once per shard, and the
	// collector passes the registry's consistency checks.
	if n := testutil.CollectAndCount(h.Collector()); n != 2*26 {
		t.Fatalf("collected %d metrics, want %d", n, 2*26)
	}
	if problems, err := testutil.CollectAndLint(h.Collector()); err != nil || len(problems) > 0 {
		t.Fatalf("lint: %v %v", problems, err)
	}
}

// One collector serves the shards of several hosts (sluice dev's nodes);
// a shard open on two hosts at once is reported once.
func TestCollectorOverHosts(t *testing.T) {
	ctx := context.Background()
	a, b := newHost(t, nil), newHost(t, nil)
	open := func(h *Host, shard int) {
		t.Helper()
		if _, err := h.Open(ctx, Meta{ID: ID{IndexUUID: "u1", Shard: shard}, Index: "books"}); err != nil {
			t.Fatal(err)
		}
	}
	open(a, 0)
	open(b, 1)
	open(b, 0) // moving: open on both
	c := Collector(func() []*Host { return []*Host{a, b} })
	want := `
# HELP sluice_shard_docs Live documents as of the last refresh.
# TYPE sluice_shard_docs gauge
sluice_shard_docs{index="books",shard="0"} 0
sluice_shard_docs{index="books",shard="1"} 0
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "sluice_shard_docs"); err != nil {
		t.Fatal(err)
	}
	if problems, err := testutil.CollectAndLint(c); err != nil || len(problems) > 0 {
		t.Fatalf("lint: %v %v", problems, err)
	}
}

// A replica copy reports sluice_replica_* (not sluice_shard_*, which
// count each shard once, by its primary), next to its primary in one
// process (sluice dev): what it received, what it shows, the lag between.
func TestCollectorReportsReplicas(t *testing.T) {
	ctx := context.Background()
	a, b := newHost(t, nil), newHost(t, nil)
	meta := Meta{ID: ID{IndexUUID: "u1", Shard: 0}, Index: "books"}
	p, err := a.Open(ctx, meta)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.IndexDoc(ctx, []byte("1"), []byte(`{"n":1}`), false); err != nil {
		t.Fatal(err)
	}
	r, err := b.OpenReplica(ctx, meta)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Replica().SetPrimaryTerm(1); err != nil {
		t.Fatal(err)
	}
	var ops []translog.Op
	for i := 1; i <= 3; i++ {
		ops = append(ops, translog.Op{Type: translog.OpIndex, SeqNo: uint64(i), PrimaryTerm: 1,
			ID: fmt.Appendf(nil, "%d", i), Source: fmt.Appendf(nil, `{"n":%d}`, i)})
	}
	if _, err := r.Replica().ApplyOps(ctx, 1, ops); err != nil {
		t.Fatal(err)
	}
	c := Collector(func() []*Host { return []*Host{a, b} })
	want := `
# HELP sluice_replica_max_seq_no Highest sequence number the replica copy received.
# TYPE sluice_replica_max_seq_no gauge
sluice_replica_max_seq_no{index="books",shard="0"} 3
# HELP sluice_replica_visibility_lag_ops Operations the replica copy holds but does not show to searches yet (max_seq_no - visible_seq_no).
# TYPE sluice_replica_visibility_lag_ops gauge
sluice_replica_visibility_lag_ops{index="books",shard="0"} 3
# HELP sluice_shard_max_seq_no Highest sequence number assigned.
# TYPE sluice_shard_max_seq_no gauge
sluice_shard_max_seq_no{index="books",shard="0"} 1
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "sluice_replica_max_seq_no",
		"sluice_replica_visibility_lag_ops", "sluice_shard_max_seq_no"); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(c); n != 26+len(replicaDescs) {
		t.Fatalf("collected %d metrics, want %d", n, 26+len(replicaDescs))
	}
	if problems, err := testutil.CollectAndLint(c); err != nil || len(problems) > 0 {
		t.Fatalf("lint: %v %v", problems, err)
	}
}
