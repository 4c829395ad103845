package node

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/sluice-search/sluice/cluster/metadata"
	"github.com/sluice-search/sluice/cluster/state"
	"github.com/sluice-search/sluice/node/engine"
	statev1 "github.com/sluice-search/sluice/proto/sluice/state/v1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// heldReplicaOpens, once armed with an index's uuid, holds every open of
// its shards as a replica until the open is cancelled (a recovery from a
// primary that never answers), saying on held when one waits.
type heldReplicaOpens struct {
	shardSet
	armed *atomic.Pointer[string]
	held  chan<- struct{}
}

func (s heldReplicaOpens) openShard(ctx context.Context, info *statev1.Index, id state.ShardID, role copyRole, rec *engine.Recovery) error {
	if uuid := s.armed.Load(); !role.Primary && uuid != nil && *uuid == id.Index {
		select {
		case s.held <- struct{}{}:
		default:
		}
		<-ctx.Done()
		return ctx.Err()
	}
	return s.shardSet.openShard(ctx, info, id, role, rec)
}

// TestOpenTakesRoleChangedWhileRunning: a copy whose node reopens it as a
// replica (its recovery waiting on a primary) and that the allocator makes
// primary at a newer term meanwhile — its primary's node gone, the copy
// in sync — opens again as the primary. Without it the replica's open
// ran on for ever and the shard stayed red (the full-cluster restart of
// the e2e faults spec).
func TestOpenTakesRoleChangedWhileRunning(t *testing.T) {
	fastRetries(t)
	e := newEnv(t)
	held := make(chan struct{}, 1)
	nodes, dirs, armed := map[string]*Node{}, map[string]string{}, map[string]*atomic.Pointer[string]{}
	start := func(id string) {
		wrap := func(s shardSet) shardSet { return heldReplicaOpens{s, armed[id], held} }
		n := e.startNodeWith(t, Config{DataDir: dirs[id], ID: id}, wrap)
		t.Cleanup(n.Stop)
		nodes[id] = n
	}
	for _, id := range []string{"n1", "n2"} {
		dirs[id], armed[id] = t.TempDir(), new(atomic.Pointer[string])
		start(id)
	}
	ctx := context.Background()
	if _, err := e.md.CreateIndex(ctx, &sluicev1.CreateIndexRequest{Name: "x",
		Settings: &sluicev1.IndexSettings{NumberOfReplicas: 1}}, metadata.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	info := e.waitShards(t, "x", func(sh *sluicev1.ShardRouting) bool { return started(sh) && sh.InSync })
	var primary, replica, replicaAlloc string
	var term int64
	for _, sh := range info.Shards {
		if sh.Primary {
			primary, term = sh.NodeId, sh.PrimaryTerm
		} else {
			replica, replicaAlloc = sh.NodeId, sh.AllocationId
		}
	}
	// The replica's node restarts; its copy's open as a replica is held.
	// The allocator is stopped first, as the routing changes below are
	// the test's: the copies stay where they are, the restarted node marks
	// its copy INITIALIZING itself.
	e.stopAllocator()
	nodes[replica].Stop()
	armed[replica].Store(&info.Uuid)
	start(replica)
	select {
	case <-held:
	case <-time.After(10 * time.Second):
		t.Fatal("the replica's open never started")
	}
	// Its primary's node goes and the copy is made primary at a new term
	// while its open runs, as the allocator does with an in-sync copy
	// (the e2e run: a primary handed back to a node reopening its copy).
	e.waitShards(t, "x", func(sh *sluicev1.ShardRouting) bool { return sh.Primary || initializing(sh) })
	nodes[primary].Stop()
	if _, err := e.store.Update(ctx, func(st *state.Snapshot) (*state.Txn, error) {
		sh := st.ByUUID[info.Uuid].Shards[0]
		r := proto.Clone(sh.Routing).(*statev1.ShardRouting)
		if !state.InSync(r, replicaAlloc) {
			r.InSync = append(r.InSync, replicaAlloc)
		}
		nr := state.Promote(r, replicaAlloc, "promoted-away", time.Now())
		if nr == nil {
			t.Fatalf("cannot promote %s in %v", replicaAlloc, sh.Routing)
		}
		var tx state.Txn
		tx.Unchanged(e.store.Keys.Shard(info.Uuid, 0), sh.ModRevision)
		tx.Put(e.store.Keys.Shard(info.Uuid, 0), nr)
		return &tx, nil
	}); err != nil {
		t.Fatal(err)
	}
	e.waitShards(t, "x", func(sh *sluicev1.ShardRouting) bool {
		return !sh.Primary || sh.NodeId == replica && started(sh) && sh.PrimaryTerm > term
	})
}
