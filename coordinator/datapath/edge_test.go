package datapath

import (
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestReasonDropsRelayedStatusPrefixes(t *testing.T) {
	node := status.Error(codes.NotFound, "reader 9 of shard x/0: reader not found (expired or closed)")
	for _, tt := range []struct {
		err  error
		want string
	}{
		{node, "reader 9 of shard x/0: reader not found (expired or closed)"},
		{status.Error(codes.NotFound, node.Error()), "reader 9 of shard x/0: reader not found (expired or closed)"},
		{fmt.Errorf("[books][0]: %w", node), "[books][0]: reader 9 of shard x/0: reader not found (expired or closed)"},
		{invalidf("size must be >= 0"), "invalid request: size must be >= 0"},
	} {
		if got := reason(tt.err); got != tt.want {
			t.Errorf("reason(%q) = %q, want %q", tt.err, got, tt.want)
		}
	}
	st, _ := status.FromError((&DataPath{}).toStatus(status.Error(codes.NotFound, node.Error())))
	if st.Code() != codes.NotFound || st.Message() != "reader 9 of shard x/0: reader not found (expired or closed)" {
		t.Errorf("toStatus: %v %q", st.Code(), st.Message())
	}
}
