package state

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sluice-search/sluice/cluster/etcdtest"
	statev1 "github.com/sluice-search/sluice/proto/sluice/state/v1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

const (
	started      = sluicev1.ShardState_SHARD_STATE_STARTED
	initializing = sluicev1.ShardState_SHARD_STATE_INITIALIZING
	nodeLeft     = sluicev1.ShardState_SHARD_STATE_NODE_LEFT
	failed       = sluicev1.ShardState_SHARD_STATE_FAILED
	unassigned   = sluicev1.ShardState_SHARD_STATE_UNASSIGNED
)

// group is a shard with a primary p on n1 and replicas r1 (n2, in sync)
// and r2 (n3, recovering) at term 3.
func group() *statev1.ShardRouting {
	return &statev1.ShardRouting{Shard: 0, PrimaryTerm: 3, InSync: []string{"p", "r1"}, Copies: []*statev1.ShardCopy{
		{NodeId: "n1", AllocationId: "p", Primary: true, State: started},
		{NodeId: "n2", AllocationId: "r1", State: started},
		{NodeId: "n3", AllocationId: "r2", State: initializing, Reason: "recovering"},
	}}
}

// seedGroup stores index "logs" (uuid u1) with group() as shard 0 and
// nodes n1..n3.
func seedGroup(t *testing.T, s *Store) ShardID {
	t.Helper()
	var tx Txn
	for _, n := range []string{"n1", "n2", "n3"} {
		tx.Put(s.Keys.Node(n), &statev1.Node{Address: n})
	}
	tx.Put(s.Keys.Index("logs"), &statev1.Index{Name: "logs", Uuid: "u1",
		Settings: &sluicev1.IndexSettings{NumberOfShards: 1, NumberOfRoutingShards: 1, NumberOfReplicas: 2}})
	tx.Put(s.Keys.Shard("u1", 0), group())
	if err := s.Commit(context.Background(), &tx); err != nil {
		t.Fatal(err)
	}
	return ShardID{"u1", 0}
}

// seedEdited is seedGroup on a new store with group() changed by edit
// (if set), and the entry as stored.
func seedEdited(t *testing.T, edit func(*statev1.ShardRouting)) (*Store, ShardID, *statev1.ShardRouting) {
	t.Helper()
	s := NewStore(etcdtest.New(t), "")
	id := seedGroup(t, s)
	r := group()
	if edit != nil {
		edit(r)
		var tx Txn
		tx.Put(s.Keys.Shard("u1", 0), r)
		if err := s.Commit(context.Background(), &tx); err != nil {
			t.Fatal(err)
		}
	}
	return s, id, r
}

func load(t *testing.T, s *Store) *statev1.ShardRouting {
	t.Helper()
	st, err := s.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st.Indices["logs"].Shards[0].Routing
}

