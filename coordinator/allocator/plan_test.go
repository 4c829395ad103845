package allocator

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sluice-search/sluice/cluster/state"
	nodev1 "github.com/sluice-search/sluice/proto/sluice/node/v1"
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

var now = time.Unix(1_000_000, 0)

// snapshot builds a state in memory: nodes as "id" or "id@zone", and one
// index "x" (uuid ux) with the given replicas and shard entries.
func snapshot(nodes []string, replicas int32, delay *durationpb.Duration, shards ...*statev1.ShardRouting) *state.Snapshot {
	st := &state.Snapshot{Nodes: map[string]*state.Node{}, Indices: map[string]*state.Index{}, ByUUID: map[string]*state.Index{}}
	for _, n := range nodes {
		id, zone := n, ""
		for i := range n {
			if n[i] == '@' {
				id, zone = n[:i], n[i+1:]
			}
		}
		st.Nodes[id] = &state.Node{ID: id, Info: &statev1.Node{Address: id, Zone: zone, DiskFreeBytes: 100, DiskTotalBytes: 200}}
	}
	x := &state.Index{Meta: &statev1.Index{Name: "x", Uuid: "ux", Settings: &sluicev1.IndexSettings{
		NumberOfShards: int32(len(shards)), NumberOfReplicas: replicas, NodeLeftDelayedTimeout: delay}}}
	for _, r := range shards {
		x.Shards = append(x.Shards, &state.Shard{Routing: r, ModRevision: 7})
	}
	st.Indices["x"], st.ByUUID["ux"] = x, x
	return st
}

// ids makes allocation ids id1, id2, ...
func ids() func() string {
	n := 0
	return func() string { n++; return fmt.Sprint("id", n) }
}

// plan runs Plan and returns the planned entry of every shard (unchanged
// ones as they were).
func plan(t *testing.T, in Input) ([]*statev1.ShardRouting, time.Time) {
	t.Helper()
	in.Now = now
	if in.NewID == nil {
		in.NewID = ids()
	}
	ups, next := Plan(in)
	x := in.State.ByUUID["ux"]
	out := make([]*statev1.ShardRouting, len(x.Shards))
	for i, sh := range x.Shards {
		out[i] = sh.Routing
	}
	for _, u := range ups {
		if u.ModRevision != 7 || u.Key != in.Keys.Shard("ux", u.ID.Shard) {
			t.Errorf("change %v: guarded by revision %d, key %s", u.ID, u.ModRevision, u.Key)
		}
		out[u.ID.Shard] = u.Routing
	}
	return out, next
}

// live is a started primary p on n1 with an in-sync started replica r on
// n2, at term 2.
func live() *statev1.ShardRouting {
	return &statev1.ShardRouting{PrimaryTerm: 2, InSync: []string{"p", "r"}, Copies: []*statev1.ShardCopy{
		{NodeId: "n1", AllocationId: "p", Primary: true, State: started},
		{NodeId: "n2", AllocationId: "r", State: started},
	}}
}

