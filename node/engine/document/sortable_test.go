package document

import (
	"bytes"
	"math"
	"sort"
	"testing"
)

func TestSortableOrder(t *testing.T) {
	ints := []int64{math.MinInt64, -1 << 40, -2, -1, 0, 1, 2, 1 << 40, math.MaxInt64}
	var enc [][]byte
	for _, v := range ints {
		b := EncodeSortable(nil, v)
		if got := DecodeSortable(b); got != v {
			t.Fatalf("round trip %d: got %d", v, got)
		}
		enc = append(enc, b)
	}
	if !sort.SliceIsSorted(enc, func(i, j int) bool { return bytes.Compare(enc[i], enc[j]) < 0 }) {
		t.Fatal("encoded ints are not in byte order")
	}

	floats := []float64{math.Inf(-1), -1e300, -1.5, math.Copysign(0, -1), 0, 1e-300, 1.5, 1e300, math.Inf(1)}
	prev := int64(math.MinInt64)
	for i, f := range floats {
		s := SortableFloat64(f)
		if back := Float64FromSortable(s); back != f {
			t.Fatalf("round trip %v: got %v", f, back)
		}
		if i > 0 && s < prev {
			t.Fatalf("%v sorts before %v", f, floats[i-1])
		}
		prev = s
	}
}

func TestParseFieldType(t *testing.T) {
	for ft := Text; ft <= Boolean; ft++ {
		got, ok := ParseFieldType(ft.String())
		if !ok || got != ft {
			t.Fatalf("%v: got %v %v", ft, got, ok)
		}
	}
	if _, ok := ParseFieldType("geo_point"); ok {
		t.Fatal("unknown type accepted")
	}
}