// TestSetShardState: a node's report lands only on a copy it still holds
// under that allocation id, never on a copy held for gone, and a replica
// is STARTED only in sync; a new shard's first started primary joins the
// in-sync set.
func TestSetShardState(t *testing.T) {
	tests := []struct {
		name        string
		edit        func(r *statev1.ShardRouting) // before the report
		node, alloc string
		rep         ShardReport
		err         error
		want        func(r *statev1.ShardRouting) // the expected entry, from group()
	}{
		{name: "a recovering replica's progress", node: "n3", alloc: "r2",
			rep:  ShardReport{State: initializing, Reason: "copying files"},
			want: func(r *statev1.ShardRouting) { r.Copies[2].Reason = "copying files" }},
		{name: "a failed primary", node: "n1", alloc: "p", rep: ShardReport{State: failed, Reason: "disk"},
			want: func(r *statev1.ShardRouting) { r.Copies[0].State, r.Copies[0].Reason = failed, "disk" }},
		{name: "stale allocation dropped", node: "n3", alloc: "old", rep: ShardReport{State: started}, err: ErrStale},
		{name: "another node's copy", node: "n2", alloc: "r2", rep: ShardReport{State: failed}, err: ErrStale},
		{name: "a copy held for gone takes no report",
			edit: func(r *statev1.ShardRouting) {
				r.Copies[1].State, r.Copies[1].Reason = nodeLeft, "node [n2] is not reachable"
			},
			node: "n2", alloc: "r1", rep: ShardReport{State: started}, err: ErrStale},
		{name: "a replica out of sync cannot start", node: "n3", alloc: "r2", rep: ShardReport{State: started}, err: ErrNotInSync},
		{name: "a replica in sync starts",
			edit: func(r *statev1.ShardRouting) { r.InSync = append(r.InSync, "r2") },
			node: "n3", alloc: "r2", rep: ShardReport{State: started},
			want: func(r *statev1.ShardRouting) {
				r.InSync = append(r.InSync, "r2")
				r.Copies[2].State, r.Copies[2].Reason = started, ""
			}},
		{name: "a new shard's primary joins the in-sync set",
			edit: func(r *statev1.ShardRouting) { r.InSync, r.Copies[0].State = nil, initializing },
			node: "n1", alloc: "p", rep: ShardReport{State: started},
			want: func(r *statev1.ShardRouting) { r.InSync = []string{"p"} }},
		{name: "no change, no write", node: "n2", alloc: "r1", rep: ShardReport{State: started},
			want: func(*statev1.ShardRouting) {}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, id, before := seedEdited(t, tt.edit)
			err := s.SetShardState(context.Background(), id, tt.node, tt.alloc, tt.rep)
			if !errors.Is(err, tt.err) {
				t.Fatalf("SetShardState = %v, want %v", err, tt.err)
			}
			want := before
			if tt.want != nil {
				want = group()
				tt.want(want)
			}
			if d := cmp.Diff(want, load(t, s), protocmp.Transform()); d != "" {
				t.Errorf("routing (-want +got):\n%s", d)
			}
		})
	}
}

// TestActivatePrimary: a node opening its primary copy records it
// INITIALIZING and raises the term in one write — unless the shard never
// had a started copy — and is refused for a copy that is not its primary
// or is held for gone.
func TestActivatePrimary(t *testing.T) {
	tests := []struct {
		name        string
		edit        func(r *statev1.ShardRouting) // before the call
		node, alloc string
		term        int64 // returned
		err         error
		want        func(r *statev1.ShardRouting) // the expected entry, from the edited one
	}{
		{name: "a started primary reopened (a restart without failover)", node: "n1", alloc: "p", term: 4,
			want: func(r *statev1.ShardRouting) {
				r.PrimaryTerm, r.Copies[0].State, r.Copies[0].Reason = 4, initializing, "reopening"
			}},
		{name: "marked recovering by its restarted node, then opened", node: "n1", alloc: "p", term: 4,
			edit: func(r *statev1.ShardRouting) { r.Copies[0].State, r.Copies[0].Reason = initializing, "queued" },
			want: func(r *statev1.ShardRouting) { r.PrimaryTerm, r.Copies[0].Reason = 4, "reopening" }},
		{name: "a failed primary's open retried", node: "n1", alloc: "p", term: 4,
			edit: func(r *statev1.ShardRouting) { r.Copies[0].State, r.Copies[0].Reason = failed, "disk" },
			want: func(r *statev1.ShardRouting) {
				r.PrimaryTerm, r.Copies[0].State, r.Copies[0].Reason = 4, initializing, "reopening"
			}},
		{name: "a new shard's first open: its term, no write", node: "n1", alloc: "p", term: 3,
			edit: func(r *statev1.ShardRouting) { r.InSync, r.Copies[0].State = nil, initializing }},
		{name: "a new shard's failed first open retried: its term", node: "n1", alloc: "p", term: 3,
			edit: func(r *statev1.ShardRouting) { r.InSync, r.Copies[0].State, r.Copies[0].Reason = nil, failed, "disk" },
			want: func(r *statev1.ShardRouting) { r.Copies[0].State, r.Copies[0].Reason = initializing, "reopening" }},
		{name: "held for gone", node: "n1", alloc: "p", err: ErrStale,
			edit: func(r *statev1.ShardRouting) { r.Copies[0].State = nodeLeft }},
		{name: "a replica", node: "n2", alloc: "r1", err: ErrStale},
		{name: "another node", node: "n2", alloc: "p", err: ErrStale},
		{name: "an old allocation", node: "n1", alloc: "old", err: ErrStale},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, id, before := seedEdited(t, tt.edit)
			term, err := s.ActivatePrimary(context.Background(), id, tt.node, tt.alloc, "reopening")
			if !errors.Is(err, tt.err) || term != tt.term {
				t.Fatalf("ActivatePrimary = %d, %v; want %d, %v", term, err, tt.term, tt.err)
			}
			want := proto.Clone(before).(*statev1.ShardRouting)
			if tt.want != nil {
				tt.want(want)
			}
			if d := cmp.Diff(want, load(t, s), protocmp.Transform()); d != "" {
				t.Errorf("routing (-want +got):\n%s", d)
			}
		})
	}
}

