package allocator

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/sluice-search/sluice/cluster/etcdtest"
	"github.com/sluice-search/sluice/cluster/metadata"
	"github.com/sluice-search/sluice/cluster/state"
	statev1 "github.com/sluice-search/sluice/proto/sluice/state/v1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// moves lists the moves a routing holds, as "p:n1->n3" (p for a primary
// source, r for a replica), by shard.
func moves(rs []*statev1.ShardRouting) []string {
	var out []string
	for i, r := range rs {
		for _, c := range r.GetCopies() {
			if c.RelocatingFrom == "" {
				continue
			}
			src := state.CopyByAllocation(r, c.RelocatingFrom)
			kind := "r"
			if src.Primary {
				kind = "p"
			}
			out = append(out, fmt.Sprintf("%d%s:%s->%s", i, kind, src.NodeId, c.NodeId))
		}
	}
	return out
}

// Which copies rebalancing moves when a node joins: primaries too (an
// index without replicas balances), as rebalance_enable allows, never a
// primary a task pins, a bounded number at a time.
func TestPlanRebalanceCopies(t *testing.T) {
	// Six primaries on n1 and n2, no replicas; n3 joined empty.
	primaries := func() []*statev1.ShardRouting {
		var rs []*statev1.ShardRouting
		for i := range 6 {
			rs = append(rs, &statev1.ShardRouting{Shard: int32(i), PrimaryTerm: 1, InSync: []string{"p"}, Copies: []*statev1.ShardCopy{
				{NodeId: []string{"n1", "n2"}[i%2], AllocationId: "p", Primary: true, State: started}}})
		}
		return rs
	}
	// Six shards with a replica, primaries on n1 and replicas on n2; n3
	// joined empty: both nodes are as heavy, n1 (first by id) gives.
	pairs := func() []*statev1.ShardRouting {
		var rs []*statev1.ShardRouting
		for i := range 6 {
			rs = append(rs, &statev1.ShardRouting{Shard: int32(i), PrimaryTerm: 1, InSync: []string{"p", "r"}, Copies: []*statev1.ShardCopy{
				{NodeId: "n1", AllocationId: "p", Primary: true, State: started}, {NodeId: "n2", AllocationId: "r", State: started}}})
		}
		return rs
	}
	pin := func(shards ...int32) map[string]*statev1.ShardPins {
		return map[string]*statev1.ShardPins{"t1": {Holder: "reindex task [t1]", Indices: []*statev1.PinnedShards{{IndexUuid: "ux", Shards: shards}}}}
	}
	tests := []struct {
		name     string
		enable   string
		bound    int32
		replicas int32
		shards   []*statev1.ShardRouting
		pins     map[string]*statev1.ShardPins
		drained  []string
		full     string // a node past the high watermark
		want     []string
	}{
		{name: "no replicas: a primary moves to the new node", shards: primaries(), want: []string{"0p:n1->n3"}},
		{name: "primaries allowed", enable: "primaries", shards: primaries(), want: []string{"0p:n1->n3"}},
		{name: "replicas only: an index without replicas stays put", enable: "replicas", shards: primaries()},
		{name: "none: nothing moves", enable: "none", shards: primaries()},
		{name: "none: nothing moves, with replicas", enable: "none", replicas: 1, shards: pairs()},
		{name: "with replicas, all: the heaviest node's copy moves, a primary", replicas: 1, shards: pairs(), want: []string{"0p:n1->n3"}},
		{name: "replicas only: a replica moves", enable: "replicas", replicas: 1, shards: pairs(), want: []string{"0r:n2->n3"}},
		{name: "primaries only: a primary moves", enable: "primaries", replicas: 1, shards: pairs(), want: []string{"0p:n1->n3"}},
		{name: "a pinned primary stays; an unpinned one of the index moves", shards: primaries(), pins: pin(0, 1, 2), want: []string{"4p:n1->n3"}},
		{name: "the heaviest node holds only pinned primaries: the next one gives", shards: primaries(), pins: pin(0, 2, 4), want: []string{"1p:n2->n3"}},
		{name: "every shard pinned: no primary moves", shards: primaries(), pins: pin()},
		{name: "pinned primaries stay, their replicas may move", replicas: 1, shards: pairs(), pins: pin(), want: []string{"0r:n2->n3"}},
		{name: "a drain moves a pinned primary all the same", shards: primaries()[:1], pins: pin(), drained: []string{"n1"}, want: []string{"0p:n1->n2"}},
		{name: "a full disk moves a pinned primary all the same", shards: primaries()[:1], pins: pin(), full: "n1", want: []string{"0p:n1->n2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := snapshot([]string{"n1", "n2", "n3"}, tt.replicas, nil, tt.shards...)
			recovering(st, "n1", "n2", "n3")
			st.Settings = &sluicev1.ClusterSettings{RebalanceEnable: tt.enable, MaxConcurrentRebalance: tt.bound, DrainedNodes: tt.drained}
			st.Pins = tt.pins
			if tt.full != "" {
				withDisk(st, tt.full, 8, 100)
			}
			got, _ := plan(t, Input{State: st, Keys: state.NewKeys("")})
			if m := moves(got); strings.Join(m, " ") != strings.Join(tt.want, " ") {
				t.Errorf("moves = %v, want %v", m, tt.want)
			}
			for _, r := range got {
				if r.PrimaryTerm != 1 {
					t.Errorf("term %d: a move started is no hand-off yet", r.PrimaryTerm)
				}
			}
		})
	}
}

