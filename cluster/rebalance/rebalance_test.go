package rebalance

import (
	"errors"
	"strings"
	"testing"

	"github.com/sluice-search/sluice/cluster/state"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in               string
		want             Enable
		primary, replica bool
		bad              bool
	}{
		{in: "", want: All, primary: true, replica: true},
		{in: "all", want: All, primary: true, replica: true},
		{in: "primaries", want: Primaries, primary: true},
		{in: "replicas", want: Replicas, replica: true},
		{in: "none", want: None},
		{in: "All", bad: true},
		{in: "yes", bad: true},
	}
	for _, tt := range tests {
		got, err := Parse(tt.in)
		if tt.bad {
			var fe interface{ ErrorField() string }
			if !errors.Is(err, state.ErrInvalid) || !strings.Contains(err.Error(), "rebalance_enable: ["+tt.in+"] is not one of all, primaries, replicas, none") {
				t.Errorf("Parse(%q) = %v, %v; want an InvalidArgument naming the field", tt.in, got, err)
			}
			if !errors.As(err, &fe) || fe.ErrorField() != "rebalance_enable" {
				t.Errorf("Parse(%q): %v does not name the field rebalance_enable", tt.in, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("Parse(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
		if got.Allows(true) != tt.primary || got.Allows(false) != tt.replica {
			t.Errorf("%v allows primaries %v, replicas %v", got, got.Allows(true), got.Allows(false))
		}
	}
	if got := FromSettings(&sluicev1.ClusterSettings{RebalanceEnable: "bogus"}); got != All {
		t.Errorf("a stored value that does not parse = %v, want the default", got)
	}
	if got := FromSettings(nil); got != All {
		t.Errorf("no settings = %v, want all", got)
	}
}