// TestInSyncChanges: the primary's removal and addition of copies are
// guarded by its term and allocation id.
func TestInSyncChanges(t *testing.T) {
	ctx := context.Background()
	s := NewStore(etcdtest.New(t), "")
	id := seedGroup(t, s)
	// An old primary (term 2) or another copy claiming to be primary changes nothing.
	for _, c := range []struct {
		term  int64
		alloc string
	}{{2, "p"}, {3, "r1"}, {4, "p"}} {
		if err := s.RemoveInSync(ctx, id, c.term, c.alloc, "r1", "timeout"); !errors.Is(err, ErrStaleTerm) {
			t.Errorf("RemoveInSync by %s at term %d = %v, want ErrStaleTerm", c.alloc, c.term, err)
		}
		if err := s.AddInSync(ctx, id, c.term, c.alloc, "r2"); !errors.Is(err, ErrStaleTerm) {
			t.Errorf("AddInSync by %s at term %d = %v, want ErrStaleTerm", c.alloc, c.term, err)
		}
	}
	if d := cmp.Diff(group(), load(t, s), protocmp.Transform()); d != "" {
		t.Fatalf("a stale primary changed the entry (-want +got):\n%s", d)
	}
	// The primary adds the recovered r2, then removes r1, which failed.
	if err := s.AddInSync(ctx, id, 3, "p", "r2"); err != nil {
		t.Fatal(err)
	}
	if err := s.RemoveInSync(ctx, id, 3, "p", "r1", "replicate ops: deadline exceeded"); err != nil {
		t.Fatal(err)
	}
	want := group()
	want.InSync = []string{"p", "r2"}
	want.Copies[1].State, want.Copies[1].Reason = failed, "removed from the in-sync set by the primary: replicate ops: deadline exceeded"
	if d := cmp.Diff(want, load(t, s), protocmp.Transform()); d != "" {
		t.Errorf("routing (-want +got):\n%s", d)
	}
	// Again, and for a copy that is gone: nothing to do, no error.
	for _, alloc := range []string{"r1", "gone"} {
		if err := s.RemoveInSync(ctx, id, 3, "p", alloc, "again"); err != nil {
			t.Errorf("RemoveInSync(%s) = %v", alloc, err)
		}
	}
	// A failed copy cannot join.
	if err := s.AddInSync(ctx, id, 3, "p", "r1"); !errors.Is(err, ErrStale) {
		t.Errorf("AddInSync(failed r1) = %v, want ErrStale", err)
	}
	if d := cmp.Diff(want, load(t, s), protocmp.Transform()); d != "" {
		t.Errorf("routing (-want +got):\n%s", d)
	}
}

