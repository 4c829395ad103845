package mergepolicy

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

const (
	kb = int64(1) << 10
	mb = int64(1) << 20
	gb = int64(1) << 30
)

func newPolicy(t *testing.T, o Options) *TieredMergePolicy {
	t.Helper()
	p, err := NewTieredMergePolicy(o)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// seg builds a segment of size bytes with 1 KiB docs and del deleted docs.
func seg(name string, size int64, del int) Segment {
	maxDoc := int(size / kb)
	return Segment{Name: name, SizeBytes: size, MaxDoc: maxDoc, DelCount: del}
}

// segs builds n equal segments named prefix0..prefixN-1.
func segs(prefix string, n int, size int64, delPct int) []Segment {
	out := make([]Segment, n)
	for i := range out {
		s := seg(fmt.Sprintf("%s%02d", prefix, i), size, 0)
		s.DelCount = s.MaxDoc * delPct / 100
		out[i] = s
	}
	return out
}

func names(ss []Segment) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.Name
	}
	return out
}

func setOf(names []string) map[string]bool {
	m := map[string]bool{}
	for _, n := range names {
		m[n] = true
	}
	return m
}

func assertMerges(t *testing.T, spec MergeSpecification, want [][]string) {
	t.Helper()
	var got [][]string
	for _, m := range spec.Merges {
		got = append(got, m.Segments)
	}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("merges = %v, want %v", got, want)
	}
}

func TestOptions(t *testing.T) {
	var def Options
	def.SetDefaults()
	want := Options{
		MaxMergedSegmentBytes:       5 * gb,
		SegmentsPerTier:             8,
		FloorSegmentBytes:           16 * mb,
		DeletesPctAllowed:           20,
		ForceMergeDeletesPctAllowed: 10,
		TargetSearchConcurrency:     1,
	}
	if def != want {
		t.Fatalf("defaults = %+v, want %+v", def, want)
	}
	tests := []struct {
		name   string
		mutate func(*Options)
		ok     bool
	}{
		{"defaults", func(*Options) {}, true},
		{"segments per tier 2", func(o *Options) { o.SegmentsPerTier = 2 }, true},
		{"segments per tier 1.5", func(o *Options) { o.SegmentsPerTier = 1.5 }, false},
		{"negative max", func(o *Options) { o.MaxMergedSegmentBytes = -1 }, false},
		{"negative floor", func(o *Options) { o.FloorSegmentBytes = -1 }, false},
		{"deletes 4", func(o *Options) { o.DeletesPctAllowed = 4 }, false},
		{"deletes 50", func(o *Options) { o.DeletesPctAllowed = 50 }, true},
		{"deletes 51", func(o *Options) { o.DeletesPctAllowed = 51 }, false},
		{"force deletes 101", func(o *Options) { o.ForceMergeDeletesPctAllowed = 101 }, false},
		{"concurrency -1", func(o *Options) { o.TargetSearchConcurrency = -1 }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := def
			tt.mutate(&o)
			_, err := NewTieredMergePolicy(o)
			if (err == nil) != tt.ok {
				t.Fatalf("err = %v, want ok=%v", err, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrInvalidOptions) {
				t.Fatalf("err %v does not wrap ErrInvalidOptions", err)
			}
		})
	}
}

