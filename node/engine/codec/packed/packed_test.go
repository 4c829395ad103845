package packed

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

func TestPackUnpackEveryWidth(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for w := 0; w <= 32; w++ {
		for trial := 0; trial < 20; trial++ {
			var in, out [BlockSize]uint32
			for i := range in {
				if w > 0 {
					in[i] = uint32(r.Uint64() & (1<<w - 1))
				}
			}
			if trial == 0 && w > 0 {
				in[BlockSize-1] = uint32(1<<w - 1) // the top value in the last slot
			}
			if got := MaxWidth(&in); got > w {
				t.Fatalf("width %d: MaxWidth %d", w, got)
			}
			enc := Pack(nil, &in, w)
			if len(enc) != BlockBytes(w) {
				t.Fatalf("width %d: %d bytes, want %d", w, len(enc), BlockBytes(w))
			}
			for i := range out {
				out[i] = 0xdeadbeef
			}
			Unpack(&out, enc, w)
			if out != in {
				t.Fatalf("width %d trial %d: round trip differs", w, trial)
			}
		}
	}
}

func TestBitsRequired(t *testing.T) {
	for _, tc := range []struct {
		v    uint32
		want int
	}{{0, 0}, {1, 1}, {2, 2}, {3, 2}, {255, 8}, {256, 9}, {1<<32 - 1, 32}} {
		if got := BitsRequired(tc.v); got != tc.want {
			t.Errorf("BitsRequired(%d) = %d, want %d", tc.v, got, tc.want)
		}
	}
}

// FuzzUnpack: any bytes of sufficient length decode without panicking, and
// re-packing the result gives back the same bytes (every bit is significant).
func FuzzUnpack(f *testing.F) {
	f.Add(make([]byte, 64), uint8(4))
	f.Add(make([]byte, 512), uint8(32))
	f.Fuzz(func(t *testing.T, src []byte, width uint8) {
		w := int(width % 33)
		if len(src) < BlockBytes(w) {
			return
		}
		var out [BlockSize]uint32
		Unpack(&out, src, w)
		if again := Pack(nil, &out, w); string(again) != string(src[:BlockBytes(w)]) {
			t.Fatalf("width %d: repack differs", w)
		}
	})
}

func BenchmarkUnpack(b *testing.B) {
	for _, w := range []int{1, 2, 4, 5, 7, 8, 11, 16, 20, 24, 32} {
		b.Run(fmt.Sprintf("w%d", w), func(b *testing.B) {
			var in, out [BlockSize]uint32
			for i := range in {
				in[i] = uint32(i*2654435761) & (1<<w - 1)
			}
			enc := Pack(nil, &in, w)
			b.SetBytes(BlockSize * 4)
			for b.Loop() {
				Unpack(&out, enc, w)
			}
		})
	}
}

func BenchmarkPack(b *testing.B) {
	var in [BlockSize]uint32
	for i := range in {
		in[i] = uint32(i*2654435761) & (1<<11 - 1)
	}
	buf := make([]byte, 0, 1024)
	for b.Loop() {
		buf = Pack(buf[:0], &in, 11)
	}
}
