package dwpt

import "testing"

func TestPaged(t *testing.T) {
	for _, n := range []int{0, 1, pageSize - 1, pageSize, pageSize + 1, 3*pageSize + 17} {
		var p paged[int64]
		for i := range n {
			p.append(int64(i) * 3)
		}
		if p.len() != n {
			t.Fatalf("n=%d: len %d", n, p.len())
		}
		for i := range n {
			if got := *p.at(int32(i)); got != int64(i)*3 {
				t.Fatalf("n=%d: at(%d) = %d", n, i, got)
			}
		}
		if n > pageSize && p.ramBytes() > int64(n+2*pageSize)*8+int64(cap(p.pages))*24 {
			t.Fatalf("n=%d: %d bytes", n, p.ramBytes())
		}
	}
}