func TestInvalidSegments(t *testing.T) {
	p := newPolicy(t, Options{})
	tests := []struct {
		name string
		segs []Segment
	}{
		{"empty name", []Segment{{Name: "", SizeBytes: 1, MaxDoc: 1}}},
		{"duplicate", []Segment{seg("_0", mb, 0), seg("_0", mb, 0)}},
		{"del over max", []Segment{{Name: "_0", SizeBytes: 1, MaxDoc: 1, DelCount: 2}}},
		{"negative size", []Segment{{Name: "_0", SizeBytes: -1, MaxDoc: 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := map[string]func() error{
				"natural": func() error { _, err := p.FindMerges(tt.segs, nil); return err },
				"forced":  func() error { _, err := p.FindForcedMerges(tt.segs, 1, nil); return err },
				"deletes": func() error { _, err := p.FindForcedDeletesMerges(tt.segs, nil); return err },
			}
			for kind, call := range calls {
				if err := call(); !errors.Is(err, ErrInvalidSegments) {
					t.Errorf("%s: err = %v, want ErrInvalidSegments", kind, err)
				}
			}
		})
	}
	if _, err := p.FindForcedMerges([]Segment{seg("_0", mb, 0)}, 0, nil); !errors.Is(err, ErrInvalidSegments) {
		t.Errorf("maxSegmentCount 0: err = %v", err)
	}
}

// checkSpec asserts what every specification must satisfy: merges are
// disjoint, name existing segments, never a merging one, and drops are fully
// deleted, non-merging segments.
func checkSpec(t *testing.T, in []Segment, merging map[string]bool, spec MergeSpecification) {
	t.Helper()
	byName := map[string]Segment{}
	for _, s := range in {
		byName[s.Name] = s
	}
	used := map[string]bool{}
	for _, m := range spec.Merges {
		if len(m.Segments) == 0 {
			t.Fatalf("empty merge in %+v", spec)
		}
		for _, n := range m.Segments {
			s, ok := byName[n]
			switch {
			case !ok:
				t.Fatalf("merge names unknown segment %s", n)
			case merging[n]:
				t.Fatalf("merge includes merging segment %s", n)
			case used[n]:
				t.Fatalf("segment %s in two merges", n)
			case fullyDeleted(s):
				t.Fatalf("merge includes fully deleted segment %s", n)
			}
			used[n] = true
		}
	}
	for _, n := range spec.Drop {
		s, ok := byName[n]
		if !ok || !fullyDeleted(s) || merging[n] || used[n] {
			t.Fatalf("bad drop %s: %+v merging=%v", n, s, merging[n])
		}
	}
	for _, s := range in {
		if fullyDeleted(s) && !merging[s.Name] && !slices.Contains(spec.Drop, s.Name) {
			t.Fatalf("fully deleted %s not dropped", s.Name)
		}
	}
}

func TestFindMerges(t *testing.T) {
	tests := []struct {
		name    string
		opts    Options
		segs    []Segment
		merging []string
		// want: exact merges (segment names, largest first), or nil for none.
		want [][]string
		// check replaces want for cases where only properties matter.
		check func(t *testing.T, spec MergeSpecification)
	}{
		{
			name: "empty index",
		},
		{
			name: "within budget",
			segs: segs("s", 8, 100*mb, 0),
		},
		{
			name: "tiny flushes merge past the merge factor up to the floor",
			segs: segs("t", 20, mb, 0),
			// 16 x 1 MiB reach the 16 MiB floor; the 4 left are within budget.
			check: func(t *testing.T, spec MergeSpecification) {
				if len(spec.Merges) != 1 || len(spec.Merges[0].Segments) != 16 {
					t.Fatalf("merges = %+v, want one of 16 segments", spec.Merges)
				}
				if got := spec.Merges[0].EstimatedBytes; got != 16*mb {
					t.Fatalf("estimated bytes %d, want %d", got, 16*mb)
				}
			},
		},
		{
			name: "above the floor a merge takes segments-per-tier segments",
			segs: segs("m", 10, 100*mb, 0),
			// Budget: 8 of 100 MiB + 1 for the 200 MiB left = 9 < 10.
			// Equal sizes: the first 8 in name order.
			want: [][]string{names(segs("m", 8, 100*mb, 0))},
		},
		{
			name: "merging segments are skipped and still count toward the budget",
			segs: segs("m", 20, 100*mb, 0),
			// Budget 10 over 2000 MiB; 12 eligible.
			merging: []string{"m00", "m01", "m02", "m03", "m04", "m05", "m06", "m07"},
			want:    [][]string{{"m08", "m09", "m10", "m11", "m12", "m13", "m14", "m15"}},
		},
		{
			name: "deleted segments are favoured",
			segs: append(segs("a", 10, 100*mb, 0), segs("d", 8, 100*mb, 30)...),
			check: func(t *testing.T, spec MergeSpecification) {
				if len(spec.Merges) == 0 {
					t.Fatal("no merges")
				}
				if want := names(segs("d", 8, 100*mb, 30)); !slices.Equal(spec.Merges[0].Segments, want) {
					t.Fatalf("first merge %v, want the deleted ones %v", spec.Merges[0].Segments, want)
				}
			},
		},
		{
			name: "deletes alone trigger a merge within the segment budget",
			segs: segs("d", 3, 500*mb, 40),
			check: func(t *testing.T, spec MergeSpecification) {
				if len(spec.Merges) == 0 {
					t.Fatal("40% deletes over a 20% allowance: want a merge")
				}
			},
		},
		{
			name: "large clean segments are left alone",
			segs: append(segs("big", 12, 3*gb, 1), seg("small", 100*mb, 0)),
		},
		{
			name: "large segment with many deletes is rewritten alone",
			// 6 GiB pro-rated: over the max, so it cannot take a partner.
			segs: []Segment{seg("big", 10*gb, int(10*gb/kb)*40/100), seg("small", 100*mb, 0)},
			want: [][]string{{"big"}},
		},
		{
			name: "fully deleted segments are dropped, not merged",
			segs: append(segs("m", 10, 100*mb, 0), seg("gone", 50*mb, int(50*mb/kb)), Segment{Name: "nodocs"}),
			want: [][]string{names(segs("m", 8, 100*mb, 0))},
			check: func(t *testing.T, spec MergeSpecification) {
				if !slices.Equal(spec.Drop, []string{"gone", "nodocs"}) {
					t.Fatalf("drop = %v", spec.Drop)
				}
			},
		},
		{
			name:    "a fully deleted merging segment is left to its merge",
			segs:    []Segment{seg("gone", 50*mb, int(50*mb/kb))},
			merging: []string{"gone"},
		},
		{
			name: "merges stop at the max merged size and only one max-sized merge per call",
			// 3 x 1750 MiB > 5 GiB: every candidate hits the cap at 2.
			segs: segs("g", 30, 1750*mb, 0),
			want: [][]string{{"g00", "g01"}},
		},
		{
			name:    "no second max-sized merge while one runs",
			segs:    segs("g", 30, 1750*mb, 0),
			merging: []string{"g00", "g01", "g02"},
			// Candidates that hit the cap are rejected; only tail pairs that
			// never tried a third segment remain (as in Lucene).
			check: func(t *testing.T, spec MergeSpecification) {
				for _, m := range spec.Merges {
					if slices.Contains(m.Segments, "g03") {
						t.Fatalf("max-sized merge %v proposed while one runs", m.Segments)
					}
				}
			},
		},
		{
			name: "merges that barely grow the largest input are skipped",
			// 400 MiB + 8 x 20 MiB = 560 MiB < 1.5 x 400 MiB: pointless.
			opts: Options{SegmentsPerTier: 2},
			segs: append([]Segment{seg("big", 400*mb, 0)}, segs("s", 1, 20*mb, 0)...),
		},
		{
			name: "target search concurrency caps merged doc count",
			opts: Options{TargetSearchConcurrency: 4},
			segs: segs("m", 12, 100*mb, 0),
			check: func(t *testing.T, spec MergeSpecification) {
				for _, m := range spec.Merges {
					// 1200 MiB of docs / 4 slices = 300 MiB per merged segment.
					if m.EstimatedBytes > 300*mb {
						t.Fatalf("merge %+v exceeds a quarter of the docs", m)
					}
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPolicy(t, tt.opts)
			merging := setOf(tt.merging)
			spec, err := p.FindMerges(tt.segs, merging)
			if err != nil {
				t.Fatal(err)
			}
			checkSpec(t, tt.segs, merging, spec)
			if tt.check != nil {
				tt.check(t, spec)
				if tt.want == nil {
					return
				}
			}
			assertMerges(t, spec, tt.want)
		})
	}
}

func TestFindForcedMerges(t *testing.T) {
	mixed := []Segment{seg("a", 900*mb, 0), seg("b", 400*mb, 0), seg("c", 200*mb, 0), seg("d", 100*mb, 0), seg("e", 50*mb, 0)}
	tests := []struct {
		name     string
		segs     []Segment
		max      int
		merging  []string
		want     [][]string
		resultLE int // if > 0: segments left after applying the merges
	}{
		{name: "to one", segs: mixed, max: 1, want: [][]string{{"a", "b", "c", "d", "e"}}},
		{name: "one clean segment is already merged", segs: []Segment{seg("a", gb, 0)}, max: 1},
		{name: "one segment with deletes is rewritten", segs: []Segment{seg("a", gb, 10)}, max: 1, want: [][]string{{"a"}}},
		{name: "within target and clean", segs: mixed, max: 5},
		{name: "nothing while a merge runs", segs: mixed, max: 1, merging: []string{"e"}},
		{name: "to three packs the smallest", segs: mixed, max: 3, want: [][]string{{"c", "d", "e"}}, resultLE: 3},
		{name: "to two", segs: mixed, max: 2, resultLE: 2},
		{
			// Unlike natural merges, the requested count wins over the max size.
			name: "big segments to two", segs: segs("g", 10, 4*gb, 0), max: 2, resultLE: 2,
		},
		{
			name: "fully deleted are dropped", segs: append(segs("m", 3, mb, 0), seg("gone", mb, int(mb/kb))), max: 1,
			want: [][]string{{"m00", "m01", "m02"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPolicy(t, Options{})
			merging := setOf(tt.merging)
			spec, err := p.FindForcedMerges(tt.segs, tt.max, merging)
			if err != nil {
				t.Fatal(err)
			}
			checkSpec(t, tt.segs, merging, spec)
			for _, m := range spec.Merges {
				if !m.Forced {
					t.Fatalf("merge %+v not marked forced", m)
				}
			}
			if tt.resultLE > 0 {
				left := len(tt.segs) - len(spec.Drop)
				for _, m := range spec.Merges {
					left -= len(m.Segments) - 1
				}
				if left > tt.resultLE {
					t.Fatalf("%d segments left after %v, want <= %d", left, spec.Merges, tt.resultLE)
				}
			}
			if tt.want == nil && tt.resultLE > 0 {
				return
			}
			assertMerges(t, spec, tt.want)
		})
	}
}

func TestFindForcedDeletesMerges(t *testing.T) {
	p := newPolicy(t, Options{MaxMergedSegmentBytes: gb})
	in := []Segment{
		seg("clean", 500*mb, 0),
		seg("few", 500*mb, int(500*mb/kb)*5/100), // 5% <= 10%: kept
		seg("hugeDel", 3*gb, int(3*gb/kb)/2),     // over max even pro-rated: alone
		seg("gone", 10*mb, int(10*mb/kb)),
	}
	for i := range 6 {
		s := seg(fmt.Sprintf("d%d", i), 400*mb, 0)
		s.DelCount = s.MaxDoc / 2 // 200 MiB pro-rated each
		in = append(in, s)
	}
	spec, err := p.FindForcedDeletesMerges(in, map[string]bool{"d5": true})
	if err != nil {
		t.Fatal(err)
	}
	checkSpec(t, in, map[string]bool{"d5": true}, spec)
	got := map[string]bool{}
	for _, m := range spec.Merges {
		if len(m.Segments) > 1 && m.EstimatedBytes > gb {
			t.Errorf("merge %+v over the 1 GiB cap", m)
		}
		for _, n := range m.Segments {
			got[n] = true
		}
	}
	for _, n := range []string{"hugeDel", "d0", "d1", "d2", "d3", "d4"} {
		if !got[n] {
			t.Errorf("%s not rewritten: %+v", n, spec.Merges)
		}
	}
	for _, n := range []string{"clean", "few", "d5"} {
		if got[n] {
			t.Errorf("%s rewritten: %+v", n, spec.Merges)
		}
	}
	if !slices.Equal(spec.Drop, []string{"gone"}) {
		t.Errorf("drop = %v", spec.Drop)
	}
}

func TestProRated(t *testing.T) {
	tests := []struct {
		s    Segment
		want int64
	}{
		{Segment{SizeBytes: 1000, MaxDoc: 10}, 1000},
		{Segment{SizeBytes: 1000, MaxDoc: 10, DelCount: 5}, 500},
		{Segment{SizeBytes: 1000, MaxDoc: 10, DelCount: 10}, 0},
		{Segment{SizeBytes: 1000}, 1000},
	}
	for _, tt := range tests {
		if got := proRated(tt.s); got != tt.want {
			t.Errorf("proRated(%+v) = %d, want %d", tt.s, got, tt.want)
		}
	}
}

// FuzzFind checks the invariants of all three entry points on arbitrary
// segment lists and options, including extreme sizes.
func FuzzFind(f *testing.F) {
	f.Add(uint64(1), uint8(20), int64(16*mb), int64(5*gb), uint8(8), uint8(3))
	f.Add(uint64(7), uint8(3), int64(1), int64(math.MaxInt64), uint8(2), uint8(1))
	f.Fuzz(func(t *testing.T, seed uint64, n uint8, floor, maxSeg int64, perTier, maxCount uint8) {
		p, err := NewTieredMergePolicy(Options{FloorSegmentBytes: floor, MaxMergedSegmentBytes: maxSeg, SegmentsPerTier: float64(perTier)})
		if err != nil {
			return
		}
		rng := rand.New(rand.NewPCG(seed, 1))
		var in []Segment
		merging := map[string]bool{}
		for i := range int(n) {
			s := Segment{Name: fmt.Sprintf("_%d", i), SizeBytes: rng.Int64N(math.MaxInt64 / 256), MaxDoc: rng.IntN(1 << 20)}
			if rng.IntN(4) == 0 {
				s.SizeBytes = rng.Int64N(64 * mb)
			}
			if s.MaxDoc > 0 {
				s.DelCount = rng.IntN(s.MaxDoc + 1)
			}
			if rng.IntN(6) == 0 {
				merging[s.Name] = true
			}
			in = append(in, s)
		}
		for _, find := range []func() (MergeSpecification, error){
			func() (MergeSpecification, error) { return p.FindMerges(in, merging) },
			func() (MergeSpecification, error) { return p.FindForcedMerges(in, int(maxCount%8)+1, merging) },
			func() (MergeSpecification, error) { return p.FindForcedDeletesMerges(in, merging) },
		} {
			spec, err := find()
			if err != nil {
				t.Fatal(err)
			}
			checkSpec(t, in, merging, spec)
		}
	})
}
