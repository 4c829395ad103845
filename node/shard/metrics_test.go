package shard

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
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
