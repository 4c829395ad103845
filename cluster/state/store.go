package state

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"

	statev1 "github.com/sluice-search/sluice/proto/sluice/state/v1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// Store reads and writes one cluster's state in etcd.
type Store struct {
	Client *clientv3.Client
	Keys   Keys
}

// NewStore returns a store for the cluster under prefix ("" = DefaultPrefix).
func NewStore(c *clientv3.Client, prefix string) *Store {
	return &Store{Client: c, Keys: NewKeys(prefix)}
}

// Load reads the whole cluster state in one range read, so it is consistent
// at one revision.
func (s *Store) Load(ctx context.Context) (*Snapshot, error) {
	resp, err := s.Client.Get(ctx, s.Keys.Prefix, clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("cluster state: load: %w", err)
	}
	return decode(s.Keys, resp.Header.Revision, resp.Kvs)
}

// What etcd takes in one transaction, at its defaults (--max-txn-ops,
// --max-request-bytes 1.5 MiB, of which the keys, guards and framing take
// some). Commit refuses a transaction beyond them as ErrInvalid — a
// request too large to apply, not an etcd failure.
const (
	MaxTxnOps   = 128
	MaxTxnBytes = 1 << 20
)

// Txn collects the guards and writes of one etcd transaction.
type Txn struct {
	cmps  []clientv3.Cmp
	ops   []clientv3.Op
	bytes int // of the keys and values written
	err   error
}

// Unchanged guards that key still has the mod revision it was read with
// (0: the key was absent and must still be).
func (t *Txn) Unchanged(key string, modRevision int64) {
	t.cmps = append(t.cmps, clientv3.Compare(clientv3.ModRevision(key), "=", modRevision))
}

// NothingNewUnder guards that no key under prefix was created or changed
// after revision rev. (Deletions are not seen: guard keys whose presence
// matters with Unchanged.)
func (t *Txn) NothingNewUnder(prefix string, rev int64) {
	t.cmps = append(t.cmps, clientv3.Compare(clientv3.ModRevision(prefix), "<", rev+1).WithPrefix())
}

// If adds raw guards (for example the allocator's leadership).
func (t *Txn) If(cmps ...clientv3.Cmp) { t.cmps = append(t.cmps, cmps...) }

// Put writes a value; opts may attach a lease.
func (t *Txn) Put(key string, m proto.Message, opts ...clientv3.OpOption) {
	v, err := Marshal(m)
	if err != nil {
		t.err = errors.Join(t.err, err)
		return
	}
	t.ops = append(t.ops, clientv3.OpPut(key, v, opts...))
	t.bytes += len(key) + len(v)
}

// Delete deletes a key.
func (t *Txn) Delete(key string) { t.ops = append(t.ops, clientv3.OpDelete(key)) }

// DeletePrefix deletes every key under prefix.
func (t *Txn) DeletePrefix(prefix string) {
	t.ops = append(t.ops, clientv3.OpDelete(prefix, clientv3.WithPrefix()))
}

// Empty reports whether the transaction writes nothing.
func (t *Txn) Empty() bool { return len(t.ops) == 0 }

// Commit runs the transaction: all writes if every guard holds, else none
// and ErrConflict.
func (s *Store) Commit(ctx context.Context, t *Txn) error {
	if t.err != nil {
		return t.err
	}
	if t.Empty() {
		return nil
	}
	switch {
	case len(t.cmps) > MaxTxnOps || len(t.ops) > MaxTxnOps:
		return Invalidf("the change takes %d guards and %d writes, more than one cluster state transaction holds (%d each); make it in smaller parts",
			len(t.cmps), len(t.ops), MaxTxnOps)
	case t.bytes > MaxTxnBytes:
		return Invalidf("the change writes %d bytes of cluster state, more than one transaction holds (%d); a mapping this large needs fewer or shorter fields",
			t.bytes, MaxTxnBytes)
	}
	resp, err := s.Client.Txn(ctx).If(t.cmps...).Then(t.ops...).Commit()
	if err != nil {
		return fmt.Errorf("cluster state: commit: %w", err)
	}
	if !resp.Succeeded {
		return ErrConflict
	}
	return nil
}

// maxAttempts bounds Update's retries; contention on cluster metadata is
// low, so running out means something keeps changing the same keys.
const maxAttempts = 20

