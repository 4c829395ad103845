package allocator

import (
	"fmt"
	"testing"

	"github.com/sluice-search/sluice/cluster/state"
	statev1 "github.com/sluice-search/sluice/proto/sluice/state/v1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// TestRebalanceBound: max_concurrent_rebalance bounds the rebalancing
// moves of a round: 0 is the default (2), -1 no bound (Elasticsearch's
// cluster_concurrent_rebalance), the per-node bound still holding.
func TestRebalanceBound(t *testing.T) {
	// Eight indices of one shard, primary and replica on n1 and n2
	// alternately; n3 and n4 empty: every index wants a replica moved.
	st := snapshot([]string{"n1", "n2", "n3", "n4"}, 1, nil)
	delete(st.Indices, "x")
	delete(st.ByUUID, "ux")
	for i := range 8 {
		p, r := []string{"n1", "n2"}[i%2], []string{"n2", "n1"}[i%2]
		name := fmt.Sprintf("x%d", i)
		x := &state.Index{Meta: &statev1.Index{Name: name, Uuid: "u" + name, Settings: &sluicev1.IndexSettings{NumberOfShards: 1, NumberOfReplicas: 1}},
			Shards: []*state.Shard{{Routing: &statev1.ShardRouting{Shard: 0, PrimaryTerm: 1, InSync: []string{"p", "r"}, Copies: []*statev1.ShardCopy{
				{NodeId: p, AllocationId: "p", Primary: true, State: started}, {NodeId: r, AllocationId: "r", State: started}}}, ModRevision: 7}}}
		st.Indices[name], st.ByUUID["u"+name] = x, x
	}
	recovering(st, "n1", "n2", "n3", "n4")
	for _, tt := range []struct {
		bound int32
		want  int
	}{
		{0, DefaultConcurrentRebalance},
		{1, 1},
		{-1, 2 * NodeConcurrentMoves}, // two out of each of n1 and n2
	} {
		st.Settings = &sluicev1.ClusterSettings{MaxConcurrentRebalance: tt.bound}
		ups, _ := Plan(Input{State: st, Keys: state.NewKeys(""), Now: now, NewID: ids()})
		moves := 0
		for _, u := range ups {
			for _, c := range u.Routing.Copies {
				if c.RelocatingFrom != "" {
					moves++
				}
			}
		}
		if moves != tt.want {
			t.Errorf("max_concurrent_rebalance %d: %d moves, want %d", tt.bound, moves, tt.want)
		}
	}
}
