package index

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestNormOrderAndRoundTrip(t *testing.T) {
	prev := -1
	for b := 0; b < 256; b++ {
		l := DecodeNorm(uint8(b))
		if l <= prev {
			t.Fatalf("norm %d decodes to %d, not above %d", b, l, prev)
		}
		if got := EncodeNorm(l); got != uint8(b) {
			t.Fatalf("EncodeNorm(DecodeNorm(%d)=%d) = %d", b, l, got)
		}
		prev = l
	}
	for _, l := range []int{0, 1, 23, 24, 25, 100, 1000, 1 << 20, math.MaxInt32} {
		if d := DecodeNorm(EncodeNorm(l)); d > l {
			t.Fatalf("length %d decodes up to %d", l, d)
		}
	}
	for l := 0; l < 24; l++ {
		if DecodeNorm(EncodeNorm(l)) != l {
			t.Fatalf("small length %d not exact", l)
		}
	}
}

func TestFixedBitSet(t *testing.T) {
	for _, n := range []int{0, 1, 63, 64, 65, 1000} {
		b := NewFixedBitSet(n)
		model := make([]bool, n)
		r := rand.New(rand.NewPCG(uint64(n), 1))
		for i := 0; i < n/2; i++ {
			j := r.IntN(n)
			b.Set(j)
			model[j] = true
		}
		c := b.Clone()
		if n > 0 {
			c.Clear(0)
		}
		want := 0
		for i := 0; i < n; i++ {
			if b.Get(i) != model[i] {
				t.Fatalf("n=%d bit %d", n, i)
			}
			if model[i] {
				want++
			}
			next := NoMoreDocs
			for k := i; k < n; k++ {
				if model[k] {
					next = k
					break
				}
			}
			if got := b.NextSetBit(i); got != next {
				t.Fatalf("n=%d NextSetBit(%d)=%d want %d", n, i, got, next)
			}
		}
		if b.Cardinality() != want {
			t.Fatalf("n=%d cardinality %d want %d", n, b.Cardinality(), want)
		}
		if n > 0 && model[0] && !b.Get(0) {
			t.Fatal("Clone shares words")
		}
		all := NewFixedBitSetAllSet(n)
		if all.Cardinality() != n {
			t.Fatalf("all-set n=%d has %d", n, all.Cardinality())
		}
	}
}

func TestNewFieldInfos(t *testing.T) {
	tests := []struct {
		name  string
		infos []FieldInfo
		ok    bool
	}{
		{"dense", []FieldInfo{{Name: "a", Number: 0}, {Name: "b", Number: 1}}, true},
		{"gap", []FieldInfo{{Name: "a", Number: 0}, {Name: "b", Number: 2}}, false},
		{"dup number", []FieldInfo{{Name: "a", Number: 0}, {Name: "b", Number: 0}}, false},
		{"dup name", []FieldInfo{{Name: "a", Number: 0}, {Name: "a", Number: 1}}, false},
	}
	for _, tc := range tests {
		fi, err := NewFieldInfos(tc.infos)
		if (err == nil) != tc.ok {
			t.Fatalf("%s: err=%v", tc.name, err)
		}
		if tc.ok && (fi.ByName("b").Number != 1 || fi.ByNumber(0).Name != "a" || fi.Len() != 2) {
			t.Fatalf("%s: lookups wrong", tc.name)
		}
	}
}
