package node

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluice-search/sluice/cluster/state"
	"github.com/sluice-search/sluice/node/engine"
	"github.com/sluice-search/sluice/node/shard"
	nodev1 "github.com/sluice-search/sluice/proto/sluice/node/v1"
)

// TestReopenedPrimaryRaisesTermAndTrims: a primary whose node restarts
// without a failover (no allocator runs: nothing promotes) reopens at
// term + 1. An operation its earlier run sent the replica and then lost
// from its own translog tail — sent here to the replica directly, at the
// old term, with the next seqNo — is voided by the reopened primary's
// resync; the write the primary then acknowledges under that seqNo is
// the replica's, and once the replica is promoted it holds that write
// and not the lost one. A client's if_seq_no/if_primary_term read before
// the restart still matches the unchanged document, and the version its
// write gets carries the new term. Reopened at the old term, the resync's trim
// (operations of older terms) left the lost operation in the replica's
// translog beside the new one of the same seqNo and term, and the
// promotion failed on it ("translog holds two ids at seq 11 in one term"),
// leaving the shard without a primary.
func TestReopenedPrimaryRaisesTermAndTrims(t *testing.T) {
	rc := newReplicated(t, 2, 1)
	p, r, term := rc.copies(t)
	mustBulk(t, rc.shard(t, p), bulkOps(0, 10), shard.RefreshNone)
	d9, found, err := rc.shard(t, p).Get(context.Background(), []byte("d9"), true)
	if err != nil || !found || d9.Version.PrimaryTerm != term {
		t.Fatalf("d9: %+v, found %v, %v", d9.Version, found, err)
	}
	rc.e.stopAllocator()
	replicaAlloc := rc.allocation(t, r)

	conn, err := rc.nodes[p].peers.Node(r)
	if err != nil {
		t.Fatal(err)
	}
	lost := &nodev1.ReplicatedOp{SeqNo: 11, PrimaryTerm: term, Type: nodev1.ReplicatedOpType_REPLICATED_OP_TYPE_INDEX,
		Id: []byte("lost"), Source: []byte(`{"n":-1}`)}
	if _, err := nodev1.NewReplicationClient(conn).ReplicateOps(context.Background(), &nodev1.ReplicateOpsRequest{
		Shard: &nodev1.ShardID{IndexUuid: rc.uuid}, AllocationId: replicaAlloc, PrimaryTerm: term, GlobalCheckpoint: 10,
		Ops: []*nodev1.ReplicatedOp{lost}}); err != nil {
		t.Fatal(err)
	}

	rc.nodes[p].Stop()
	rc.start(t, p, "")
	rc.waitGreenWithin(t, 30*time.Second)
	if np, _, nt := rc.copies(t); np != p || nt != term+1 {
		t.Errorf("after the restart: primary on %s at term %d, want %s at %d", np, nt, p, term+1)
	}
	if st := rc.shard(t, r).Replica().State(); st.Term != term+1 {
		t.Errorf("replica after the reopened primary's resync: %+v, want term %d", st, term+1)
	}
	// A client that read d9 before the restart holds its seq_no and the
	// old term: the document is unchanged, so its conditional write lands
	// (Elasticsearch compares with the term that wrote the document),
	// under the next seqNo and the new term; the same condition again
	// is a conflict.
	write := []shard.Op{{Kind: shard.OpIndex, ID: []byte("d9"), Source: []byte(`{"n":99}`), If: &d9.Version}}
	res, err := rc.shard(t, p).Bulk(context.Background(), write, shard.RefreshNone)
	if err != nil || res[0].Err != nil || res[0].SeqNo != 11 || res[0].Term != term+1 {
		t.Fatalf("conditional write after the restart: %+v, %v; want seq_no 11 at term %d", res, err, term+1)
	}
	res, err = rc.shard(t, p).Bulk(context.Background(), write, shard.RefreshNone)
	if err != nil || !errors.Is(res[0].Err, engine.ErrVersionConflict) {
		t.Fatalf("the same condition again: %+v, %v; want a version conflict", res, err)
	}

	// Promote the replica as the allocator would once the primary's node
	// is gone.
	_, _, before := rc.copies(t)
	rc.nodes[p].Stop()
	ctx := context.Background()
	if _, err := rc.e.store.Update(ctx, func(st *state.Snapshot) (*state.Txn, error) {
		sh := st.ByUUID[rc.uuid].Shards[0]
		nr := state.Promote(sh.Routing, replicaAlloc, "promoted-away", time.Now())
		if nr == nil {
			t.Fatalf("cannot promote %s in %v", replicaAlloc, sh.Routing)
		}
		var tx state.Txn
		tx.Unchanged(rc.e.store.Keys.Shard(rc.uuid, 0), sh.ModRevision)
		tx.Put(rc.e.store.Keys.Shard(rc.uuid, 0), nr)
		return &tx, nil
	}); err != nil {
		t.Fatal(err)
	}
	s := rc.waitPrimary(t, r, before)
	if doc, found, err := s.Get(ctx, []byte("d9"), true); err != nil || !found || string(doc.Source) != `{"n":99}` {
		t.Errorf("d9 on the promoted replica: %q, found %v, %v; want the acknowledged write", doc.Source, found, err)
	}
	if _, found, err := s.Get(ctx, []byte("lost"), true); err != nil || found {
		t.Errorf("the lost operation's document on the promoted replica: found %v, %v", found, err)
	}
}

// allocation is the allocation id of node's copy.
func (rc *replicated) allocation(t *testing.T, node string) string {
	t.Helper()
	st, err := rc.e.store.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	c := state.CopyOnNode(st.ByUUID[rc.uuid].Shards[0].Routing, node)
	if c == nil {
		t.Fatalf("no copy on %s", node)
	}
	return c.GetAllocationId()
}