func TestPromote(t *testing.T) {
	now := time.Unix(1000, 0)
	lost := group()
	lost.Copies[0].State, lost.Copies[0].Reason = nodeLeft, "node [n1] left"
	got := Promote(lost, "r1", "p2", now)
	want := &statev1.ShardRouting{Shard: 0, PrimaryTerm: 4, InSync: []string{"r1"}, Copies: []*statev1.ShardCopy{
		{NodeId: "n2", AllocationId: "r1", Primary: true, State: started},
		{NodeId: "n1", AllocationId: "p2", State: nodeLeft, LeftAt: timestamppb.New(now),
			Reason: "node [n1] left; it was the primary, and an in-sync replica was promoted"},
		{NodeId: "n3", AllocationId: "r2", State: initializing, Reason: "recovering"},
	}}
	if d := cmp.Diff(want, got, protocmp.Transform()); d != "" {
		t.Errorf("Promote (-want +got):\n%s", d)
	}
	if d := cmp.Diff(group().Copies[1:], lost.Copies[1:], protocmp.Transform()); d != "" || lost.PrimaryTerm != 3 {
		t.Errorf("Promote changed its argument:\n%s", d)
	}
	// A failed primary's slot is placed afresh.
	bad := group()
	bad.Copies[0].State, bad.Copies[0].Reason = failed, "corrupt _0.doc"
	got = Promote(bad, "r1", "p2", now)
	if c := got.Copies[1]; c.NodeId != "" || c.AllocationId != "" || c.State != unassigned || c.Primary {
		t.Errorf("failed primary demoted to %v, want an unassigned replica", c)
	}
	// Only an in-sync replica.
	for _, alloc := range []string{"r2", "p", "nope"} {
		if got := Promote(lost, alloc, "x", now); got != nil {
			t.Errorf("Promote(%s) = %v, want nil", alloc, got)
		}
	}
}

// TestUpgradeRouting: a record of the single-copy form reads as one
// primary at term 1, in sync once it was allocated.
func TestUpgradeRouting(t *testing.T) {
	tests := []struct {
		name string
		old  *statev1.ShardRouting
		want *statev1.ShardRouting
	}{
		{"started", &statev1.ShardRouting{Shard: 2, LegacyNodeId: "n1", LegacyPrimary: true, LegacyAllocationId: "a", LegacyState: started},
			&statev1.ShardRouting{Shard: 2, PrimaryTerm: 1, InSync: []string{"a"},
				Copies: []*statev1.ShardCopy{{NodeId: "n1", AllocationId: "a", Primary: true, State: started}}}},
		{"unassigned", &statev1.ShardRouting{Shard: 0, LegacyPrimary: true, LegacyState: unassigned, LegacyReason: "index created"},
			&statev1.ShardRouting{Shard: 0, PrimaryTerm: 1,
				Copies: []*statev1.ShardCopy{{Primary: true, State: unassigned, Reason: "index created"}}}},
		{"current form untouched", group(), group()},
	}
	// As stored by the version before copies: read through the legacy names.
	var old statev1.ShardRouting
	if err := Unmarshal([]byte(`{"shard":1,"node_id":"n1","primary":true,"state":"SHARD_STATE_NODE_LEFT","allocation_id":"a","reason":"gone"}`), &old); err != nil {
		t.Fatal(err)
	}
	tests = append(tests, struct {
		name string
		old  *statev1.ShardRouting
		want *statev1.ShardRouting
	}{"stored JSON", &old, &statev1.ShardRouting{Shard: 1, PrimaryTerm: 1, InSync: []string{"a"},
		Copies: []*statev1.ShardCopy{{NodeId: "n1", AllocationId: "a", Primary: true, State: nodeLeft, Reason: "gone"}}}})
	for _, tt := range tests {
		upgradeRouting(tt.old)
		if d := cmp.Diff(tt.want, tt.old, protocmp.Transform()); d != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, d)
		}
	}
}