// Update reads the state, lets fn build a transaction from it, and commits;
// when the guards fail it reads again and retries. fn must be free of side
// effects: it may run several times. An fn error ends the update.
func (s *Store) Update(ctx context.Context, fn func(*Snapshot) (*Txn, error)) (*Snapshot, error) {
	for attempt := 0; ; attempt++ {
		st, err := s.Load(ctx)
		if err != nil {
			return nil, err
		}
		t, err := fn(st)
		if err != nil {
			return st, err
		}
		err = s.Commit(ctx, t)
		if !errors.Is(err, ErrConflict) {
			return st, err
		}
		if attempt == maxAttempts {
			return st, fmt.Errorf("cluster state: gave up after %d attempts: %w", attempt, err)
		}
		// Jittered backoff so contenders don't collide in lockstep.
		d := time.Duration(1+rand.IntN(5<<min(attempt, 5))) * time.Millisecond
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return st, ctx.Err()
		}
	}
}

// ShardReport is what a node reports about a shard copy it holds.
type ShardReport struct {
	State sluicev1.ShardState
	// Reason: why the copy is not started (FAILED: the error;
	// INITIALIZING: what the recovery is doing).
	Reason string
	// Recovery: while INITIALIZING, how far the node's recovery is.
	Recovery *sluicev1.ShardRecovery
	// LeaveInSync, with FAILED, takes a replica copy out of the in-sync
	// set in the same write: its data is damaged (a scrub found a bad
	// file), so it must never be promoted; its node recovers it afresh.
	// Ignored for a primary copy.
	LeaveInSync bool
}

// SetShardState records a node's report on a shard copy it holds: STARTED,
// INITIALIZING with its recovery's progress, or FAILED with a reason. It is
// a compare-and-swap on the shard's routing entry (guarded by its mod
// revision, retried on conflict), and it only writes if the entry still has
// a copy with that allocation id on that node — a report about a copy that
// has since been moved, demoted or deleted is dropped (ErrStale) — and only
// if it changes the copy. A copy the allocator marked NODE_LEFT takes no
// report either (ErrStale): the cluster holds its node for gone, and a node
// that still runs (cut off from the allocator, not from etcd) must not undo
// that; the allocator turns the copy INITIALIZING again once the node is
// back, and a restarting node does so itself (MarkRecovering).
//
// A replica copy is STARTED only while it is in the in-sync set (its
// primary adds it there when its recovery ends): a STARTED report for a
// replica outside it fails with ErrNotInSync. The first STARTED report of
// a primary whose shard has an empty in-sync set (a new shard) adds it.
// A FAILED report with LeaveInSync takes a replica out of the set.
func (s *Store) SetShardState(ctx context.Context, id ShardID, nodeID, allocationID string, rep ShardReport) error {
	return s.updateRouting(ctx, id, func(r *statev1.ShardRouting) (*statev1.ShardRouting, error) {
		c := CopyByAllocation(r, allocationID)
		if c == nil || c.GetNodeId() != nodeID {
			return nil, fmt.Errorf("shard %s: allocation %s on %s is no longer one of its copies: %w", id, allocationID, nodeID, ErrStale)
		}
		if c.GetState() == sluicev1.ShardState_SHARD_STATE_NODE_LEFT {
			return nil, fmt.Errorf("shard %s: allocation %s: node %s is held for gone (%s): %w", id, allocationID, nodeID, c.GetReason(), ErrStale)
		}
		started := rep.State == sluicev1.ShardState_SHARD_STATE_STARTED
		if started && !c.GetPrimary() && !InSync(r, allocationID) {
			return nil, fmt.Errorf("shard %s: replica %s on %s: %w", id, allocationID, nodeID, ErrNotInSync)
		}
		join := started && c.GetPrimary() && len(r.GetInSync()) == 0
		leave := rep.LeaveInSync && rep.State == sluicev1.ShardState_SHARD_STATE_FAILED && !c.GetPrimary() && InSync(r, allocationID)
		if !join && !leave && c.GetState() == rep.State && c.GetReason() == rep.Reason && proto.Equal(c.GetRecovery(), rep.Recovery) {
			return nil, nil
		}
		nr := cloneRouting(r)
		nc := CopyByAllocation(nr, allocationID)
		nc.State, nc.Reason, nc.Recovery, nc.LeftAt = rep.State, rep.Reason, rep.Recovery, nil
		switch {
		case join:
			nr.InSync = []string{allocationID}
		case leave:
			nr.InSync = withoutInSync(nr.InSync, allocationID)
		}
		return nr, nil
	})
}

