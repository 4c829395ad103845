package server_test

import (
	"context"
	"maps"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/sluice-search/sluice/node/engine"
	"github.com/sluice-search/sluice/node/shard"
	nodev1 "github.com/sluice-search/sluice/proto/sluice/node/v1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// TestScanSliceIsTheEngineSlice: a sliced scan returns exactly the docs of
// engine.Slice, the cut reindex sub-slices make too (node/reindex's
// TestSubSliceIsTheEngineSlice), so one _id lands in the same slice either
// way.
func TestScanSliceIsTheEngineSlice(t *testing.T) {
	f := newFixture(t, shard.HostOptions{})
	f.bulk(t, indexItems(200), sluicev1.RefreshPolicy_REFRESH_POLICY_IMMEDIATE)
	open, err := f.client.OpenShardReader(context.Background(), &nodev1.OpenShardReaderRequest{Shard: sid, KeepAlive: durationpb.New(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	all, _ := scanAll(t, f, open.ReaderId, nil, nil, 0)
	const max int32 = 3
	for id := range max {
		ids, _ := scanAll(t, f, open.ReaderId, &sluicev1.Slice{Id: id, Max: max}, nil, 0)
		got, want := map[string]bool{}, map[string]bool{}
		for _, d := range ids {
			got[d] = true
		}
		for _, d := range all {
			if (engine.Slice{ID: int(id), Max: int(max)}).Contains([]byte(d)) {
				want[d] = true
			}
		}
		if len(want) == 0 || !maps.Equal(got, want) {
			t.Fatalf("slice %d/%d: %d docs, engine.Slice holds %d", id, max, len(got), len(want))
		}
	}
}
