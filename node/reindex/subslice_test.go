package reindex_test

import (
	"context"
	"fmt"
	"maps"
	"testing"

	"github.com/sluice-search/sluice/cluster/routing"
	"github.com/sluice-search/sluice/node/engine"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// TestSubSliceIsTheEngineSlice: a sub-slice copies exactly the docs of
// engine.Slice, the cut a sliced scan makes too (node/server's
// TestScanSliceIsTheEngineSlice), so one _id lands in the same slice
// either way.
func TestSubSliceIsTheEngineSlice(t *testing.T) {
	ctx := context.Background()
	n := startNode(t)
	p := routing.Params{Shards: 1, RoutingShards: 1}
	n.open(t, "src", "src", 0)
	want := load(t, []*testNode{n}, "src", p, 300)
	const max = 3
	for sub := range max {
		dst := fmt.Sprintf("dst%d", sub)
		n.open(t, dst, dst, 0)
		r := sliceReq("src", 0, dst, p, nil)
		r.TaskId, r.SubSlice = dst, &sluicev1.Slice{Id: int32(sub), Max: max}
		if _, _, err := runSlice(ctx, n.client, r); err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{}
		for id := range contents(t, []*testNode{n}, dst, 1) {
			got[id] = true
		}
		in := map[string]bool{}
		for id := range want {
			if (engine.Slice{ID: sub, Max: max}).Contains([]byte(id)) {
				in[id] = true
			}
		}
		if len(in) == 0 || !maps.Equal(got, in) {
			t.Fatalf("sub-slice %d/%d copied %d docs, engine.Slice holds %d", sub, max, len(got), len(in))
		}
	}
}
