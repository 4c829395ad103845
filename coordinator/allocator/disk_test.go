package allocator

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sluice-search/sluice/cluster/state"
	statev1 "github.com/sluice-search/sluice/proto/sluice/state/v1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// withDisk sets a node's registered disk figures (a fake statfs) and data
// path.
func withDisk(st *state.Snapshot, node string, free, total int64) {
	st.Nodes[node].Info.DiskFreeBytes, st.Nodes[node].Info.DiskTotalBytes, st.Nodes[node].Info.DataPath = free, total, "/data/"+node
}

func TestPlanDiskWatermarks(t *testing.T) {
	tests := []struct {
		name     string
		used     map[string]int64 // percent used by node; others 50%
		settings *sluicev1.ClusterSettings
		shard    *statev1.ShardRouting
		want     []string // the nodes of the copies planned, "" unassigned
		reason   string   // of the last copy
	}{
		{name: "a new primary goes to a node past low", used: map[string]int64{"n1": 87, "n2": 87, "n3": 87},
			shard: state.NewShardRouting(0, 0, "index created"), want: []string{"n1"}},
		{name: "a new primary skips a node past high", used: map[string]int64{"n1": 92},
			shard: state.NewShardRouting(0, 0, "index created"), want: []string{"n2"}},
		{name: "a replica skips a node past low", used: map[string]int64{"n2": 87},
			shard: &statev1.ShardRouting{PrimaryTerm: 1, InSync: []string{"p"}, Copies: []*statev1.ShardCopy{
				{NodeId: "n1", AllocationId: "p", Primary: true, State: started}, {State: unassigned}}},
			want: []string{"n1", "n3"}},
		{name: "no node below the watermarks: unassigned, every reason given", used: map[string]int64{"n2": 87, "n3": 96},
			shard: &statev1.ShardRouting{PrimaryTerm: 1, InSync: []string{"p"}, Copies: []*statev1.ShardCopy{
				{NodeId: "n1", AllocationId: "p", Primary: true, State: started}, {State: unassigned}}},
			want: []string{"n1", ""},
			reason: "no node can take the copy: node [n1] holds a copy of the shard already; " +
				"node [n2] takes no replicas: disk of node [n2] at /data/n2 is 87.0% used (13b free of 100b), past the low disk watermark [85%]; " +
				"node [n3] takes no copies: disk of node [n3] at /data/n3 is 96.0% used (4b free of 100b), past the flood-stage disk watermark [95%]"},
		{name: "the cluster's watermarks, in free space", used: map[string]int64{"n1": 50},
			settings: &sluicev1.ClusterSettings{DiskWatermarkLow: "60b", DiskWatermarkHigh: "55b", DiskWatermarkFloodStage: "10b"},
			shard:    state.NewShardRouting(0, 0, "index created"), want: []string{""},
			reason: "no node can take the copy: node [n1] takes no copies: disk of node [n1] at /data/n1 is 50.0% used (50b free of 100b), past the high disk watermark [55b]; " +
				"node [n2] takes no copies: disk of node [n2] at /data/n2 is 50.0% used (50b free of 100b), past the high disk watermark [55b]; " +
				"node [n3] takes no copies: disk of node [n3] at /data/n3 is 50.0% used (50b free of 100b), past the high disk watermark [55b]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := snapshot([]string{"n1", "n2", "n3"}, int32(len(tt.shard.Copies)-1), nil, tt.shard)
			st.Settings = tt.settings
			for id := range st.Nodes {
				withDisk(st, id, 50, 100)
			}
			for id, u := range tt.used {
				withDisk(st, id, 100-u, 100)
			}
			got, _ := plan(t, Input{State: st, Keys: state.NewKeys("")})
			var nodes []string
			for _, c := range got[0].Copies {
				nodes = append(nodes, c.NodeId)
			}
			if d := cmp.Diff(tt.want, nodes); d != "" {
				t.Errorf("nodes (-want +got):\n%s", d)
			}
			if tt.reason != "" && got[0].Copies[len(got[0].Copies)-1].Reason != tt.reason {
				t.Errorf("reason = %q\nwant     %q", got[0].Copies[len(got[0].Copies)-1].Reason, tt.reason)
			}
		})
	}
}

// A write block is set on every index with a copy on a node past the
// flood stage, held while a node holding a copy is past high, and lifted
// once every one is below high (or gone).
func TestDiskBlocks(t *testing.T) {
	since := timestamppb.New(now.Add(-time.Minute))
	block := &statev1.DiskBlock{NodeId: "n1", Reason: "disk of node [n1] ...", Since: since}
	tests := []struct {
		name  string
		used  map[string]int64
		block *statev1.DiskBlock
		gone  string
		want  *statev1.DiskBlock // nil with change: lifted
		none  bool               // no change
	}{
		{name: "below the flood stage: nothing", used: map[string]int64{"n1": 94}, none: true},
		{name: "past the flood stage: blocked, naming node and disk", used: map[string]int64{"n1": 96},
			want: &statev1.DiskBlock{NodeId: "n1", Since: timestamppb.New(now),
				Reason: "disk of node [n1] at /data/n1 is 96.0% used (4b free of 100b), past the flood-stage disk watermark [95%]"}},
		{name: "back below the flood stage but past high: held", used: map[string]int64{"n1": 92}, block: block, none: true},
		{name: "another holder past high: held", used: map[string]int64{"n2": 91}, block: block, none: true},
		{name: "every holder below high: lifted", used: map[string]int64{"n1": 89}, block: block},
		{name: "the flooded node left: lifted", used: map[string]int64{"n1": 99}, gone: "n1", block: block},
		{name: "a node without copies does not block", used: map[string]int64{"n3": 99}, none: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := snapshot([]string{"n1", "n2", "n3"}, 1, nil, live())
			for id := range st.Nodes {
				withDisk(st, id, 50, 100)
			}
			for id, u := range tt.used {
				withDisk(st, id, 100-u, 100)
			}
			delete(st.Nodes, tt.gone)
			st.Indices["x"].Meta.DiskBlock = tt.block
			st.Indices["x"].ModRevision = 3
			chs := DiskBlocks(Input{State: st, Keys: state.NewKeys(""), Now: now})
			if tt.none {
				if len(chs) != 0 {
					t.Fatalf("changes = %v, want none", chs)
				}
				return
			}
			if len(chs) != 1 || chs[0].Key != "/sluice/indices/x" || chs[0].ModRevision != 3 {
				t.Fatalf("changes = %v, want one of indices/x at revision 3", chs)
			}
			if d := cmp.Diff(tt.want, chs[0].Meta.DiskBlock, protocmp.Transform()); d != "" {
				t.Errorf("block (-want +got):\n%s", d)
			}
			if chs[0].Meta.Name != "x" || chs[0].Meta.Settings.GetNumberOfReplicas() != 1 {
				t.Errorf("the rest of the index record changed: %v", chs[0].Meta)
			}
		})
	}
}