// Rebalancing moves are bounded by max_concurrent_rebalance across
// indices, one per index and round; drains are not counted against it.
func TestPlanRebalanceBound(t *testing.T) {
	// Four single-shard indices without replicas, all on n1; n2 empty.
	st := snapshot([]string{"n1", "n2"}, 0, nil)
	delete(st.Indices, "x")
	delete(st.ByUUID, "ux")
	for i := range 4 {
		name := fmt.Sprint("i", i)
		x := &state.Index{Meta: &statev1.Index{Name: name, Uuid: "u" + name, Settings: &sluicev1.IndexSettings{NumberOfShards: 1}},
			Shards: []*state.Shard{{ModRevision: 7, Routing: &statev1.ShardRouting{PrimaryTerm: 1, InSync: []string{"p"}, Copies: []*statev1.ShardCopy{
				{NodeId: "n1", AllocationId: "p", Primary: true, State: started}}}}}}
		st.Indices[name], st.ByUUID["u"+name] = x, x
	}
	recovering(st, "n1", "n2")
	for _, tt := range []struct {
		bound int32
		want  int
	}{{0, DefaultConcurrentRebalance}, {1, 1}, {3, NodeConcurrentMoves}} {
		st.Settings = &sluicev1.ClusterSettings{MaxConcurrentRebalance: tt.bound}
		ups, _ := Plan(Input{State: st, Keys: state.NewKeys(""), Now: now, NewID: ids()})
		n := 0
		for _, u := range ups {
			n += len(targets(u.Routing))
		}
		// Two moves out of n1 at most (NodeConcurrentMoves), whatever
		// the cluster's bound.
		if n != tt.want {
			t.Errorf("max_concurrent_rebalance %d: %d moves, want %d", tt.bound, n, tt.want)
		}
	}
}

// A rebalancing move of a primary that a task pinned since it started is
// cancelled, even once its target recovered (else the task's co-located
// shards part); a forced move of a pinned primary goes on, and an
// unpinned one completes with the hand-off.
func TestPlanPinCancelsRebalancing(t *testing.T) {
	moving := func(targetState sluicev1.ShardState, inSync ...string) *statev1.ShardRouting {
		return &statev1.ShardRouting{PrimaryTerm: 1, InSync: append([]string{"p"}, inSync...), Copies: []*statev1.ShardCopy{
			{NodeId: "n1", AllocationId: "p", Primary: true, State: started, Move: "rebalancing index [x]: ...; moving to node [n2]"},
			{NodeId: "n2", AllocationId: "t", State: targetState, RelocatingFrom: "p"}}}
	}
	pinned := map[string]*statev1.ShardPins{"t1": {Holder: "reindex task [t1]", Indices: []*statev1.PinnedShards{{IndexUuid: "ux"}}}}
	tests := []struct {
		name     string
		shard    *statev1.ShardRouting
		pins     map[string]*statev1.ShardPins
		drained  []string
		wantNode []string // the nodes of the copies after
		wantTerm int64
	}{
		{name: "recovering target of a pinned primary: cancelled", shard: moving(initializing), pins: pinned, wantNode: []string{"n1"}, wantTerm: 1},
		{name: "recovered target of a pinned primary: cancelled, no hand-off", shard: moving(started, "t"), pins: pinned, wantNode: []string{"n1"}, wantTerm: 1},
		{name: "not pinned: the hand-off completes", shard: moving(started, "t"), wantNode: []string{"n2"}, wantTerm: 2},
		{name: "a drain's move of a pinned primary goes on", shard: moving(initializing), pins: pinned, drained: []string{"n1"}, wantNode: []string{"n1", "n2"}, wantTerm: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := snapshot([]string{"n1", "n2"}, 0, nil, tt.shard)
			recovering(st, "n1", "n2")
			st.Settings = &sluicev1.ClusterSettings{DrainedNodes: tt.drained}
			st.Pins = tt.pins
			got, _ := plan(t, Input{State: st, Keys: state.NewKeys("")})
			var nodes []string
			for _, c := range got[0].Copies {
				nodes = append(nodes, c.NodeId)
			}
			if strings.Join(nodes, " ") != strings.Join(tt.wantNode, " ") || got[0].PrimaryTerm != tt.wantTerm {
				t.Errorf("copies on %v at term %d, want %v at term %d: %v", nodes, got[0].PrimaryTerm, tt.wantNode, tt.wantTerm, got[0])
			}
			if src := state.CopyByAllocation(got[0], "p"); src != nil && len(src.MoveRetries) > 0 {
				t.Errorf("a cancelled move counted as failed: %v", src.MoveRetries)
			}
		})
	}
}

