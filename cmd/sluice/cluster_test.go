package main

import (
	"regexp"
	"strings"
	"testing"
)

// TestClusterSettingsRebalanceBound: `sluice cluster settings` sets and
// shows max_concurrent_rebalance; -1 means no bound, below -1 is refused
// naming the field and changes nothing.
func TestClusterSettingsRebalanceBound(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	cli, must := devCLI(t, startDevNodes(t, 1))
	bound := regexp.MustCompile(`(?m)^max concurrent rebalance\s+(.+?)\s*$`)
	shown := func(out string) string {
		t.Helper()
		m := bound.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("no max concurrent rebalance in:\n%s", out)
		}
		return m[1]
	}
	if got := shown(must("cluster", "settings")); got != "2 (default)" {
		t.Errorf("default shown as %q", got)
	}
	if got := shown(must("cluster", "settings", "--max-concurrent-rebalance", "5")); got != "5" {
		t.Errorf("set 5, shown %q", got)
	}
	if got := shown(must("cluster", "settings", "--max-concurrent-rebalance", "-1")); got != "no bound" {
		t.Errorf("set -1, shown %q", got)
	}
	if out, err := cli("cluster", "settings", "--max-concurrent-rebalance", "-2"); err == nil ||
		!strings.Contains(out+err.Error(), "max_concurrent_rebalance") {
		t.Errorf("-2 accepted or not named: %v\n%s", err, out)
	}
	if got := shown(must("cluster", "settings")); got != "no bound" {
		t.Errorf("after a refused change, shown %q", got)
	}
	if got := shown(must("cluster", "settings", "--max-concurrent-rebalance", "0")); got != "2 (default)" {
		t.Errorf("set 0, shown %q", got)
	}
}
