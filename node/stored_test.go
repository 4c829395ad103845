package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/sluice-search/sluice/cluster/metadata"
	"github.com/sluice-search/sluice/cluster/state"
	"github.com/sluice-search/sluice/cluster/watermark"
	"github.com/sluice-search/sluice/node/shard"
	statev1 "github.com/sluice-search/sluice/proto/sluice/state/v1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

func TestNotActiveElsewhere(t *testing.T) {
	const (
		started = sluicev1.ShardState_SHARD_STATE_STARTED
		initing = sluicev1.ShardState_SHARD_STATE_INITIALIZING
	)
	cp := func(node, alloc string, s sluicev1.ShardState) *statev1.ShardCopy {
		return &statev1.ShardCopy{NodeId: node, AllocationId: alloc, State: s}
	}
	st := &state.Snapshot{Nodes: map[string]*state.Node{"n1": {ID: "n1"}, "n2": {ID: "n2"}, "n3": {ID: "n3"}}}
	tests := []struct {
		name     string
		replicas int32
		copies   []*statev1.ShardCopy
		inSync   []string
		want     string
	}{
		{"every copy started and in sync elsewhere", 1,
			[]*statev1.ShardCopy{cp("n2", "a", started), cp("n3", "b", started)}, []string{"a", "b"}, ""},
		{"a relocation's target started too", 0,
			[]*statev1.ShardCopy{cp("n2", "a", started), cp("n3", "b", started)}, []string{"a", "b"}, ""},
		{"a copy still here", 1,
			[]*statev1.ShardCopy{cp("n2", "a", started), cp("n1", "b", sluicev1.ShardState_SHARD_STATE_FAILED)}, []string{"a"},
			"a copy is assigned to this node (SHARD_STATE_FAILED)"},
		{"a copy recovering", 1,
			[]*statev1.ShardCopy{cp("n2", "a", started), cp("n3", "b", initing)}, []string{"a"},
			"the copy on node [n3] is SHARD_STATE_INITIALIZING"},
		{"a copy unassigned", 1,
			[]*statev1.ShardCopy{cp("n2", "a", started), cp("", "", sluicev1.ShardState_SHARD_STATE_UNASSIGNED)}, []string{"a"},
			"a copy is unassigned"},
		{"a copy out of sync", 1,
			[]*statev1.ShardCopy{cp("n2", "a", started), cp("n3", "b", started)}, []string{"a"},
			"the copy on node [n3] is not in sync"},
		{"a copy on a node gone", 1,
			[]*statev1.ShardCopy{cp("n2", "a", started), cp("n4", "b", started)}, []string{"a", "b"},
			"node [n4] is not registered"},
		{"fewer copies than the index asks for", 2,
			[]*statev1.ShardCopy{cp("n2", "a", started), cp("n3", "b", started)}, []string{"a", "b"},
			"2 copies of 3 placed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := &state.Index{Meta: &statev1.Index{Settings: &sluicev1.IndexSettings{NumberOfReplicas: tt.replicas}}}
			rt := &statev1.ShardRouting{Copies: tt.copies, InSync: tt.inSync}
			if got := notActiveElsewhere(st, x, rt, "n1"); got != tt.want {
				t.Errorf("notActiveElsewhere = %q, want %q", got, tt.want)
			}
		})
	}
}

// newReplicatedSettings is newReplicated with index x created with
// settings.
func newReplicatedSettings(t *testing.T, n int, settings *sluicev1.IndexSettings) *replicated {
	t.Helper()
	fastRetries(t)
	rc := &replicated{e: newEnv(t), nodes: map[string]*Node{}, dirs: map[string]string{}}
	for i := range n {
		rc.start(t, fmt.Sprintf("n%d", i+1), "")
	}
	info, err := rc.e.md.CreateIndex(context.Background(), &sluicev1.CreateIndexRequest{Name: "x", Settings: settings}, metadata.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rc.uuid = info.Uuid
	rc.waitGreen(t)
	return rc
}

// waitOff waits until every copy of x is started and in sync on a node
// other than node.
func (rc *replicated) waitOff(t *testing.T, node string) {
	t.Helper()
	rc.e.waitShards(t, "x", func(sh *sluicev1.ShardRouting) bool {
		return started(sh) && sh.InSync && sh.NodeId != node
	})
}

// waitGone waits until path no longer exists.
func waitGone(t *testing.T, path string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		_, err := os.Stat(path)
		if errors.Is(err, os.ErrNotExist) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still there (%v)", path, err)
		}
	}
}

func mustExist(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestDrainedNodeDeletesMovedCopy: a copy moved off a drained node has its
// data deleted there once the shard is fully active elsewhere, so moving
// copies frees disk.
func TestDrainedNodeDeletesMovedCopy(t *testing.T) {
	rc := newReplicated(t, 3, 1)
	p, r, _ := rc.copies(t)
	mustBulk(t, rc.shard(t, p), bulkOps(0, 100), shard.RefreshNone)
	path := rc.nodes[r].Shards().Path(shard.ID{IndexUUID: rc.uuid})
	mustExist(t, path)

	settings := watermark.Ignored()
	settings.DrainedNodes = []string{r}
	var tx state.Txn
	tx.Put(rc.e.store.Keys.Settings(), &statev1.ClusterSettings{Settings: settings})
	if err := rc.e.store.Commit(context.Background(), &tx); err != nil {
		t.Fatal(err)
	}
	rc.waitOff(t, r)
	waitGone(t, path)
	// The index's directory goes with its last shard.
	waitGone(t, filepath.Dir(path))
	mustExist(t, rc.nodes[p].Shards().Path(shard.ID{IndexUUID: rc.uuid}))
}

// TestRestartedNodeDeletesCopyMovedWhileDown: a node down while its copy
// was placed elsewhere finds the copy's data when it starts again and
// deletes it, as the shard is fully active on the other nodes; data of an
// index the cluster does not know is kept.
func TestRestartedNodeDeletesCopyMovedWhileDown(t *testing.T) {
	rc := newReplicatedSettings(t, 3, &sluicev1.IndexSettings{NumberOfReplicas: 1, NodeLeftDelayedTimeout: durationpb.New(0)})
	p, r, _ := rc.copies(t)
	mustBulk(t, rc.shard(t, p), bulkOps(0, 100), shard.RefreshNone)
	path := rc.nodes[r].Shards().Path(shard.ID{IndexUUID: rc.uuid})
	rc.nodes[r].Stop()
	rc.waitOff(t, r)
	mustExist(t, path) // kept while the node was down

	dangling := filepath.Join(rc.dirs[r], "00000000-0000-0000-0000-000000000000", "0")
	if err := os.MkdirAll(dangling, 0o755); err != nil {
		t.Fatal(err)
	}
	n := rc.start(t, r, "")
	waitGone(t, path)
	n.Stop() // its reconciler has seen the unknown index on every pass since it started
	mustExist(t, dangling)
}
