package node

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-search/sluice/cluster/metadata"
	"github.com/sluice-search/sluice/cluster/state"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// heldPromotions, once armed with an index's uuid, holds every setRole
// of its shards to a primary role (a promotion) until release closes,
// saying on held when one waits.
type heldPromotions struct {
	shardSet
	armed   *atomic.Pointer[string]
	held    chan<- struct{}
	release <-chan struct{}
}

func (s heldPromotions) setRole(ctx context.Context, id state.ShardID, role copyRole) error {
	if uuid := s.armed.Load(); role.Primary && uuid != nil && *uuid == id.Index {
		select {
		case s.held <- struct{}{}:
		default:
		}
		select {
		case <-s.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return s.shardSet.setRole(ctx, id, role)
}

// TestPromotionDoesNotHoldOtherShards: a promotion (the replica's engine
// reopened as a primary, its translog replayed, the other copies
// resynced: seconds, or the replication timeout for a copy that does not
// answer) runs beside the node's reconciliation, not under it: while one
// is held, the node opens a shard of a new index; once released, the
// promoted copy is the started primary of the new term. Under the
// reconciler's lock, the new shard waited for the promotion.
func TestPromotionDoesNotHoldOtherShards(t *testing.T) {
	fastRetries(t)
	e := newEnv(t)
	held, release := make(chan struct{}, 1), make(chan struct{})
	nodes, armed := map[string]*Node{}, map[string]*atomic.Pointer[string]{}
	for _, id := range []string{"n1", "n2"} {
		armed[id] = new(atomic.Pointer[string])
		wrap := func(s shardSet) shardSet { return heldPromotions{s, armed[id], held, release} }
		n := e.startNodeWith(t, Config{DataDir: t.TempDir(), ID: id}, wrap)
		t.Cleanup(n.Stop)
		nodes[id] = n
	}
	releaseAll := sync.OnceFunc(func() { close(release) })
	defer releaseAll()
	ctx := context.Background()
	if _, err := e.md.CreateIndex(ctx, &sluicev1.CreateIndexRequest{Name: "x",
		Settings: &sluicev1.IndexSettings{NumberOfReplicas: 1}}, metadata.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	info := e.waitShards(t, "x", func(sh *sluicev1.ShardRouting) bool { return started(sh) && sh.InSync })
	var primary, replica string
	var term int64
	for _, sh := range info.Shards {
		if sh.Primary {
			primary, term = sh.NodeId, sh.PrimaryTerm
		} else {
			replica = sh.NodeId
		}
	}
	armed[replica].Store(&info.Uuid)
	nodes[primary].Stop()
	select {
	case <-held:
	case <-time.After(10 * time.Second):
		t.Fatal("the replica was not promoted")
	}
	if _, err := e.md.CreateIndex(ctx, &sluicev1.CreateIndexRequest{Name: "y"}, metadata.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitShards(t, "y", func(sh *sluicev1.ShardRouting) bool { return started(sh) && sh.NodeId == replica })
	select {
	case <-held:
		t.Fatal("the promotion was asked for twice")
	default:
	}
	releaseAll()
	e.waitShards(t, "x", func(sh *sluicev1.ShardRouting) bool {
		return !sh.Primary || started(sh) && sh.NodeId == replica && sh.PrimaryTerm > term
	})
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		s, err := nodes[replica].Shards().Get(shardID(state.ShardID{Index: info.Uuid}))
		if err == nil && s.Primary() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the released promotion did not end: %v", err)
		}
	}
}
