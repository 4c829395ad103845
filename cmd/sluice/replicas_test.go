package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestReplicasCLI: --replicas at creation and set-replicas on the live
// index change number_of_replicas (0 included), and index get and state
// show every copy with its role, in-sync flag and term.
func TestReplicasCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	addr := startDevNodes(t, 2)
	cli, must := devCLI(t, addr)
	type info struct {
		Settings struct {
			Replicas int `json:"number_of_replicas"`
		}
		Shards []struct {
			Shard   int
			Primary bool
			State   string
			NodeID  string `json:"node_id"`
			InSync  bool   `json:"in_sync"`
			Term    int    `json:"primary_term"`
		}
	}
	get := func() info {
		t.Helper()
		var x info
		if err := json.Unmarshal([]byte(must("index", "get", "orders")), &x); err != nil {
			t.Fatal(err)
		}
		return x
	}
	must("index", "create", "orders", "--shards", "2", "--replicas", "1")
	x := get()
	if x.Settings.Replicas != 1 || len(x.Shards) != 4 {
		t.Fatalf("created with --replicas 1: %d replicas, copies %+v", x.Settings.Replicas, x.Shards)
	}
	for _, sh := range x.Shards {
		if sh.Term < 1 {
			t.Errorf("copy %+v: no primary term", sh)
		}
	}
	// `sluice state` names every copy's role, in-sync flag and term.
	state := must("state")
	row := regexp.MustCompile(`(?m)^orders\s+(\d)\s+(primary|replica)\s+\S+\s+\S+\s+(yes|no)\s+(\d+)\s`)
	rows := row.FindAllStringSubmatch(state, -1)
	roles := map[string]int{}
	for _, r := range rows {
		roles[r[2]]++
	}
	if roles["primary"] != 2 || roles["replica"] != 2 {
		t.Errorf("state shows copies %v, want 2 primaries and 2 replicas:\n%s", roles, state)
	}

	out := must("index", "set-replicas", "orders", "0")
	if !strings.Contains(out, "number_of_replicas 0") {
		t.Errorf("set-replicas 0 says:\n%s", out)
	}
	if x := get(); x.Settings.Replicas != 0 {
		t.Errorf("after set-replicas 0: %d replicas", x.Settings.Replicas)
	}
	// The allocator follows: one copy per shard.
	for deadline := time.Now().Add(10 * time.Second); len(get().Shards) != 2; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("copies after set-replicas 0: %+v", get().Shards)
		}
	}
	must("index", "set-replicas", "orders", "1")
	if x := get(); x.Settings.Replicas != 1 {
		t.Errorf("after set-replicas 1: %d replicas", x.Settings.Replicas)
	}
	for _, bad := range [][]string{{"orders", "33"}, {"orders", "-1"}, {"orders", "two"}, {"nosuch", "1"}} {
		if out, err := cli(append([]string{"index", "set-replicas"}, bad...)...); err == nil {
			t.Errorf("set-replicas %v accepted:\n%s", bad, out)
		}
	}
	if list := must("index", "list"); !regexp.MustCompile(`(?m)^orders\s+\S+\s+2\s+1\s`).MatchString(list) {
		t.Errorf("index list does not show 1 replica:\n%s", list)
	}
}
