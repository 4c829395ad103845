package placement

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sluice-search/sluice/cluster/routing"
)

const gb = 1 << 30

func nodes(zones ...string) []Node {
	out := make([]Node, len(zones))
	for i, z := range zones {
		out[i] = Node{ID: fmt.Sprintf("n%d", i+1), Zone: z, DiskFree: 100 * gb, DiskTotal: 200 * gb}
	}
	return out
}

func shards(index string, n int) []Shard {
	out := make([]Shard, n)
	for i := range out {
		out[i] = Shard{Index: index, Shard: i}
	}
	return out
}

// placed maps "index/shard" to the node chosen.
func placed(ds []Decision) map[string]string {
	out := map[string]string{}
	for _, d := range ds {
		out[fmt.Sprintf("%s/%d", d.Shard.Index, d.Shard.Shard)] = d.Node
	}
	return out
}

func TestPlace(t *testing.T) {
	refusing := nodes("", "", "")
	refusing[0].Refuse = "is draining"
	lowDisk := nodes("", "", "")
	lowDisk[0].RefuseReplicas, lowDisk[1].RefuseReplicas = "is past the low watermark", "is past the low watermark"
	richer := nodes("", "")
	richer[1].DiskFree = 150 * gb
	allRefuse := nodes("", "")
	for i := range allRefuse {
		allRefuse[i].Refuse = "is draining"
	}
	tests := []struct {
		name       string
		nodes      []Node
		assigned   []Copy
		unassigned []Shard
		want       map[string]string
	}{
		{
			name:       "spreads one index over nodes",
			nodes:      nodes("", "", ""),
			unassigned: shards("a", 3),
			want:       map[string]string{"a/0": "n1", "a/1": "n2", "a/2": "n3"},
		},
		{
			name:       "wraps around evenly",
			nodes:      nodes("", ""),
			unassigned: shards("a", 4),
			want:       map[string]string{"a/0": "n1", "a/1": "n2", "a/2": "n1", "a/3": "n2"},
		},
		{
			name:       "balances total shard count",
			nodes:      nodes("", "", ""),
			assigned:   []Copy{{"x", 0, "n1"}, {"x", 1, "n1"}, {"y", 0, "n2"}},
			unassigned: shards("a", 2),
			want:       map[string]string{"a/0": "n3", "a/1": "n2"},
		},
		{
			name:       "disk free breaks ties",
			nodes:      richer,
			unassigned: shards("a", 1),
			want:       map[string]string{"a/0": "n2"},
		},
		{
			name:       "zone spread beats node count",
			nodes:      nodes("z1", "z1", "z2"),
			assigned:   []Copy{{"x", 0, "n3"}, {"x", 1, "n3"}, {"x", 2, "n3"}},
			unassigned: shards("a", 2),
			want:       map[string]string{"a/0": "n1", "a/1": "n3"},
		},
		{
			name:       "skips a node that refuses copies",
			nodes:      refusing,
			unassigned: shards("a", 2),
			want:       map[string]string{"a/0": "n2", "a/1": "n3"},
		},
		{
			name:       "every node refusing places nothing",
			nodes:      allRefuse,
			unassigned: shards("a", 1),
			want:       map[string]string{"a/0": ""},
		},
		{
			name:       "a node past low takes new primaries, not replicas",
			nodes:      lowDisk,
			unassigned: []Shard{{Index: "a", Shard: 0, NewPrimary: true}, {Index: "a", Shard: 1, NewPrimary: true}, {Index: "b", Shard: 0}, {Index: "b", Shard: 1}},
			want:       map[string]string{"a/0": "n1", "a/1": "n2", "b/0": "n3", "b/1": "n3"},
		},
		{
			name:       "hint wins over balance",
			nodes:      nodes("", "", ""),
			assigned:   []Copy{{"x", 0, "n3"}, {"x", 1, "n3"}},
			unassigned: []Shard{{Index: "a", Shard: 0, Prefer: "n3"}, {Index: "a", Shard: 1, Prefer: "n3"}},
			want:       map[string]string{"a/0": "n3", "a/1": "n3"},
		},
		{
			name:       "hint to a dead node falls back",
			nodes:      nodes("", ""),
			unassigned: []Shard{{Index: "a", Shard: 0, Prefer: "gone"}},
			want:       map[string]string{"a/0": "n1"},
		},
		{
			name:       "never two copies of a shard on a node",
			nodes:      nodes("", ""),
			assigned:   []Copy{{"a", 0, "n1"}},
			unassigned: []Shard{{Index: "a", Shard: 0, Prefer: "n1"}, {Index: "a", Shard: 0}, {Index: "a", Shard: 0}},
			want:       map[string]string{"a/0": ""}, // last decision wins in the map: nowhere left
		},
		{
			name:       "no nodes",
			unassigned: shards("a", 1),
			want:       map[string]string{"a/0": ""},
		},
		{
			name:       "copies on dead nodes do not count for balance",
			nodes:      nodes("", ""),
			assigned:   []Copy{{"x", 0, "dead"}, {"x", 1, "n2"}},
			unassigned: shards("a", 1),
			want:       map[string]string{"a/0": "n1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := placed(Place(tt.nodes, tt.assigned, tt.unassigned))
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

func TestPlaceReasons(t *testing.T) {
	ns := nodes("", "")
	ns[0].Refuse = "is draining"
	d := Place(ns, []Copy{{"a", 0, "n2"}}, []Shard{{Index: "a"}})[0]
	want := "no node can take the copy: node [n1] is draining; node [n2] holds a copy of the shard already"
	if d.Node != "" || d.Reason != want {
		t.Errorf("decision = %+v, want reason %q", d, want)
	}
}

func TestPlaceReplicaSequence(t *testing.T) {
	// Three copies of a shard over two nodes: two placed, one with a reason.
	ds := Place(nodes("", ""), nil, []Shard{{Index: "a"}, {Index: "a"}, {Index: "a"}})
	if ds[0].Node == ds[1].Node || ds[2].Node != "" || ds[2].Reason == "" {
		t.Errorf("decisions = %+v", ds)
	}
}

func TestColocate(t *testing.T) {
	src := routing.Params{Shards: 2, RoutingShards: 8}
	dst := routing.Params{Shards: 4, RoutingShards: 8}
	hints, err := Colocate("dest", src, dst, []string{"n1", "n2"})
	if err != nil {
		t.Fatal(err)
	}
	got := placed(Place(nodes("", "", ""), nil, hints))
	want := map[string]string{"dest/0": "n1", "dest/1": "n1", "dest/2": "n2", "dest/3": "n2"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	// Every document of a destination shard is on that shard's node already.
	for i := range 1000 {
		id := fmt.Sprint("doc", i)
		srcNode := []string{"n1", "n2"}[routing.Shard(id, src)]
		if dn := got[fmt.Sprintf("dest/%d", routing.Shard(id, dst))]; dn != srcNode {
			t.Fatalf("doc %s: source on %s, destination on %s", id, srcNode, dn)
		}
	}
	if _, err := Colocate("d", src, routing.Params{Shards: 3, RoutingShards: 9}, []string{"n1", "n2"}); !errors.Is(err, routing.ErrNotColocatable) {
		t.Errorf("non-multiple: %v", err)
	}
}

func BenchmarkPlace(b *testing.B) {
	ns := nodes("z1", "z2", "z3", "z1", "z2", "z3")
	un := shards("big", 1024)
	b.ReportAllocs()
	for b.Loop() {
		Place(ns, nil, un)
	}
}