// ActivatePrimary records that node nodeID opens its primary copy alloc
// of shard id, and returns the primary term to open it at. The copy
// becomes INITIALIZING with reason and, unless no copy of the shard ever
// started (an empty in-sync set: a new shard, nothing ever written), the
// term goes up by one, in the same guarded write — as Elasticsearch raises
// the term on every primary assignment. So a primary reopened where it
// was (a restart without failover, a retried open, a copy reopened in
// its role) never writes in the term of its earlier run: an operation
// that run sent a replica but lost from its own translog tail is of an
// older term, voided by the resync's trim, never mistaken for a new one
// with the same seqNo and term. ErrStale when the copy is no longer this
// node's primary allocation, or its node is held for gone (NODE_LEFT:
// a promotion may be under way; the allocator turns the copy
// INITIALIZING once the node is back). Nothing is written for a new
// shard's copy already INITIALIZING.
func (s *Store) ActivatePrimary(ctx context.Context, id ShardID, nodeID, alloc, reason string) (int64, error) {
	var term int64
	err := s.updateRouting(ctx, id, func(r *statev1.ShardRouting) (*statev1.ShardRouting, error) {
		c := CopyByAllocation(r, alloc)
		switch {
		case c == nil || c.GetNodeId() != nodeID || !c.GetPrimary():
			return nil, fmt.Errorf("shard %s: allocation %s on %s is not its primary: %w", id, alloc, nodeID, ErrStale)
		case c.GetState() == sluicev1.ShardState_SHARD_STATE_NODE_LEFT:
			return nil, fmt.Errorf("shard %s: allocation %s: node %s is held for gone (%s): %w", id, alloc, nodeID, c.GetReason(), ErrStale)
		}
		term = r.GetPrimaryTerm()
		fresh := len(r.GetInSync()) == 0
		if fresh && c.GetState() == sluicev1.ShardState_SHARD_STATE_INITIALIZING {
			return nil, nil
		}
		nr := cloneRouting(r)
		if !fresh {
			nr.PrimaryTerm++
			term = nr.PrimaryTerm
		}
		nc := CopyByAllocation(nr, alloc)
		nc.State, nc.Reason, nc.Recovery, nc.LeftAt = sluicev1.ShardState_SHARD_STATE_INITIALIZING, reason, nil, nil
		return nr, nil
	})
	if err != nil {
		return 0, err
	}
	return term, nil
}

// RemoveInSync is the primary's removal of a copy from the in-sync set
// (a replica that failed to apply an operation), before the primary
// acknowledges the operation: the copy leaves the set and is marked FAILED
// with reason, in one guarded write. The write happens only while the
// caller is the shard's primary — term is the routing entry's primary term
// and primaryAlloc its primary's allocation id — else ErrStaleTerm: a newer
// primary exists, and the caller must stop acknowledging. A copy that is no
// longer in the entry, or already out of the set, is no error: the set
// already lacks it.
func (s *Store) RemoveInSync(ctx context.Context, id ShardID, term int64, primaryAlloc, alloc, reason string) error {
	return s.updateRouting(ctx, id, func(r *statev1.ShardRouting) (*statev1.ShardRouting, error) {
		if err := primaryGuard(id, r, term, primaryAlloc); err != nil {
			return nil, err
		}
		c := CopyByAllocation(r, alloc)
		if alloc == primaryAlloc || c == nil {
			return nil, nil
		}
		failed := c.GetState() == sluicev1.ShardState_SHARD_STATE_INITIALIZING || Started(c)
		if !InSync(r, alloc) && !failed {
			return nil, nil
		}
		nr := cloneRouting(r)
		nr.InSync = withoutInSync(nr.InSync, alloc)
		if failed {
			nc := CopyByAllocation(nr, alloc)
			nc.State, nc.Reason, nc.Recovery = sluicev1.ShardState_SHARD_STATE_FAILED, "removed from the in-sync set by the primary: "+reason, nil
		}
		return nr, nil
	})
}

// AddInSync is the primary's addition of a copy that finished its recovery
// to the in-sync set, guarded as RemoveInSync is (ErrStaleTerm when the
// caller is no longer primary). The copy must be INITIALIZING or STARTED
// (else ErrStale: it was failed or moved meanwhile); its node reports it
// STARTED next.
func (s *Store) AddInSync(ctx context.Context, id ShardID, term int64, primaryAlloc, alloc string) error {
	return s.updateRouting(ctx, id, func(r *statev1.ShardRouting) (*statev1.ShardRouting, error) {
		if err := primaryGuard(id, r, term, primaryAlloc); err != nil {
			return nil, err
		}
		c := CopyByAllocation(r, alloc)
		if c == nil || c.GetState() != sluicev1.ShardState_SHARD_STATE_INITIALIZING && !Started(c) {
			return nil, fmt.Errorf("shard %s: allocation %s is not a recovering copy (%s): %w", id, alloc, c.GetState(), ErrStale)
		}
		if InSync(r, alloc) {
			return nil, nil
		}
		nr := cloneRouting(r)
		nr.InSync = append(nr.InSync, alloc)
		return nr, nil
	})
}

