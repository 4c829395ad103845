package datapath

import (
	"context"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestReplicaSelectorOrder(t *testing.T) {
	ms := float64(time.Millisecond)
	tests := []struct {
		name  string
		stats map[string]nodeStats
		nodes []string
		want  []string
		after map[string]float64 // ewma after the choice
	}{
		{"unmeasured first, then by average", map[string]nodeStats{"a": {ewma: 5 * ms}, "b": {ewma: 2 * ms}},
			[]string{"a", "b", "c"}, []string{"c", "b", "a"}, map[string]float64{"a": 2.5 * ms, "b": ms, "c": 0}},
		{"outstanding requests weigh cubed", map[string]nodeStats{"a": {ewma: 2 * ms, outstanding: 1}, "b": {ewma: 10 * ms}},
			[]string{"a", "b"}, []string{"b", "a"}, nil},
		{"ties keep routing order (the primary first)", map[string]nodeStats{"a": {ewma: ms}, "b": {ewma: ms}},
			[]string{"b", "a"}, []string{"b", "a"}, nil},
		{"losers catch up halfway with the winner", map[string]nodeStats{"a": {ewma: 1 * ms}, "b": {ewma: 9 * ms}, "c": {ewma: 3 * ms}},
			[]string{"a", "b", "c"}, []string{"a", "c", "b"}, map[string]float64{"a": ms, "b": 5 * ms, "c": 2 * ms}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newReplicaSelector()
			for n, st := range tt.stats {
				s.nodes[n] = &nodeStats{ewma: st.ewma, outstanding: st.outstanding}
			}
			if got := s.order(tt.nodes); !slices.Equal(got, tt.want) {
				t.Errorf("order = %v, want %v", got, tt.want)
			}
			for n, want := range tt.after {
				if got := s.stats(n).ewma; got != want {
					t.Errorf("%s: ewma %v, want %v", n, got, want)
				}
			}
		})
	}
	// A failure another copy might not have counts as a slow response; a
	// failure of the request itself (invalid) only ends it.
	ctx := context.Background()
	s := newReplicaSelector()
	s.nodes["a"] = &nodeStats{ewma: 10 * ms}
	done := s.begin(ctx, "a")
	if s.stats("a").outstanding != 1 {
		t.Fatal("begin did not count the request")
	}
	done(invalidf("bad query"))
	if st := s.stats("a"); st.outstanding != 0 || st.ewma != 10*ms {
		t.Errorf("after an invalid request: %+v", st)
	}
	s.begin(ctx, "a")(status.Error(codes.Unavailable, "connection refused"))
	if st := s.stats("a"); st.outstanding != 0 || st.ewma < arsAlpha*float64(arsFailure) {
		t.Errorf("after an unavailable node: %+v, want the average at least %v", st, arsAlpha*float64(arsFailure))
	}
}
