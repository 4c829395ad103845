package main

import (
	"strings"
	"testing"

	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// printHealth lists every copy with a move note — moving, waiting, or
// backing off after a failed move — besides the copies not started.
func TestPrintHealthListsMoves(t *testing.T) {
	started := sluicev1.ShardState_SHARD_STATE_STARTED
	tests := []struct {
		name string
		h    *sluicev1.ClusterHealthResponse
		want []string
		not  []string
	}{
		{name: "no move: no moves table",
			h: &sluicev1.ClusterHealthResponse{Indices: []*sluicev1.IndexHealth{{Index: "x", Shards: []*sluicev1.ShardRouting{
				{Shard: 0, Primary: true, NodeId: "n1", State: started}}}}},
			not: []string{"MOVE"}},
		{name: "a copy moving: counted in the summary",
			h: &sluicev1.ClusterHealthResponse{ClusterName: "c", RelocatingShards: 1, Indices: []*sluicev1.IndexHealth{{Index: "x", Shards: []*sluicev1.ShardRouting{
				{Shard: 0, NodeId: "n2", State: sluicev1.ShardState_SHARD_STATE_INITIALIZING, RelocatingFromNode: "n1"}}}}},
			want: []string{"1 copies moving"}},
		{name: "a copy backing off after a failed move",
			h: &sluicev1.ClusterHealthResponse{Indices: []*sluicev1.IndexHealth{{Index: "x", Shards: []*sluicev1.ShardRouting{
				{Shard: 0, Primary: true, NodeId: "n1", State: started,
					Move: "node [n1] is being drained; cannot move: no node can take the copy: node [n2] failed a move of this copy (last: disk error); not tried again before 2026-11-26T02:14:05Z"}}}}},
			want: []string{"SHARD", "MOVE", "x[0]", "primary", "n1", "node [n2] failed a move of this copy (last: disk error)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			if err := printHealth(&b, tt.h); err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, b.String())
				}
			}
			for _, w := range tt.not {
				if strings.Contains(b.String(), w) {
					t.Errorf("output has %q:\n%s", w, b.String())
				}
			}
		})
	}
}

// printState names the node a relocating copy moves from, whether or not
// the allocator's reason already says so.
func TestPrintStateShowsMoves(t *testing.T) {
	for _, reason := range []string{"", "moving here from node [n1] (node [n1] is being drained); recovering from the primary"} {
		var b strings.Builder
		st := &sluicev1.ClusterStateResponse{ClusterName: "c", Indices: []*sluicev1.IndexInfo{{Name: "x", Shards: []*sluicev1.ShardRouting{
			{Shard: 0, NodeId: "n2", State: sluicev1.ShardState_SHARD_STATE_INITIALIZING, RelocatingFromNode: "n1", Reason: reason}}}}}
		if err := printState(&b, st); err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(b.String(), "moving here from node [n1]"); n != 1 {
			t.Errorf("reason %q: the move is named %d times, want once:\n%s", reason, n, b.String())
		}
	}
}

// TestPrintStateShowsNodeShuttingDown: an operator sees which node is
// stopping (its primaries being handed off) and which is being drained.
func TestPrintStateShowsNodeShuttingDown(t *testing.T) {
	var b strings.Builder
	st := &sluicev1.ClusterStateResponse{ClusterName: "c", Nodes: []*sluicev1.NodeInfo{
		{Id: "n1", Live: true, ShuttingDown: true}, {Id: "n2", Live: true, Draining: true}}}
	if err := printState(&b, st); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	for _, tc := range []struct{ node, want string }{{"n1", "no  yes"}, {"n2", "yes  no"}} {
		found := false
		for _, l := range lines {
			if strings.HasPrefix(l, tc.node+" ") {
				found = true
				if !strings.Contains(strings.Join(strings.Fields(l), "  "), tc.want) {
					t.Errorf("node %s: want DRAINING/SHUTTING DOWN %q in %q", tc.node, tc.want, l)
				}
			}
		}
		if !found {
			t.Errorf("node %s not listed:\n%s", tc.node, b.String())
		}
	}
}
