package codec

import (
	"slices"
	"strconv"
	"testing"

	"github.com/sluice-search/sluice/node/engine/codec/codectest"
	"github.com/sluice-search/sluice/node/engine/index"
)

func TestImpactAccumulator(t *testing.T) {
	r := codectest.Rand(t)
	var acc impactAccumulator
	capped := 0
	for _, tc := range []struct {
		name            string
		maxFreq, norms  int
		docs            int
		correlatedNorms bool // long docs have high freqs: large fronts
	}{
		{"docs-only", 1, 1, 128, false},
		{"no-norms", 300, 1, 128, false},
		{"small", 5, 20, 128, false},
		{"wide", 1 << 20, 256, 128, false},
		{"correlated", 200, 256, 128, true},
		{"tail", 50, 256, 7, true},
		{"single", 9, 256, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for range 200 {
				all := make([]index.Impact, tc.docs)
				for i := range all {
					n := r.IntN(tc.norms)
					f := 1 + r.IntN(tc.maxFreq)
					if tc.correlatedNorms {
						f = 1 + n*tc.maxFreq/256 + r.IntN(3)
					}
					all[i] = index.Impact{Freq: f, Norm: uint8(n)}
					acc.add(uint32(f), uint8(n))
				}
				got := acc.finish()
				want := codectest.Competitive(all)
				if len(want) <= maxBlockImpacts {
					if !slices.Equal(got, want) {
						t.Fatalf("competitive set %v, want %v (of %v)", got, want, all)
					}
				} else {
					capped++
					checkCapped(t, got, want)
				}
				// Round trip through the encoding.
				b := appendImpacts([]byte{0xaa}, got)
				dec, n, ok := decodeImpacts(b, 1, nil)
				if !ok || n != len(b)-1 || !slices.Equal(dec, got) {
					t.Fatalf("decode(encode(%v)) = %v, %d, %v", got, dec, n, ok)
				}
			}
		})
	}
	if capped == 0 {
		t.Fatal("no block exceeded maxBlockImpacts: the cap is not exercised")
	}
}

// checkCapped checks a capped set: at most maxBlockImpacts pairs, strictly
// increasing, dominating every pair of the exact set, each pair built from
// the exact set's values, the block's max freq and min norm kept.
func checkCapped(t *testing.T, got, exact []index.Impact) {
	t.Helper()
	if len(got) != maxBlockImpacts {
		t.Fatalf("capped set has %d pairs, want %d", len(got), maxBlockImpacts)
	}
	for i := 1; i < len(got); i++ {
		if got[i].Freq <= got[i-1].Freq || got[i].Norm <= got[i-1].Norm {
			t.Fatalf("capped set not increasing: %v", got)
		}
	}
	for _, e := range exact {
		if !slices.ContainsFunc(got, func(g index.Impact) bool { return g.Freq >= e.Freq && g.Norm <= e.Norm }) {
			t.Fatalf("capped set %v does not dominate %v", got, e)
		}
	}
	for _, g := range got {
		if !slices.ContainsFunc(exact, func(e index.Impact) bool { return e.Freq == g.Freq }) ||
			!slices.ContainsFunc(exact, func(e index.Impact) bool { return e.Norm == g.Norm }) {
			t.Fatalf("capped pair %v not made of the exact set's values %v", g, exact)
		}
	}
	if got[0].Norm != exact[0].Norm || got[len(got)-1].Freq != exact[len(exact)-1].Freq {
		t.Fatalf("capped set %v lost the min norm or max freq of %v", got, exact)
	}
}

