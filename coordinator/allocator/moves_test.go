package allocator

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sluice-search/sluice/cluster/etcdtest"
	"github.com/sluice-search/sluice/cluster/metadata"
	"github.com/sluice-search/sluice/cluster/state"
	statev1 "github.com/sluice-search/sluice/proto/sluice/state/v1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// recovering marks nodes as able to recover a copy from its primary.
func recovering(st *state.Snapshot, nodes ...string) {
	for _, n := range nodes {
		st.Nodes[n].Info.Capabilities = []string{state.CapabilityPeerRecovery}
	}
}

func TestPlanMoves(t *testing.T) {
	single := func() *statev1.ShardRouting {
		return &statev1.ShardRouting{PrimaryTerm: 1, InSync: []string{"p"}, Copies: []*statev1.ShardCopy{
			{NodeId: "n1", AllocationId: "p", Primary: true, State: started}}}
	}
	tests := []struct {
		name     string
		nodes    []string
		capable  []string
		drained  []string
		replicas int32
		shard    *statev1.ShardRouting
		want     *statev1.ShardRouting
	}{
		{name: "a drained node's primary gets a target on a node that can recover it",
			nodes: []string{"n1", "n2"}, capable: []string{"n2"}, drained: []string{"n1"}, shard: single(),
			want: &statev1.ShardRouting{PrimaryTerm: 1, InSync: []string{"p"}, Copies: []*statev1.ShardCopy{
				{NodeId: "n1", AllocationId: "p", Primary: true, State: started, Move: "node [n1] is being drained; moving to node [n2]"},
				{NodeId: "n2", AllocationId: "id1", State: initializing, RelocatingFrom: "p",
					Reason: "moving here from node [n1] (node [n1] is being drained); recovering from the primary"}}}},
		{name: "no node can recover a copy: the source stays and says why",
			nodes: []string{"n1", "n2"}, drained: []string{"n1"}, shard: single(),
			want: &statev1.ShardRouting{PrimaryTerm: 1, InSync: []string{"p"}, Copies: []*statev1.ShardCopy{
				{NodeId: "n1", AllocationId: "p", Primary: true, State: started,
					Move: "node [n1] is being drained; cannot move: no node can take the copy: node [n1] holds a copy of the shard already; " +
						"node [n2] cannot recover a copy from its primary (its version has no peer recovery)"}}}},
		{name: "a target still recovering: nothing changes",
			nodes: []string{"n1", "n2"}, capable: []string{"n2"}, drained: []string{"n1"},
			shard: &statev1.ShardRouting{PrimaryTerm: 1, InSync: []string{"p"}, Copies: []*statev1.ShardCopy{
				{NodeId: "n1", AllocationId: "p", Primary: true, State: started, Move: "m"},
				{NodeId: "n2", AllocationId: "t", State: initializing, RelocatingFrom: "p"}}},
			want: &statev1.ShardRouting{PrimaryTerm: 1, InSync: []string{"p"}, Copies: []*statev1.ShardCopy{
				{NodeId: "n1", AllocationId: "p", Primary: true, State: started, Move: "m"},
				{NodeId: "n2", AllocationId: "t", State: initializing, RelocatingFrom: "p"}}}},
		{name: "a started, in-sync target takes over the primary: term + 1, the source gone",
			nodes: []string{"n1", "n2"}, capable: []string{"n2"}, drained: []string{"n1"},
			shard: &statev1.ShardRouting{PrimaryTerm: 1, InSync: []string{"p", "t"}, Copies: []*statev1.ShardCopy{
				{NodeId: "n1", AllocationId: "p", Primary: true, State: started, Move: "m"},
				{NodeId: "n2", AllocationId: "t", State: started, RelocatingFrom: "p", Reason: "moving"}}},
			want: &statev1.ShardRouting{PrimaryTerm: 2, InSync: []string{"t"}, Copies: []*statev1.ShardCopy{
				{NodeId: "n2", AllocationId: "t", Primary: true, State: started}}}},
		{name: "a replica's move: the source is dropped, the term stays",
			nodes: []string{"n1", "n2", "n3"}, capable: []string{"n3"}, drained: []string{"n2"}, replicas: 1,
			shard: &statev1.ShardRouting{PrimaryTerm: 1, InSync: []string{"p", "r", "t"}, Copies: []*statev1.ShardCopy{
				{NodeId: "n1", AllocationId: "p", Primary: true, State: started},
				{NodeId: "n2", AllocationId: "r", State: started, Move: "m"},
				{NodeId: "n3", AllocationId: "t", State: started, RelocatingFrom: "r"}}},
			want: &statev1.ShardRouting{PrimaryTerm: 1, InSync: []string{"p", "t"}, Copies: []*statev1.ShardCopy{
				{NodeId: "n1", AllocationId: "p", Primary: true, State: started},
				{NodeId: "n3", AllocationId: "t", State: started}}}},
		{name: "a failed target is dropped; the source stays and notes it (the move is tried again)",
			nodes: []string{"n1", "n2"}, drained: []string{"n1"},
			shard: &statev1.ShardRouting{PrimaryTerm: 1, InSync: []string{"p"}, Copies: []*statev1.ShardCopy{
				{NodeId: "n1", AllocationId: "p", Primary: true, State: started, Move: "m"},
				{NodeId: "n2", AllocationId: "t", State: failed, RelocatingFrom: "p", Reason: "disk error"}}},
			want: &statev1.ShardRouting{PrimaryTerm: 1, InSync: []string{"p"}, Copies: []*statev1.ShardCopy{
				{NodeId: "n1", AllocationId: "p", Primary: true, State: started,
					Move: "node [n1] is being drained; cannot move: no node can take the copy: node [n1] holds a copy of the shard already; " +
						"node [n2] cannot recover a copy from its primary (its version has no peer recovery)",
					MoveRetries: map[string]*statev1.MoveRetry{"n2": {Failures: 1, RetryAt: timestamppb.New(now.Add(MoveRetryInitial)), Reason: "disk error"}}}}}},
		{name: "a target whose node left is dropped at once",
			nodes: []string{"n1"}, capable: []string{"n1"},
			shard: &statev1.ShardRouting{PrimaryTerm: 1, InSync: []string{"p"}, Copies: []*statev1.ShardCopy{
				{NodeId: "n1", AllocationId: "p", Primary: true, State: started},
				{NodeId: "n2", AllocationId: "t", State: initializing, RelocatingFrom: "p"}}},
			want: &statev1.ShardRouting{PrimaryTerm: 1, InSync: []string{"p"}, Copies: []*statev1.ShardCopy{
				{NodeId: "n1", AllocationId: "p", Primary: true, State: started,
					Move: "node [n2] failed a move of this copy (last: node [n2] left the cluster (its lease expired)); not tried again before 1970-01-12T13:46:50Z",
					MoveRetries: map[string]*statev1.MoveRetry{"n2": {Failures: 1, RetryAt: timestamppb.New(now.Add(MoveRetryInitial)),
						Reason: "node [n2] left the cluster (its lease expired)"}}}}}},
		{name: "a target whose primary source died is cancelled; the shard waits for its primary",
			nodes: []string{"n2"}, capable: []string{"n2"},
			shard: &statev1.ShardRouting{PrimaryTerm: 1, InSync: []string{"p"}, Copies: []*statev1.ShardCopy{
				{NodeId: "n1", AllocationId: "p", Primary: true, State: started},
				{NodeId: "n2", AllocationId: "t", State: initializing, RelocatingFrom: "p"}}},
			want: &statev1.ShardRouting{PrimaryTerm: 1, InSync: []string{"p"}, Copies: []*statev1.ShardCopy{
				{NodeId: "n1", AllocationId: "p", Primary: true, State: nodeLeft, LeftAt: timestamppb.New(now),
					Reason: "node [n1] left the cluster (its lease expired); no in-sync replica on a live node to promote: waiting for the node (the shard's data is on its disk)",
					Move:   "the move to node [n2] was cancelled: the source copy is no longer active"}}}},
		{name: "a node past the high watermark moves a copy",
			nodes: []string{"n1", "n2"}, capable: []string{"n2"}, shard: single(),
			want: &statev1.ShardRouting{PrimaryTerm: 1, InSync: []string{"p"}, Copies: []*statev1.ShardCopy{
				{NodeId: "n1", AllocationId: "p", Primary: true, State: started,
					Move: "disk of node [n1] at /data/n1 is 92.0% used (8b free of 100b), past the high disk watermark [90%]; moving to node [n2]"},
				{NodeId: "n2", AllocationId: "id1", State: initializing, RelocatingFrom: "p",
					Reason: "moving here from node [n1] (disk of node [n1] at /data/n1 is 92.0% used (8b free of 100b), past the high disk watermark [90%]); recovering from the primary"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := snapshot(tt.nodes, tt.replicas, nil, tt.shard)
			recovering(st, tt.capable...)
			st.Settings = &sluicev1.ClusterSettings{DrainedNodes: tt.drained}
			if strings.Contains(tt.name, "high watermark") {
				withDisk(st, "n1", 8, 100)
			}
			got, _ := plan(t, Input{State: st, Keys: state.NewKeys("")})
			if d := cmp.Diff(tt.want, got[0], protocmp.Transform()); d != "" {
				t.Errorf("routing (-want +got):\n%s", d)
			}
		})
	}
}

// A failed move is retried with capped exponential backoff per target
// node: the node that failed is refused for the copy until its backoff
// runs out (another node may take the copy at once), the source's move
// note says why and until when, the allocator wakes then, and a long
// quiet spell forgets the failures.
func TestMoveRetryBackoff(t *testing.T) {
	failedTarget := func(retries map[string]*statev1.MoveRetry) *statev1.ShardRouting {
		return &statev1.ShardRouting{PrimaryTerm: 1, InSync: []string{"p"}, Copies: []*statev1.ShardCopy{
			{NodeId: "n1", AllocationId: "p", Primary: true, State: started, Move: "m", MoveRetries: retries},
			{NodeId: "n2", AllocationId: "t", State: failed, RelocatingFrom: "p", Reason: "recovery failed: disk error"}}}
	}
	retry := func(n int32, at time.Time) map[string]*statev1.MoveRetry {
		return map[string]*statev1.MoveRetry{"n2": {Failures: n, RetryAt: timestamppb.New(at), Reason: "recovery failed: disk error"}}
	}
	tests := []struct {
		name     string
		nodes    []string
		at       time.Time // the planning time
		shard    *statev1.ShardRouting
		wantNode string // the new target's node, "" for none
		wantMove string // the source's move note
		wantRty  map[string]*statev1.MoveRetry
		wantWake time.Time
	}{
		{name: "the first failure keeps the copy off the node for MoveRetryInitial",
			nodes: []string{"n1", "n2"}, at: now, shard: failedTarget(nil),
			wantMove: "node [n1] is being drained; cannot move: no node can take the copy: node [n1] holds a copy of the shard already; " +
				"node [n2] failed a move of this copy (last: recovery failed: disk error); not tried again before 1970-01-12T13:46:50Z",
			wantRty: retry(1, now.Add(10*time.Second)), wantWake: now.Add(10 * time.Second)},
		{name: "another node takes the copy at once",
			nodes: []string{"n1", "n2", "n3"}, at: now, shard: failedTarget(nil), wantNode: "n3",
			wantMove: "node [n1] is being drained; moving to node [n3] (node [n2] failed a move of this copy (last: recovery failed: disk error); not tried again before 1970-01-12T13:46:50Z)",
			wantRty:  retry(1, now.Add(10*time.Second)), wantWake: now.Add(10 * time.Second)},
		{name: "failures in a row double the backoff",
			nodes: []string{"n1", "n2"}, at: now, shard: failedTarget(retry(2, now.Add(-time.Second))),
			wantMove: "node [n1] is being drained; cannot move: no node can take the copy: node [n1] holds a copy of the shard already; " +
				"node [n2] failed 3 moves of this copy in a row (last: recovery failed: disk error); not tried again before 1970-01-12T13:47:20Z",
			wantRty: retry(3, now.Add(40*time.Second)), wantWake: now.Add(40 * time.Second)},
		{name: "the backoff is capped",
			nodes: []string{"n1", "n2"}, at: now, shard: failedTarget(retry(12, now.Add(-time.Second))),
			wantMove: "node [n1] is being drained; cannot move: no node can take the copy: node [n1] holds a copy of the shard already; " +
				"node [n2] failed 13 moves of this copy in a row (last: recovery failed: disk error); not tried again before 1970-01-12T13:51:40Z",
			wantRty: retry(13, now.Add(MoveRetryMax)), wantWake: now.Add(MoveRetryMax)},
		{name: "once the backoff ran out the node is tried again; the failures are kept",
			nodes: []string{"n1", "n2"}, at: now.Add(10 * time.Second),
			shard: &statev1.ShardRouting{PrimaryTerm: 1, InSync: []string{"p"}, Copies: []*statev1.ShardCopy{
				{NodeId: "n1", AllocationId: "p", Primary: true, State: started, Move: "m", MoveRetries: retry(1, now.Add(10*time.Second))}}},
			wantNode: "n2", wantMove: "node [n1] is being drained; moving to node [n2]", wantRty: retry(1, now.Add(10*time.Second))},
		{name: "failures are forgotten MoveRetryMax after their backoff ran out",
			nodes: []string{"n1", "n2"}, at: now.Add(10*time.Second + MoveRetryMax + time.Second),
			shard: &statev1.ShardRouting{PrimaryTerm: 1, InSync: []string{"p"}, Copies: []*statev1.ShardCopy{
				{NodeId: "n1", AllocationId: "p", Primary: true, State: started, Move: "m", MoveRetries: retry(1, now.Add(10*time.Second))}}},
			wantNode: "n2", wantMove: "node [n1] is being drained; moving to node [n2]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := snapshot(tt.nodes, 0, nil, tt.shard)
			recovering(st, tt.nodes...)
			st.Settings = &sluicev1.ClusterSettings{DrainedNodes: []string{"n1"}}
			ups, wake := Plan(Input{State: st, Keys: state.NewKeys(""), Now: tt.at, NewID: ids()})
			if len(ups) != 1 {
				t.Fatalf("changes = %v", ups)
			}
			r := ups[0].Routing
			src := state.CopyByAllocation(r, "p")
			var node string
			for _, c := range r.Copies {
				if c.RelocatingFrom == "p" {
					node = c.NodeId
				}
			}
			if node != tt.wantNode {
				t.Errorf("target on %q, want %q", node, tt.wantNode)
			}
			if src.Move != tt.wantMove {
				t.Errorf("move note:\n got %s\nwant %s", src.Move, tt.wantMove)
			}
			if d := cmp.Diff(tt.wantRty, src.MoveRetries, protocmp.Transform()); d != "" {
				t.Errorf("retries (-want +got):\n%s", d)
			}
			if !wake.Equal(tt.wantWake) {
				t.Errorf("wake = %v, want %v", wake, tt.wantWake)
			}
		})
	}

	// Rebalancing leaves a copy off a node its move there failed to.
	var shards []*statev1.ShardRouting
	for i := range 6 {
		shards = append(shards, &statev1.ShardRouting{Shard: int32(i), PrimaryTerm: 1, InSync: []string{"p", "r"}, Copies: []*statev1.ShardCopy{
			{NodeId: []string{"n1", "n2"}[i%2], AllocationId: "p", Primary: true, State: started},
			{NodeId: []string{"n2", "n1"}[i%2], AllocationId: "r", State: started}}})
		for _, c := range shards[i].Copies {
			c.MoveRetries = map[string]*statev1.MoveRetry{"n3": {Failures: 1, RetryAt: timestamppb.New(now.Add(time.Second)), Reason: "x"}}
		}
	}
	st := snapshot([]string{"n1", "n2", "n3"}, 1, nil, shards...)
	recovering(st, "n1", "n2", "n3")
	ups, wake := Plan(Input{State: st, Keys: state.NewKeys(""), Now: now, NewID: ids()})
	for _, u := range ups {
		for _, c := range u.Routing.Copies {
			if c.RelocatingFrom != "" {
				t.Errorf("rebalanced to a node in backoff: %v", u.Routing)
			}
		}
	}
	if !wake.Equal(now.Add(time.Second)) {
		t.Errorf("wake = %v, want the backoff's end", wake)
	}
	st = snapshot([]string{"n1", "n2", "n3"}, 1, nil, shards...)
	recovering(st, "n1", "n2", "n3")
	if ups, _ := Plan(Input{State: st, Keys: state.NewKeys(""), Now: now.Add(time.Second), NewID: ids()}); len(ups) == 0 {
		t.Errorf("no rebalancing once the backoff ran out")
	}
}

// Rebalancing: a node that joins empty gets copies, a bounded number of
// moves at a time, never two copies of a shard on a node; a balanced
// cluster plans nothing, nor one where a move would only swap which node
// is the heavier. (Which copies move: TestPlanRebalanceCopies.)
func TestPlanRebalance(t *testing.T) {
	// Two shards of two copies on three nodes: 2, 1, 1 is as balanced as
	// it gets (a move makes it 1, 2, 1 and the next moves it back; the
	// randomized fault e2e, with primaries rebalanced, saw a primary
	// handed back and forth).
	pair := func(shard int32, p, r string) *statev1.ShardRouting {
		return &statev1.ShardRouting{Shard: shard, PrimaryTerm: 1, InSync: []string{"p", "r"}, Copies: []*statev1.ShardCopy{
			{NodeId: p, AllocationId: "p", Primary: true, State: started}, {NodeId: r, AllocationId: "r", State: started}}}
	}
	st := snapshot([]string{"n1", "n2", "n3"}, 1, nil, pair(0, "n2", "n1"), pair(1, "n3", "n1"))
	recovering(st, "n1", "n2", "n3")
	st.Nodes["n1"].Info.DiskFreeBytes = 99 // a copy's bytes more
	if ups, _ := Plan(Input{State: st, Keys: state.NewKeys(""), Now: now, NewID: ids()}); len(ups) != 0 {
		t.Errorf("2, 1, 1 copies plan %v", ups[0].Routing)
	}

	// Two indices of one shard, both replicas on n1, both primaries on
	// n2, n3 empty: one replica moves to n3 in a round. Weighed by the
	// counts before the first move, the second index moved its replica
	// too (n1 0, n2 2, n3 2), and the next round moved them back.
	st = snapshot([]string{"n1", "n2", "n3"}, 1, nil, pair(0, "n2", "n1"))
	y := &state.Index{Meta: &statev1.Index{Name: "y", Uuid: "uy", Settings: &sluicev1.IndexSettings{NumberOfShards: 1, NumberOfReplicas: 1}},
		Shards: []*state.Shard{{Routing: pair(0, "n2", "n1"), ModRevision: 7}}}
	st.Indices["y"], st.ByUUID["uy"] = y, y
	recovering(st, "n1", "n2", "n3")
	if ups, _ := Plan(Input{State: st, Keys: state.NewKeys(""), Now: now, NewID: ids()}); len(ups) != 1 {
		t.Errorf("%d rebalancing moves planned in one round, want 1 (the second weighed as if the first were done)", len(ups))
	}

	var shards []*statev1.ShardRouting
	for i := range 6 {
		shards = append(shards, &statev1.ShardRouting{Shard: int32(i), PrimaryTerm: 1, InSync: []string{"p", "r"}, Copies: []*statev1.ShardCopy{
			{NodeId: []string{"n1", "n2"}[i%2], AllocationId: "p", Primary: true, State: started},
			{NodeId: []string{"n2", "n1"}[i%2], AllocationId: "r", State: started}}})
	}
	st = snapshot([]string{"n1", "n2", "n3"}, 1, nil, shards...)
	recovering(st, "n1", "n2", "n3")
	got, _ := plan(t, Input{State: st, Keys: state.NewKeys("")})
	var moves []string
	for _, r := range got {
		for _, c := range r.Copies {
			if c.RelocatingFrom != "" {
				moves = append(moves, state.CopyByAllocation(r, c.RelocatingFrom).NodeId+"->"+c.NodeId)
				if !strings.HasPrefix(state.CopyByAllocation(r, c.RelocatingFrom).Move, "rebalancing index [x]: node [") {
					t.Errorf("source move = %q", state.CopyByAllocation(r, c.RelocatingFrom).Move)
				}
			}
		}
	}
	if len(moves) != 1 || !strings.HasSuffix(moves[0], "->n3") {
		t.Errorf("moves = %v, want one move to n3 (one per index per round)", moves)
	}

	// Balanced: 4 per node.
	for i, r := range shards {
		r.Copies[0].NodeId = []string{"n1", "n2", "n3"}[i%3]
		r.Copies[1].NodeId = []string{"n1", "n2", "n3"}[(i+1)%3]
	}
	st = snapshot([]string{"n1", "n2", "n3"}, 1, nil, shards...)
	recovering(st, "n1", "n2", "n3")
	if ups, _ := Plan(Input{State: st, Keys: state.NewKeys(""), Now: now, NewID: ids()}); len(ups) != 0 {
		t.Errorf("a balanced cluster plans %v", ups[0].Routing)
	}
	// Not while a copy is not active.
	shards[0].Copies[0].State = initializing
	st = snapshot([]string{"n1", "n2", "n3"}, 1, nil, shards...)
	recovering(st, "n1", "n2", "n3")
	st.Nodes["n4"] = &state.Node{ID: "n4", Info: &statev1.Node{Address: "n4", Capabilities: []string{state.CapabilityPeerRecovery}, DiskFreeBytes: 100, DiskTotalBytes: 200}}
	if ups, _ := Plan(Input{State: st, Keys: state.NewKeys(""), Now: now, NewID: ids()}); len(ups) != 0 {
		t.Errorf("rebalanced while a copy recovers: %v", ups[0].Routing)
	}
}

// A drain against the real state store (embedded etcd) and the running
// allocator, the node side played by the test the way a data node with
// peer recovery reports: the target appears, recovers (the primary adds
// it to the in-sync set, its node reports it STARTED), then the primary's
// role moves to it with a term bump and the drained node holds nothing.
func TestDrainAgainstStore(t *testing.T) {
	srv := etcdtest.Start(t)
	c := etcdtest.Client(t, srv)
	s := state.NewStore(c, "")
	md := metadata.New(s)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, n := range []string{"n1", "n2"} {
		var tx state.Txn
		tx.Put(s.Keys.Node(n), &statev1.Node{Address: "127.0.0.1:1", DiskFreeBytes: 100, DiskTotalBytes: 200, Capabilities: []string{state.CapabilityPeerRecovery}})
		if err := s.Commit(ctx, &tx); err != nil {
			t.Fatal(err)
		}
	}
	coordinator(t, ctx, srv.Endpoints(), "c1")
	if _, err := md.CreateIndex(ctx, &sluicev1.CreateIndexRequest{Name: "d", Settings: &sluicev1.IndexSettings{NumberOfShards: 2}}, metadata.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	info := waitIndex(t, s, "d", allAssigned)
	uuid := info.Uuid
	for _, sh := range info.Shards {
		if err := s.SetShardState(ctx, state.ShardID{Index: uuid, Shard: int(sh.Shard)}, sh.NodeId, sh.AllocationId, state.ShardReport{State: started}); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := md.DrainNode(ctx, "n1", false)
	if err != nil || resp.Copies != 1 || !resp.Draining {
		t.Fatalf("drain = %v, %v", resp, err)
	}
	// The target on n2, relocating from n1.
	info = waitIndex(t, s, "d", func(i *sluicev1.IndexInfo) bool {
		return slices.ContainsFunc(i.Shards, func(sh *sluicev1.ShardRouting) bool { return sh.RelocatingFromNode == "n1" })
	})
	var src, tgt *sluicev1.ShardRouting
	for _, sh := range info.Shards {
		if sh.RelocatingFromNode == "n1" {
			tgt = sh
		}
		if sh.NodeId == "n1" {
			src = sh
		}
	}
	if tgt.NodeId != "n2" || tgt.State != initializing || tgt.Primary || src.Move != "node [n1] is being drained; moving to node [n2]" {
		t.Fatalf("move = source %v, target %v", src, tgt)
	}
	// Nothing is dropped while the target recovers.
	time.Sleep(300 * time.Millisecond)
	st, _ := s.Load(ctx)
	if n := st.CopiesOn("n1"); n != 1 {
		t.Fatalf("n1 holds %d copies while its move is under way", n)
	}
	// Recovered: the primary takes it in sync, its node reports it started.
	id := state.ShardID{Index: uuid, Shard: int(tgt.Shard)}
	if err := s.AddInSync(ctx, id, src.PrimaryTerm, src.AllocationId, tgt.AllocationId); err != nil {
		t.Fatal(err)
	}
	if err := s.SetShardState(ctx, id, "n2", tgt.AllocationId, state.ShardReport{State: started}); err != nil {
		t.Fatal(err)
	}
	info = waitIndex(t, s, "d", func(i *sluicev1.IndexInfo) bool {
		for _, sh := range i.Shards {
			if sh.NodeId == "n1" {
				return false
			}
		}
		return true
	})
	for _, sh := range info.Shards {
		if sh.Shard == tgt.Shard {
			want := &sluicev1.ShardRouting{Shard: sh.Shard, NodeId: "n2", Primary: true, State: started, AllocationId: tgt.AllocationId, PrimaryTerm: src.PrimaryTerm + 1, InSync: true}
			if d := cmp.Diff(want, sh, protocmp.Transform()); d != "" {
				t.Errorf("moved shard (-want +got):\n%s", d)
			}
		}
	}
	if resp, err := md.DrainNode(ctx, "n1", false); err != nil || resp.Copies != 0 {
		t.Errorf("drained node: %v, %v", resp, err)
	}
	if resp, err := md.DrainNode(ctx, "n1", true); err != nil || resp.Draining {
		t.Errorf("undrain: %v, %v", resp, err)
	}
	if _, err := md.DrainNode(ctx, "nope", false); !errors.Is(err, state.ErrNotFound) {
		t.Errorf("drain of an unknown node: %v", err)
	}
}
