package node

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-search/sluice/cluster/metadata"
	"github.com/sluice-search/sluice/cluster/state"
	"github.com/sluice-search/sluice/node/engine"
	statev1 "github.com/sluice-search/sluice/proto/sluice/state/v1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// gatedShards holds every open until the gate closes, counting how many
// run at once.
type gatedShards struct {
	shardSet
	gate <-chan struct{}
	mu   *sync.Mutex
	now  *int
	max  *int
}

func (s gatedShards) openShard(ctx context.Context, info *statev1.Index, id state.ShardID, role copyRole, rec *engine.Recovery) error {
	s.mu.Lock()
	*s.now++
	*s.max = max(*s.max, *s.now)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		*s.now--
		s.mu.Unlock()
	}()
	select {
	case <-s.gate:
	case <-ctx.Done():
		return ctx.Err()
	}
	return s.shardSet.openShard(ctx, info, id, role, rec)
}

// gated returns a wrapper whose opens wait for gate, and the highest
// number of opens that ran at once.
func gated(gate <-chan struct{}) (func(shardSet) shardSet, func() int) {
	var mu sync.Mutex
	var now, peak int
	wrap := func(s shardSet) shardSet { return gatedShards{s, gate, &mu, &now, &peak} }
	return wrap, func() int { mu.Lock(); defer mu.Unlock(); return peak }
}

func fastProgress(t *testing.T) {
	old := progressEvery
	progressEvery = 20 * time.Millisecond
	t.Cleanup(func() { progressEvery = old })
}

func initializing(sh *sluicev1.ShardRouting) bool {
	return sh.State == sluicev1.ShardState_SHARD_STATE_INITIALIZING
}

// TestRestartedNodeShardsStartOnlyOnceOpen: after a node stops without
// its copies leaving the routing table (a SIGKILL before its lease runs
// out looks so), its next run shows them INITIALIZING — recovering, with
// progress — from before it registers until each is open, never STARTED
// from the run before.
func TestRestartedNodeShardsStartOnlyOnceOpen(t *testing.T) {
	fastProgress(t)
	e := newEnv(t)
	dir := t.TempDir()
	n := e.startNode(t, dir, nil)
	ctx := context.Background()
	if _, err := e.md.CreateIndex(ctx, &sluicev1.CreateIndexRequest{Name: "x", Settings: &sluicev1.IndexSettings{NumberOfShards: 2}}, metadata.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitShards(t, "x", started)
	e.stopAllocator() // nobody marks the copies NODE_LEFT: they stay STARTED
	n.Stop()
	info, err := e.md.GetIndex(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	for _, sh := range info.Shards {
		if !started(sh) {
			t.Fatalf("before the restart: %v", sh)
		}
	}

	gate := make(chan struct{})
	wrap, _ := gated(gate)
	n2 := e.startNode(t, dir, wrap)
	defer n2.Stop()
	// Start has returned: the node is registered, and no copy is STARTED.
	info, err = e.md.GetIndex(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	for _, sh := range info.Shards {
		if !initializing(sh) || !strings.Contains(sh.Reason, "recovering on node") {
			t.Fatalf("registered restarted node: shard %v, want INITIALIZING recovering", sh)
		}
	}
	// While the opens run, their progress is published.
	info = e.waitShards(t, "x", func(sh *sluicev1.ShardRouting) bool {
		return initializing(sh) && sh.Recovery.GetStage() == sluicev1.RecoveryStage_RECOVERY_STAGE_LOADING
	})
	if r := info.Shards[0].Reason; !strings.Contains(r, "loading") {
		t.Errorf("reason %q", r)
	}
	close(gate)
	info = e.waitShards(t, "x", started)
	for _, sh := range info.Shards {
		if sh.Reason != "" || sh.Recovery != nil {
			t.Errorf("started copy keeps recovery state: %v", sh)
		}
	}
}

// TestShardsOpenInParallelBounded: a node opens its shards side by side,
// never more than ConcurrentRecoveries at once; the others show as queued.
func TestShardsOpenInParallelBounded(t *testing.T) {
	fastProgress(t)
	e := newEnv(t)
	gate := make(chan struct{})
	wrap, peak := gated(gate)
	n := e.startNodeWith(t, Config{DataDir: t.TempDir(), ConcurrentRecoveries: 2}, wrap)
	defer n.Stop()
	if _, err := e.md.CreateIndex(context.Background(), &sluicev1.CreateIndexRequest{Name: "x", Settings: &sluicev1.IndexSettings{NumberOfShards: 5}}, metadata.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	stages := func(info *sluicev1.IndexInfo) map[sluicev1.RecoveryStage]int {
		m := map[sluicev1.RecoveryStage]int{}
		for _, sh := range info.Shards {
			m[sh.Recovery.GetStage()]++
		}
		return m
	}
	info := e.waitShards(t, "x", func(sh *sluicev1.ShardRouting) bool { return initializing(sh) && sh.Recovery != nil })
	if got := stages(info); got[sluicev1.RecoveryStage_RECOVERY_STAGE_LOADING] != 2 || got[sluicev1.RecoveryStage_RECOVERY_STAGE_QUEUED] != 3 {
		t.Errorf("stages %v, want 2 loading and 3 queued", got)
	}
	close(gate)
	e.waitShards(t, "x", started)
	if p := peak(); p != 2 {
		t.Errorf("%d opens at once, want 2", p)
	}
}
