package reindex

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/sluice-search/sluice/cluster/routing"
	statev1 "github.com/sluice-search/sluice/proto/sluice/state/v1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

func TestPlanSlices(t *testing.T) {
	sub := func(id, max int32) *sluicev1.Slice { return &sluicev1.Slice{Id: id, Max: max} }
	tests := []struct {
		name          string
		shards, slice int
		maxDocs       int64
		want          []*statev1.ReindexPlanSlice
	}{
		{"auto", 2, 0, 0, []*statev1.ReindexPlanSlice{{Slice: 0, SourceShard: 0}, {Slice: 1, SourceShard: 1}}},
		{"fewer than shards", 3, 1, 0, []*statev1.ReindexPlanSlice{{Slice: 0, SourceShard: 0}, {Slice: 1, SourceShard: 1}, {Slice: 2, SourceShard: 2}}},
		{"subdivide evenly", 2, 4, 0, []*statev1.ReindexPlanSlice{
			{Slice: 0, SourceShard: 0, SubSlice: sub(0, 2)}, {Slice: 1, SourceShard: 1, SubSlice: sub(0, 2)},
			{Slice: 2, SourceShard: 0, SubSlice: sub(1, 2)}, {Slice: 3, SourceShard: 1, SubSlice: sub(1, 2)}}},
		{"subdivide unevenly", 2, 3, 0, []*statev1.ReindexPlanSlice{
			{Slice: 0, SourceShard: 0, SubSlice: sub(0, 2)}, {Slice: 1, SourceShard: 1},
			{Slice: 2, SourceShard: 0, SubSlice: sub(1, 2)}}},
		{"max docs shared", 2, 0, 5, []*statev1.ReindexPlanSlice{{Slice: 0, SourceShard: 0, MaxDocs: 3}, {Slice: 1, SourceShard: 1, MaxDocs: 2}}},
		{"max docs below slices", 3, 0, 1, []*statev1.ReindexPlanSlice{{Slice: 0, SourceShard: 0, MaxDocs: 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := planSlices(tt.shards, tt.slice, tt.maxDocs)
			if d := cmp.Diff(tt.want, got, protocmp.Transform()); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

func TestChooseMode(t *testing.T) {
	p := func(s, r int) routing.Params { return routing.Params{Shards: s, RoutingShards: r} }
	const (
		auto     = sluicev1.ReindexMode_REINDEX_MODE_AUTO
		local    = sluicev1.ReindexMode_REINDEX_MODE_LOCAL
		remote   = sluicev1.ReindexMode_REINDEX_MODE_REMOTE
		baseline = sluicev1.ReindexMode_REINDEX_MODE_BASELINE
	)
	tests := []struct {
		want     sluicev1.ReindexMode
		src, dst routing.Params
		mode     sluicev1.ReindexMode
		bad      bool
	}{
		{auto, p(2, 2), p(2, 2), local, false},
		{sluicev1.ReindexMode_REINDEX_MODE_UNSPECIFIED, p(2, 4), p(4, 4), local, false},
		{auto, p(2, 2), p(3, 3), remote, false},
		{auto, p(2, 2), p(4, 4), remote, false}, // routing shards differ
		{local, p(2, 2), p(3, 3), 0, true},
		{local, p(2, 8), p(8, 8), local, false},
		{remote, p(2, 2), p(2, 2), remote, false},
		{baseline, p(2, 2), p(2, 2), baseline, false},
	}
	for _, tt := range tests {
		mode, _, err := chooseMode(tt.want, tt.src, tt.dst)
		if (err != nil) != tt.bad || mode != tt.mode {
			t.Errorf("chooseMode(%v, %v, %v) = %v, %v", tt.want, tt.src, tt.dst, mode, err)
		}
	}
}

func TestDestSettings(t *testing.T) {
	src := &sluicev1.IndexSettings{NumberOfShards: 2, NumberOfRoutingShards: 8, IndexingBufferBytes: 1 << 20}
	tests := []struct {
		req              *sluicev1.IndexSettings
		shards, rshards  int32
		keepsOtherFields bool
	}{
		{nil, 2, 8, true},
		{&sluicev1.IndexSettings{NumberOfShards: 4}, 4, 8, true}, // a split stays co-locatable
		{&sluicev1.IndexSettings{NumberOfShards: 3}, 3, 3, true}, // cannot: own routing
		{&sluicev1.IndexSettings{NumberOfShards: 4, NumberOfRoutingShards: 16}, 4, 16, true},
	}
	for _, tt := range tests {
		got := destSettings(src, tt.req)
		if got.NumberOfShards != tt.shards || got.NumberOfRoutingShards != tt.rshards || got.IndexingBufferBytes != src.IndexingBufferBytes {
			t.Errorf("destSettings(%v) = %v", tt.req, got)
		}
	}
}