func TestHealth(t *testing.T) {
	green, yellow, red := sluicev1.HealthStatus_HEALTH_STATUS_GREEN, sluicev1.HealthStatus_HEALTH_STATUS_YELLOW, sluicev1.HealthStatus_HEALTH_STATUS_RED
	tests := []struct {
		name  string
		edit  func(r *statev1.ShardRouting)
		nodes []string
		want  sluicev1.HealthStatus
	}{
		{"every copy started", func(r *statev1.ShardRouting) { r.Copies[2].State = started }, nil, green},
		{"a replica recovering", nil, nil, yellow},
		{"a replica's node left", func(r *statev1.ShardRouting) { r.Copies[2].State = nodeLeft }, nil, yellow},
		{"a replica unassigned", func(r *statev1.ShardRouting) { r.Copies[2] = &statev1.ShardCopy{State: unassigned} }, nil, yellow},
		{"primary failed, in-sync replica started", func(r *statev1.ShardRouting) { r.Copies[0].State = failed }, nil, yellow},
		{"primary failed, the started replica not in sync", func(r *statev1.ShardRouting) { r.Copies[0].State = failed; r.InSync = []string{"p"} }, nil, red},
		{"primary failed, the in-sync replica recovering", func(r *statev1.ShardRouting) {
			r.Copies[0].State, r.Copies[1].State = failed, initializing
		}, nil, red},
		{"primary's node not registered, in-sync replica started", func(r *statev1.ShardRouting) { r.Copies[2].State = started }, []string{"n2", "n3"}, yellow},
		{"primary's and in-sync replica's nodes not registered", func(r *statev1.ShardRouting) { r.Copies[2].State = started }, []string{"n3"}, red},
		{"a replica's node not registered", func(r *statev1.ShardRouting) { r.Copies[2].State = started }, []string{"n1", "n2"}, yellow},
		{"no primary, in-sync copies started", func(r *statev1.ShardRouting) { r.Copies[0].Primary = false }, nil, yellow},
		{"no copy started", func(r *statev1.ShardRouting) { r.Copies[0].State, r.Copies[1].State = nodeLeft, failed }, nil, red},
		// A relocation's target does not lower health while its source
		// serves (Elasticsearch stays green during a move).
		{"a replica relocating, its source started", func(r *statev1.ShardRouting) { r.Copies[2].RelocatingFrom = "r1" }, nil, green},
		{"the primary relocating, its source started", func(r *statev1.ShardRouting) { r.Copies[2].RelocatingFrom = "p" }, nil, green},
		{"relocating, the source failed", func(r *statev1.ShardRouting) {
			r.Copies[2].RelocatingFrom, r.Copies[1].State = "r1", failed
		}, nil, yellow},
		{"relocating, the source's node not registered", func(r *statev1.ShardRouting) { r.Copies[2].RelocatingFrom = "r1" }, []string{"n1", "n3"}, yellow},
		{"relocating, the source copy gone", func(r *statev1.ShardRouting) { r.Copies[2].RelocatingFrom = "r0" }, nil, yellow},
		{"relocating, the target's node not registered", func(r *statev1.ShardRouting) {
			r.Copies[2].RelocatingFrom, r.Copies[2].State = "r1", started
		}, []string{"n1", "n2"}, yellow},
		{"relocating while another replica is unassigned", func(r *statev1.ShardRouting) {
			r.Copies[2].RelocatingFrom = "r1"
			r.Copies = append(r.Copies, &statev1.ShardCopy{State: unassigned})
		}, nil, yellow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := group()
			if tt.edit != nil {
				tt.edit(r)
			}
			nodes := tt.nodes
			if nodes == nil {
				nodes = []string{"n1", "n2", "n3"}
			}
			st := &Snapshot{Nodes: map[string]*Node{}}
			for _, n := range nodes {
				st.Nodes[n] = &Node{ID: n, Info: &statev1.Node{}}
			}
			x := &Index{Meta: &statev1.Index{Name: "logs"}, Shards: []*Shard{{Routing: r}}}
			if got := st.IndexHealth(x); got != tt.want {
				t.Errorf("IndexHealth = %v, want %v", got, tt.want)
			}
		})
	}
}
