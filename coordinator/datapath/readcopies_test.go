package datapath

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sluice-search/sluice/cluster/state"
	statev1 "github.com/sluice-search/sluice/proto/sluice/state/v1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// TestReadCopiesAvoidShuttingDown: reads go to the serving copies, not to
// one on a node that is shutting down while another serves.
func TestReadCopiesAvoidShuttingDown(t *testing.T) {
	started := sluicev1.ShardState_SHARD_STATE_STARTED
	r := &statev1.ShardRouting{InSync: []string{"p", "a", "b"}, Copies: []*statev1.ShardCopy{
		{NodeId: "n1", AllocationId: "p", Primary: true, State: started},
		{NodeId: "n2", AllocationId: "a", State: started},
		{NodeId: "n3", AllocationId: "b", State: started},
		{NodeId: "n4", AllocationId: "c", State: started}, // not in sync
	}}
	x := &state.Index{Meta: &statev1.Index{Name: "x", Uuid: "ux"}, Shards: []*state.Shard{{Routing: r}}}
	tests := []struct {
		stopping []string
		want     []string
	}{
		{nil, []string{"n1", "n2", "n3"}},
		{[]string{"n1"}, []string{"n2", "n3"}},
		{[]string{"n2", "n3"}, []string{"n1"}},
		{[]string{"n1", "n2", "n3"}, []string{"n1", "n2", "n3"}}, // all stopping: still served
	}
	for _, tt := range tests {
		st := &state.Snapshot{Nodes: map[string]*state.Node{}}
		for _, id := range []string{"n1", "n2", "n3", "n4"} {
			st.Nodes[id] = &state.Node{ID: id, Info: &statev1.Node{}}
		}
		for _, id := range tt.stopping {
			st.Nodes[id].Info.ShuttingDown = true
		}
		if diff := cmp.Diff(tt.want, readCopies(st, x, 0)); diff != "" {
			t.Errorf("stopping %v: readCopies (-want +got):\n%s", tt.stopping, diff)
		}
	}
}