// The allocator against etcd: its routing writes are guarded by the pins,
// so a pin written after the state it planned from makes the write
// conflict rather than move the pinned primary.
func TestRebalanceGuardedByPins(t *testing.T) {
	s := state.NewStore(etcdtest.Client(t, etcdtest.Start(t)), "")
	md, ctx := metadata.New(s), t.Context()
	reg := func(n string) {
		var tx state.Txn
		tx.Put(s.Keys.Node(n), &statev1.Node{Address: "127.0.0.1:1", DiskFreeBytes: 100, DiskTotalBytes: 200, Capabilities: []string{state.CapabilityPeerRecovery}})
		if err := s.Commit(ctx, &tx); err != nil {
			t.Fatal(err)
		}
	}
	reg("n1")
	if _, err := md.CreateIndex(ctx, &sluicev1.CreateIndexRequest{Name: "d", Settings: &sluicev1.IndexSettings{NumberOfShards: 2}}, metadata.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Place and start the primaries on n1 (the allocator's round, the
	// node's reports). The guard stands for the election key: always true.
	a := New(Config{Store: s, ID: "c1"})
	st, err := s.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	guard := clientv3.Compare(clientv3.CreateRevision(s.Keys.Election()+"/none"), "=", 0)
	if _, err := a.allocate(ctx, st, nil, guard); err != nil {
		t.Fatal(err)
	}
	info := waitIndex(t, s, "d", allAssigned)
	for _, sh := range info.Shards {
		if err := s.SetShardState(ctx, state.ShardID{Index: info.Uuid, Shard: int(sh.Shard)}, sh.NodeId, sh.AllocationId, state.ShardReport{State: started}); err != nil {
			t.Fatal(err)
		}
	}
	reg("n2")
	st, err = s.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// A task pins the index after st was read.
	var tx state.Txn
	tx.Put(s.Keys.Pin("t1"), &statev1.ShardPins{Holder: "reindex task [t1]", Indices: []*statev1.PinnedShards{{IndexUuid: info.Uuid}}})
	if err := s.Commit(ctx, &tx); err != nil {
		t.Fatal(err)
	}
	if _, err := a.allocate(ctx, st, nil, guard); !errors.Is(err, state.ErrConflict) {
		t.Fatalf("a rebalancing move planned before the pin was written: %v, want a conflict", err)
	}
	// From the fresh state: nothing moves while pinned, a primary moves
	// once the pin is gone.
	st, err = s.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.allocate(ctx, st, nil, guard); err != nil {
		t.Fatal(err)
	}
	if st, _ = s.Load(ctx); len(targets(st.ByUUID[info.Uuid].Shards[0].Routing))+len(targets(st.ByUUID[info.Uuid].Shards[1].Routing)) != 0 {
		t.Fatalf("a pinned primary was moved")
	}
	var del state.Txn
	del.Delete(s.Keys.Pin("t1"))
	if err := s.Commit(ctx, &del); err != nil {
		t.Fatal(err)
	}
	if st, err = s.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := a.allocate(ctx, st, nil, guard); err != nil {
		t.Fatal(err)
	}
	st, _ = s.Load(ctx)
	n := 0
	for _, sh := range st.ByUUID[info.Uuid].Shards {
		n += len(targets(sh.Routing))
	}
	if n != 1 {
		t.Errorf("%d moves once unpinned, want 1", n)
	}
}