func TestDecodeImpactsRejects(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"zero count", []byte{0}},
		{"count above cap", appendUvarint(nil, maxBlockImpacts+1)},
		{"truncated pair", []byte{2, 0}},
		{"truncated norm delta", []byte{1, 1}},
		{"norm above 255", append(appendUvarint([]byte{2, 1}, 200), 1, 100)},
		{"freq above MaxInt32", append(appendUvarint([]byte{2}, 1<<31), appendUvarint(nil, 1<<31)...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dst := []index.Impact{{Freq: 7, Norm: 7}}
			got, _, ok := decodeImpacts(tc.b, 0, dst)
			if ok {
				t.Fatalf("decoded %v", got)
			}
			if !slices.Equal(got, dst) {
				t.Fatalf("dst changed to %v on failure", got)
			}
		})
	}
}

// FuzzDecodeImpacts decodes arbitrary bytes: no panic; what decodes is a
// strictly increasing set of at most maxBlockImpacts pairs with freqs in
// 1..MaxInt32, which re-encodes to the same bytes.
func FuzzDecodeImpacts(f *testing.F) {
	f.Add(appendImpacts(nil, []index.Impact{{Freq: 1, Norm: 0}, {Freq: 3, Norm: 9}, {Freq: 40, Norm: 10}}))
	f.Add([]byte{1, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x80})
	f.Add([]byte{2, 1, 0xfd, 0x01, 1, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		got, n, ok := decodeImpacts(b, 0, nil)
		if !ok {
			if len(got) != 0 || n != 0 {
				t.Fatalf("failed decode returned %v, %d", got, n)
			}
			return
		}
		if len(got) == 0 || len(got) > maxBlockImpacts || n > len(b) {
			t.Fatalf("decoded %d pairs from %d of %d bytes", len(got), n, len(b))
		}
		for i, im := range got {
			if im.Freq < 1 || im.Freq > 1<<31-1 || i > 0 && (im.Freq <= got[i-1].Freq || im.Norm <= got[i-1].Norm) {
				t.Fatalf("bad set %v", got)
			}
		}
		if re := appendImpacts(nil, got); string(re) != string(b[:n]) && canonicalVarints(b[:n]) {
			t.Fatalf("re-encoding %v gives %x, read %x", got, re, b[:n])
		}
	})
}

// canonicalVarints reports whether b has no over-long varint (a
// continuation byte followed by a final 0x00), the only way two encodings
// of one set can differ.
func canonicalVarints(b []byte) bool {
	for i := 1; i < len(b); i++ {
		if b[i] == 0 && b[i-1]&0x80 != 0 {
			return false
		}
	}
	return true
}

// TestReuseImpactsAllocs checks that a recycled impacts enum costs no
// allocation, for segments with impacts (v3) and without (the v2 golden
// segment), and that BlockImpacts into a buffer with room allocates nothing.
func TestReuseImpactsAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	for _, v := range []int{2, formatVersion} {
		t.Run(strconv.Itoa(v), func(t *testing.T) {
			sr := openGolden(t, v)
			te := sr.Terms("body").Iterator()
			ir := te.(index.ImpactsReuser)
			if !te.SeekExact([]byte("all")) {
				t.Fatal("term missing")
			}
			ie := ir.ReuseImpacts(nil, index.PostingsFreqs)
			_, hasImpacts := ie.(index.BlockImpactsEnum)
			if hasImpacts != (v >= 3) {
				t.Fatalf("version %d enum implements BlockImpactsEnum: %v", v, hasImpacts)
			}
			buf := make([]index.Impact, 0, maxBlockImpacts)
			allocs := testing.AllocsPerRun(100, func() {
				te.SeekExact([]byte("all"))
				ie = ir.ReuseImpacts(ie, index.PostingsFreqs)
				for up := ie.AdvanceShallow(0); ; up = ie.AdvanceShallow(up + 1) {
					if bi, ok := ie.(index.BlockImpactsEnum); ok {
						buf = bi.BlockImpacts(buf[:0])
					}
					if up == index.NoMoreDocs {
						break
					}
				}
				for d := ie.NextDoc(); d != index.NoMoreDocs; d = ie.NextDoc() {
				}
			})
			if allocs != 0 {
				t.Fatalf("%v allocations per reuse", allocs)
			}
		})
	}
}