// primaryGuard fails with ErrStaleTerm unless primaryAlloc is r's primary
// at term.
func primaryGuard(id ShardID, r *statev1.ShardRouting, term int64, primaryAlloc string) error {
	p := Primary(r)
	if r.GetPrimaryTerm() != term || p == nil || p.GetAllocationId() != primaryAlloc {
		return fmt.Errorf("shard %s: allocation %s at term %d is not the primary (primary %s, term %d): %w",
			id, primaryAlloc, term, p.GetAllocationId(), r.GetPrimaryTerm(), ErrStaleTerm)
	}
	return nil
}

// updateRouting is a compare-and-swap on one shard's routing entry: fn
// returns the new entry (nil: nothing to write) from the current one; the
// write is guarded by the entry's mod revision and retried on conflict. A
// missing entry is ErrStale.
func (s *Store) updateRouting(ctx context.Context, id ShardID, fn func(*statev1.ShardRouting) (*statev1.ShardRouting, error)) error {
	key := s.Keys.Shard(id.Index, id.Shard)
	for attempt := 0; ; attempt++ {
		resp, err := s.Client.Get(ctx, key)
		if err != nil {
			return fmt.Errorf("cluster state: read %s: %w", key, err)
		}
		if len(resp.Kvs) == 0 {
			return fmt.Errorf("shard %s: %w", id, ErrStale)
		}
		r := &statev1.ShardRouting{}
		if err := Unmarshal(resp.Kvs[0].Value, r); err != nil {
			return err
		}
		upgradeRouting(r)
		nr, err := fn(r)
		if err != nil || nr == nil {
			return err
		}
		var t Txn
		t.Unchanged(key, resp.Kvs[0].ModRevision)
		t.Put(key, nr)
		err = s.Commit(ctx, &t)
		if !errors.Is(err, ErrConflict) || attempt == maxAttempts {
			return err
		}
	}
}

// MarkRecovering turns every shard copy on nodeID that is STARTED or
// NODE_LEFT into INITIALIZING with reason, and returns how many it changed.
// A node calls it when it starts, before it registers: the copies a
// previous run of it held count as started again only once this run has
// opened them. Entries are written in guarded transactions of at most
// batch entries; an entry changed meanwhile is read again.
func (s *Store) MarkRecovering(ctx context.Context, nodeID, reason string, batch int) (int, error) {
	marked := 0
	for attempt := 0; ; attempt++ {
		st, err := s.Load(ctx)
		if err != nil {
			return marked, err
		}
		var todo []routingChange
		for uuid, x := range st.ByUUID {
			for n, sh := range x.Shards {
				if sh == nil {
					continue
				}
				c := CopyOnNode(sh.Routing, nodeID)
				if c.GetState() != sluicev1.ShardState_SHARD_STATE_STARTED && c.GetState() != sluicev1.ShardState_SHARD_STATE_NODE_LEFT {
					continue
				}
				nr := cloneRouting(sh.Routing)
				nc := CopyOnNode(nr, nodeID)
				nc.State, nc.Reason, nc.Recovery, nc.LeftAt = sluicev1.ShardState_SHARD_STATE_INITIALIZING, reason, nil, nil
				todo = append(todo, routingChange{key: s.Keys.Shard(uuid, n), rev: sh.ModRevision, routing: nr})
			}
		}
		conflict := false
		for len(todo) > 0 {
			part := todo[:min(len(todo), batch)]
			todo = todo[len(part):]
			var t Txn
			for _, c := range part {
				t.Unchanged(c.key, c.rev)
				t.Put(c.key, c.routing)
			}
			switch err := s.Commit(ctx, &t); {
			case errors.Is(err, ErrConflict):
				conflict = true
			case err != nil:
				return marked, err
			default:
				marked += len(part)
			}
		}
		if !conflict {
			return marked, nil
		}
		if attempt == maxAttempts {
			return marked, fmt.Errorf("cluster state: mark shards of %s recovering: gave up after %d attempts: %w", nodeID, attempt, ErrConflict)
		}
	}
}

// routingChange is a routing entry to write, guarded by the mod revision
// it was read at.
type routingChange struct {
	key     string
	rev     int64
	routing *statev1.ShardRouting
}