func TestPlan(t *testing.T) {
	left := timestamppb.New(now.Add(-30 * time.Second))
	tests := []struct {
		name        string
		nodes       []string
		replicas    int32
		delay       *durationpb.Duration
		unreachable map[string]string
		copyStates  map[string]*nodev1.GetCopyStateResponse
		shard       *statev1.ShardRouting
		want        *statev1.ShardRouting
		next        time.Time
	}{
		{name: "a new shard: the primary is placed, the replica waits for it",
			nodes: []string{"n1", "n2"}, replicas: 1, shard: state.NewShardRouting(0, 1, "index created"),
			want: &statev1.ShardRouting{PrimaryTerm: 1, Copies: []*statev1.ShardCopy{
				{NodeId: "n1", AllocationId: "id1", Primary: true, State: initializing},
				{State: unassigned, Reason: "waiting for the primary to start (a replica recovers from it)"}}}},
		{name: "a started primary: replicas on other nodes, in other zones first",
			nodes: []string{"n1@a", "n2@a", "n3@b"}, replicas: 2,
			shard: &statev1.ShardRouting{PrimaryTerm: 1, InSync: []string{"p"}, Copies: []*statev1.ShardCopy{
				{NodeId: "n1", AllocationId: "p", Primary: true, State: started}, {State: unassigned}, {State: unassigned}}},
			want: &statev1.ShardRouting{PrimaryTerm: 1, InSync: []string{"p"}, Copies: []*statev1.ShardCopy{
				{NodeId: "n1", AllocationId: "p", Primary: true, State: started},
				{NodeId: "n3", AllocationId: "id1", State: initializing},
				{NodeId: "n2", AllocationId: "id2", State: initializing}}}},
		{name: "never two copies on one node",
			nodes: []string{"n1", "n2"}, replicas: 2,
			shard: &statev1.ShardRouting{PrimaryTerm: 1, InSync: []string{"p", "r"}, Copies: []*statev1.ShardCopy{
				{NodeId: "n1", AllocationId: "p", Primary: true, State: started}, {NodeId: "n2", AllocationId: "r", State: started}}},
			want: &statev1.ShardRouting{PrimaryTerm: 1, InSync: []string{"p", "r"}, Copies: []*statev1.ShardCopy{
				{NodeId: "n1", AllocationId: "p", Primary: true, State: started}, {NodeId: "n2", AllocationId: "r", State: started},
				{State: unassigned, Reason: "no node can take the copy: node [n1] holds a copy of the shard already; node [n2] holds a copy of the shard already"}}}},
		{name: "primary's node left: the in-sync replica is promoted, term + 1",
			nodes: []string{"n2", "n3"}, replicas: 1, shard: live(),
			want: &statev1.ShardRouting{PrimaryTerm: 3, InSync: []string{"r"}, Copies: []*statev1.ShardCopy{
				{NodeId: "n2", AllocationId: "r", Primary: true, State: started},
				{NodeId: "n1", AllocationId: "id1", State: nodeLeft, LeftAt: timestamppb.New(now),
					Reason: "node [n1] left the cluster (its lease expired); it was the primary, and an in-sync replica was promoted"}}},
			next: now.Add(DefaultNodeLeftDelay)},
		{name: "a failed follower check counts as gone",
			nodes: []string{"n1", "n2"}, replicas: 1, unreachable: map[string]string{"n1": "connection refused"}, shard: live(),
			want: &statev1.ShardRouting{PrimaryTerm: 3, InSync: []string{"r"}, Copies: []*statev1.ShardCopy{
				{NodeId: "n2", AllocationId: "r", Primary: true, State: started},
				{NodeId: "n1", AllocationId: "id1", State: nodeLeft, LeftAt: timestamppb.New(now),
					Reason: "node [n1] is not reachable: connection refused; it was the primary, and an in-sync replica was promoted"}}},
			next: now.Add(DefaultNodeLeftDelay)},
		{name: "only an in-sync copy is promoted",
			nodes: []string{"n2", "n3"}, replicas: 2,
			shard: &statev1.ShardRouting{PrimaryTerm: 2, InSync: []string{"p"}, Copies: []*statev1.ShardCopy{
				{NodeId: "n1", AllocationId: "p", Primary: true, State: started},
				{NodeId: "n2", AllocationId: "r1", State: initializing}, {NodeId: "n3", AllocationId: "r2", State: failed}}},
			want: &statev1.ShardRouting{PrimaryTerm: 2, InSync: []string{"p"}, Copies: []*statev1.ShardCopy{
				{NodeId: "n1", AllocationId: "p", Primary: true, State: nodeLeft, LeftAt: timestamppb.New(now),
					Reason: "node [n1] left the cluster (its lease expired); no in-sync replica on a live node to promote: waiting for the node (the shard's data is on its disk)"},
				{NodeId: "n2", AllocationId: "r1", State: initializing}, {NodeId: "n3", AllocationId: "r2", State: failed}}}},
		{name: "the candidate furthest ahead is promoted",
			nodes: []string{"n2", "n3"}, replicas: 2,
			copyStates: map[string]*nodev1.GetCopyStateResponse{"r1": {LocalCheckpoint: 90}, "r2": {LocalCheckpoint: 120}},
			shard: &statev1.ShardRouting{PrimaryTerm: 2, InSync: []string{"p", "r1", "r2"}, Copies: []*statev1.ShardCopy{
				{NodeId: "n1", AllocationId: "p", Primary: true, State: started},
				{NodeId: "n2", AllocationId: "r1", State: started}, {NodeId: "n3", AllocationId: "r2", State: started}}},
			want: &statev1.ShardRouting{PrimaryTerm: 3, InSync: []string{"r1", "r2"}, Copies: []*statev1.ShardCopy{
				{NodeId: "n3", AllocationId: "r2", Primary: true, State: started},
				{NodeId: "n1", AllocationId: "id1", State: nodeLeft, LeftAt: timestamppb.New(now),
					Reason: "node [n1] left the cluster (its lease expired); it was the primary, and an in-sync replica was promoted"},
				{NodeId: "n2", AllocationId: "r1", State: started}}},
			next: now.Add(DefaultNodeLeftDelay)},
		{name: "no answers: the first started in-sync copy",
			nodes: []string{"n2", "n3"}, replicas: 2,
			shard: &statev1.ShardRouting{PrimaryTerm: 2, InSync: []string{"p", "r1", "r2"}, Copies: []*statev1.ShardCopy{
				{NodeId: "n1", AllocationId: "p", Primary: true, State: started},
				{NodeId: "n2", AllocationId: "r1", State: initializing}, {NodeId: "n3", AllocationId: "r2", State: started}}},
			want: &statev1.ShardRouting{PrimaryTerm: 3, InSync: []string{"r1", "r2"}, Copies: []*statev1.ShardCopy{
				{NodeId: "n3", AllocationId: "r2", Primary: true, State: started},
				{NodeId: "n1", AllocationId: "id1", State: nodeLeft, LeftAt: timestamppb.New(now),
					Reason: "node [n1] left the cluster (its lease expired); it was the primary, and an in-sync replica was promoted"},
				{NodeId: "n2", AllocationId: "r1", State: initializing}}},
			next: now.Add(DefaultNodeLeftDelay)},
		{name: "a failed primary is replaced, its slot placed afresh",
			nodes: []string{"n1", "n2", "n3"}, replicas: 1,
			shard: func() *statev1.ShardRouting {
				r := live()
				r.Copies[0].State, r.Copies[0].Reason = failed, "corrupt _0.doc"
				return r
			}(),
			want: &statev1.ShardRouting{PrimaryTerm: 3, InSync: []string{"r"}, Copies: []*statev1.ShardCopy{
				{NodeId: "n2", AllocationId: "r", Primary: true, State: started},
				{NodeId: "n3", AllocationId: "id2", State: initializing}}}},
		{name: "a replica's node left: out of the in-sync set, waits for the delay",
			nodes: []string{"n1", "n3"}, replicas: 1, shard: live(),
			want: &statev1.ShardRouting{PrimaryTerm: 2, InSync: []string{"p"}, Copies: []*statev1.ShardCopy{
				{NodeId: "n1", AllocationId: "p", Primary: true, State: started},
				{NodeId: "n2", AllocationId: "r", State: nodeLeft, LeftAt: timestamppb.New(now), Reason: "node [n2] left the cluster (its lease expired)"}}},
			next: now.Add(DefaultNodeLeftDelay)},
		{name: "the delay runs out: the replica is placed on another node",
			nodes: []string{"n1", "n3"}, replicas: 1, delay: durationpb.New(20 * time.Second),
			shard: &statev1.ShardRouting{PrimaryTerm: 2, InSync: []string{"p"}, Copies: []*statev1.ShardCopy{
				{NodeId: "n1", AllocationId: "p", Primary: true, State: started},
				{NodeId: "n2", AllocationId: "r", State: nodeLeft, LeftAt: left, Reason: "node [n2] left"}}},
			want: &statev1.ShardRouting{PrimaryTerm: 2, InSync: []string{"p"}, Copies: []*statev1.ShardCopy{
				{NodeId: "n1", AllocationId: "p", Primary: true, State: started},
				{NodeId: "n3", AllocationId: "id1", State: initializing}}}},
		{name: "a node back within the delay gets its copy back",
			nodes: []string{"n1", "n2"}, replicas: 1,
			shard: &statev1.ShardRouting{PrimaryTerm: 2, InSync: []string{"p"}, Copies: []*statev1.ShardCopy{
				{NodeId: "n1", AllocationId: "p", Primary: true, State: started},
				{NodeId: "n2", AllocationId: "r", State: nodeLeft, LeftAt: left, Reason: "node [n2] left"}}},
			want: &statev1.ShardRouting{PrimaryTerm: 2, InSync: []string{"p"}, Copies: []*statev1.ShardCopy{
				{NodeId: "n1", AllocationId: "p", Primary: true, State: started},
				{NodeId: "n2", AllocationId: "r", State: initializing, Reason: "node [n2] is back; reopening the copy"}}}},
		{name: "without replicas a lost primary waits for its node",
			nodes: []string{"n2"}, replicas: 0,
			shard: &statev1.ShardRouting{PrimaryTerm: 1, InSync: []string{"p"}, Copies: []*statev1.ShardCopy{
				{NodeId: "n1", AllocationId: "p", Primary: true, State: started}}},
			want: &statev1.ShardRouting{PrimaryTerm: 1, InSync: []string{"p"}, Copies: []*statev1.ShardCopy{
				{NodeId: "n1", AllocationId: "p", Primary: true, State: nodeLeft, LeftAt: timestamppb.New(now),
					Reason: "node [n1] left the cluster (its lease expired); no in-sync replica on a live node to promote: waiting for the node (the shard's data is on its disk)"}}}},
		{name: "a new primary lost before it started is placed again, at a new term",
			nodes: []string{"n2"}, replicas: 0,
			shard: &statev1.ShardRouting{PrimaryTerm: 1, Copies: []*statev1.ShardCopy{
				{NodeId: "n1", AllocationId: "p", Primary: true, State: initializing}}},
			want: &statev1.ShardRouting{PrimaryTerm: 2, Copies: []*statev1.ShardCopy{
				{NodeId: "n2", AllocationId: "id1", Primary: true, State: initializing}}}},
		{name: "replicas raised on a live index",
			nodes: []string{"n1", "n2", "n3"}, replicas: 2, shard: live(),
			want: &statev1.ShardRouting{PrimaryTerm: 2, InSync: []string{"p", "r"}, Copies: []*statev1.ShardCopy{
				{NodeId: "n1", AllocationId: "p", Primary: true, State: started}, {NodeId: "n2", AllocationId: "r", State: started},
				{NodeId: "n3", AllocationId: "id1", State: initializing}}}},
		{name: "replicas lowered: the least useful copy goes, and its id from the in-sync set",
			nodes: []string{"n1", "n2", "n3"}, replicas: 1,
			shard: &statev1.ShardRouting{PrimaryTerm: 2, InSync: []string{"p", "r", "r2"}, Copies: []*statev1.ShardCopy{
				{NodeId: "n1", AllocationId: "p", Primary: true, State: started}, {NodeId: "n2", AllocationId: "r", State: started},
				{NodeId: "n3", AllocationId: "r2", State: started}, {State: unassigned}}},
			want: &statev1.ShardRouting{PrimaryTerm: 2, InSync: []string{"p", "r"}, Copies: []*statev1.ShardCopy{
				{NodeId: "n1", AllocationId: "p", Primary: true, State: started}, {NodeId: "n2", AllocationId: "r", State: started}}}},
		{name: "nothing to do",
			nodes: []string{"n1", "n2"}, replicas: 1, shard: live(), want: live()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := snapshot(tt.nodes, tt.replicas, tt.delay, tt.shard)
			in := Input{State: st, Keys: state.NewKeys(""), Unreachable: tt.unreachable}
			if tt.copyStates != nil {
				in.CopyState = func(_ state.ShardID, c *statev1.ShardCopy) (*nodev1.GetCopyStateResponse, bool) {
					r, ok := tt.copyStates[c.GetAllocationId()]
					return r, ok
				}
			}
			got, next := plan(t, in)
			if d := cmp.Diff(tt.want, got[0], protocmp.Transform()); d != "" {
				t.Errorf("routing (-want +got):\n%s", d)
			}
			if !next.Equal(tt.next) {
				t.Errorf("next = %v, want %v", next, tt.next)
			}
			// Planning the result again changes nothing: no write loops.
			st2 := snapshot(tt.nodes, tt.replicas, tt.delay, got[0])
			if ups, _ := Plan(Input{State: st2, Keys: state.NewKeys(""), Now: now, Unreachable: tt.unreachable, NewID: ids()}); len(ups) > 0 && tt.name != "a new shard: the primary is placed, the replica waits for it" {
				t.Errorf("a second round changes %v", ups[0].Routing)
			}
		})
	}
}

// TestPlanSpreadsShards: the copies of an index's shards spread over the
// nodes, none with two copies of a shard.
func TestPlanSpreadsShards(t *testing.T) {
	var shards []*statev1.ShardRouting
	for i := range 6 {
		shards = append(shards, &statev1.ShardRouting{Shard: int32(i), PrimaryTerm: 1, InSync: []string{"p"}, Copies: []*statev1.ShardCopy{
			{NodeId: fmt.Sprint("n", i%3+1), AllocationId: "p", Primary: true, State: started}}})
	}
	got, _ := plan(t, Input{State: snapshot([]string{"n1@a", "n2@b", "n3@c"}, 2, nil, shards...), Keys: state.NewKeys("")})
	perNode := map[string]int{}
	for i, r := range got {
		seen := map[string]bool{}
		for _, c := range r.Copies {
			if c.NodeId == "" || seen[c.NodeId] {
				t.Errorf("shard %d: copies %v", i, r.Copies)
			}
			seen[c.NodeId] = true
			perNode[c.NodeId]++
		}
	}
	if perNode["n1"] != 6 || perNode["n2"] != 6 || perNode["n3"] != 6 {
		t.Errorf("copies per node %v, want 6 each", perNode)
	}
}
