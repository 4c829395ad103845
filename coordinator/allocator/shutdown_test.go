package allocator

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sluice-search/sluice/cluster/state"
	statev1 "github.com/sluice-search/sluice/proto/sluice/state/v1"
)

// TestPlanShutdown: a primary on a node that is shutting down is handed,
// in one write at term + 1, to an in-sync replica active on a node that
// is not, and stays on its node as a recovering replica; without such a
// replica it stays; a node shutting down is given no new copy.
func TestPlanShutdown(t *testing.T) {
	tests := []struct {
		name     string
		nodes    []string
		stopping []string
		replicas int32
		shard    *statev1.ShardRouting
		want     *statev1.ShardRouting
	}{
		{name: "handed to the in-sync replica; the old primary a recovering replica on its node",
			nodes: []string{"n1", "n2"}, stopping: []string{"n1"}, replicas: 1, shard: live(),
			want: &statev1.ShardRouting{PrimaryTerm: 3, InSync: []string{"r"}, Copies: []*statev1.ShardCopy{
				{NodeId: "n2", AllocationId: "r", Primary: true, State: started},
				{NodeId: "n1", AllocationId: "id1", State: initializing, Reason: shuttingDownReason("n1", "n2")}}}},
		{name: "not to a replica out of the in-sync set",
			nodes: []string{"n1", "n2"}, stopping: []string{"n1"}, replicas: 1,
			shard: &statev1.ShardRouting{PrimaryTerm: 2, InSync: []string{"p"}, Copies: []*statev1.ShardCopy{
				{NodeId: "n1", AllocationId: "p", Primary: true, State: started},
				{NodeId: "n2", AllocationId: "r", State: initializing}}}},
		{name: "not to a replica whose node is shutting down too",
			nodes: []string{"n1", "n2"}, stopping: []string{"n1", "n2"}, replicas: 1, shard: live()},
		{name: "not to a replica whose node is gone",
			nodes: []string{"n1"}, stopping: []string{"n1"}, replicas: 1,
			shard: &statev1.ShardRouting{PrimaryTerm: 2, InSync: []string{"p", "r"}, Copies: []*statev1.ShardCopy{
				{NodeId: "n1", AllocationId: "p", Primary: true, State: started},
				{NodeId: "n2", AllocationId: "r", State: nodeLeft, LeftAt: timestamppb.New(now)}}},
			want: &statev1.ShardRouting{PrimaryTerm: 2, InSync: []string{"p"}, Copies: []*statev1.ShardCopy{
				{NodeId: "n1", AllocationId: "p", Primary: true, State: started},
				{NodeId: "n2", AllocationId: "r", State: nodeLeft, LeftAt: timestamppb.New(now)}}}},
		{name: "no replicas: the primary stays",
			nodes: []string{"n1", "n2"}, stopping: []string{"n1"},
			shard: &statev1.ShardRouting{PrimaryTerm: 2, InSync: []string{"p"}, Copies: []*statev1.ShardCopy{
				{NodeId: "n1", AllocationId: "p", Primary: true, State: started}}}},
		{name: "a replica on a node shutting down stays; its primary is not moved",
			nodes: []string{"n1", "n2"}, stopping: []string{"n2"}, replicas: 1, shard: live()},
		{name: "no new copy on a node shutting down",
			nodes: []string{"n1", "n2"}, stopping: []string{"n2"}, replicas: 1,
			shard: &statev1.ShardRouting{PrimaryTerm: 2, InSync: []string{"p"}, Copies: []*statev1.ShardCopy{
				{NodeId: "n1", AllocationId: "p", Primary: true, State: started}, {State: unassigned}}},
			want: &statev1.ShardRouting{PrimaryTerm: 2, InSync: []string{"p"}, Copies: []*statev1.ShardCopy{
				{NodeId: "n1", AllocationId: "p", Primary: true, State: started},
				{State: unassigned, Reason: "no node can take the copy: node [n1] holds a copy of the shard already; node [n2] is shutting down"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := snapshot(tt.nodes, tt.replicas, nil, tt.shard)
			for _, n := range tt.stopping {
				st.Nodes[n].Info.ShuttingDown = true
			}
			got, _ := plan(t, Input{State: st, Keys: state.NewKeys("")})
			want := tt.want
			if want == nil {
				want = tt.shard
			}
			if diff := cmp.Diff(want, got[0], protocmp.Transform()); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
		})
	}
}
