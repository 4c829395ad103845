package datapath

import (
	"fmt"
	"slices"
	"testing"

	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

func TestPITIDRoundTrip(t *testing.T) {
	ps := []pitShard{{index: "books", uuid: "u-1", node: "node-1", shard: 0, reader: 7}, {index: "b", uuid: "u-2", node: "n", shard: 1023, reader: 1 << 40}}
	got, err := decodePIT(encodePIT(ps))
	if err != nil || !slices.Equal(got, ps) {
		t.Fatalf("round trip: %v %v", got, err)
	}
	for _, bad := range []string{"", "!!", encodePIT(ps)[:10], encodePIT(nil)} {
		if _, err := decodePIT(bad); err == nil {
			t.Errorf("decodePIT(%q) accepted", bad)
		}
	}
}

func FuzzDecodePIT(f *testing.F) {
	f.Add(encodePIT([]pitShard{{index: "i", uuid: "u", node: "n", shard: 2, reader: 9}}))
	f.Add("AQE")
	f.Fuzz(func(t *testing.T, id string) {
		ps, err := decodePIT(id)
		if err != nil {
			return
		}
		again, err := decodePIT(encodePIT(ps))
		if err != nil || !slices.Equal(again, ps) {
			t.Fatalf("%q decodes to %v, which does not round-trip: %v", id, ps, err)
		}
	})
}

func FuzzDecodeScrollCursor(f *testing.F) {
	f.Add(scrollCursor{ownPIT: "abc", total: 10, pos: 2, shard: []byte{1, 5}}.encode())
	f.Add([]byte{1, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := decodeScrollCursor(b)
		if err != nil {
			return
		}
		again, err := decodeScrollCursor(c.encode())
		if err != nil || again.ownPIT != c.ownPIT || again.total != c.total || again.pos != c.pos || !slices.Equal(again.shard, c.shard) {
			t.Fatalf("%x decodes to %+v, which does not round-trip: %+v %v", b, c, again, err)
		}
	})
}

// TestSliceShardsPartition: for every shard count and slice count, the
// slices take each (shard, sub-slice of the shard) exactly once, and a
// shard's sub-slices partition it (ids 0..max-1 of one max).
func TestSliceShardsPartition(t *testing.T) {
	for n := 1; n <= 6; n++ {
		ps := make([]pitShard, n)
		for i := range ps {
			ps[i] = pitShard{shard: i}
		}
		for max := 1; max <= 20; max++ {
			t.Run(fmt.Sprintf("%d shards/%d slices", n, max), func(t *testing.T) {
				subs := map[int][]int32{} // shard -> sub-slice ids
				subMax := map[int]int32{}
				for id := range max {
					got, err := sliceShards(ps, &sluicev1.Slice{Id: int32(id), Max: int32(max)})
					if err != nil {
						t.Fatal(err)
					}
					for _, s := range got {
						sid, smax := int32(0), int32(1)
						if s.sub != nil {
							sid, smax = s.sub.Id, s.sub.Max
						}
						if m, ok := subMax[s.pit.shard]; ok && m != smax {
							t.Fatalf("shard %d cut into %d and %d sub-slices", s.pit.shard, m, smax)
						}
						subMax[s.pit.shard] = smax
						subs[s.pit.shard] = append(subs[s.pit.shard], sid)
					}
				}
				for shard := range n {
					got := slices.Sorted(slices.Values(subs[shard]))
					want := make([]int32, subMax[shard])
					for i := range want {
						want[i] = int32(i)
					}
					if len(want) == 0 || !slices.Equal(got, want) {
						t.Fatalf("shard %d read by sub-slices %v of %d", shard, got, subMax[shard])
					}
				}
			})
		}
	}
	if _, err := sliceShards(make([]pitShard, 2), &sluicev1.Slice{Id: 3, Max: 3}); err == nil {
		t.Fatal("slice id >= max accepted")
	}
}
