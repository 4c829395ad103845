package allocator

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sluice-search/sluice/cluster/placement"
	"github.com/sluice-search/sluice/cluster/state"
	nodev1 "github.com/sluice-search/sluice/proto/sluice/node/v1"
	statev1 "github.com/sluice-search/sluice/proto/sluice/state/v1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// DefaultNodeLeftDelay is how long a replica whose node left waits for the
// node before it is placed elsewhere, unless the index says otherwise
// (Elasticsearch's index.unassigned.node_left.delayed_timeout).
const DefaultNodeLeftDelay = time.Minute

// Input is what Plan decides from: a pure function of it, so the
// allocator's rules are tested with tables, without etcd or nodes.
type Input struct {
	State *state.Snapshot
	Keys  state.Keys
	Now   time.Time
	// Unreachable holds the registered nodes that failed their follower
	// checks, with why: they count as gone, as a node whose lease expired.
	Unreachable map[string]string
	// CopyState answers for a promotion candidate how far its copy is
	// (Replication.GetCopyState); false when it did not answer. Nil: no
	// candidate answered.
	CopyState func(id state.ShardID, c *statev1.ShardCopy) (*nodev1.GetCopyStateResponse, bool)
	// NewID makes allocation ids.
	NewID func() string
}

// Change is one routing entry the allocator writes, guarded by the mod
// revision it was computed from.
type Change struct {
	ID          state.ShardID
	Key         string
	ModRevision int64
	Routing     *statev1.ShardRouting
}

// Plan computes the routing changes the allocator wants for in.State, and
// when it wants to plan again at the latest (a replica's delay running
// out; zero for no such time). Per shard, in this order:
//
//  1. Copies on nodes that are gone (lease expired, or follower checks
//     failed) become NODE_LEFT; NODE_LEFT copies on nodes that are back
//     become INITIALIZING (their node reopens them).
//  2. A primary that is NODE_LEFT or FAILED is replaced by the in-sync
//     replica on an available node that is furthest ahead (CopyState:
//     highest local checkpoint, then checkpoint; else a started copy
//     first, then routing order) — one write: term + 1, the old primary a
//     replica out of the in-sync set (state.Promote). Without an in-sync
//     candidate the shard waits, red: a primary is never placed empty
//     while a copy that holds the shard's data may come back — unless no
//     copy ever started (an empty in-sync set), when a lost primary is
//     simply placed again, at a new term.
//     2b. An active primary on a node that is shutting down hands its
//     role to an in-sync replica active on another node (shutdown.go):
//     term + 1, the old primary a recovering replica on its node.
//  3. A replica NODE_LEFT for longer than the index's
//     node_left_delayed_timeout is given up on: unassigned, to be placed
//     elsewhere.
//     Then moves end (moves.go): a relocation target that is started
//     and in sync replaces its source (a primary source hands over its
//     role, term + 1); one that failed or lost its node or source is
//     dropped, and so is a rebalancing move of a primary a task has
//     pinned since it started.
//  4. The copy count follows number_of_replicas (relocation targets
//     aside, and neither they nor a copy being moved are surplus): unassigned replicas are
//     added; surplus replicas removed, the least useful first
//     (unassigned, gone, failed, recovering, started).
//  5. While the primary is started on an available node, the in-sync set
//     drops every id that is not a recovering or started copy (ids of
//     gone, failed and removed copies; Elasticsearch does the same): a
//     copy that comes back recovers and is added again by the primary.
//     While the primary is not active the set is kept: its ids are the
//     candidates of the next promotion.
//  6. Unassigned copies are placed (cluster/placement: never two copies
//     of a shard on one node, none on a node past the high disk watermark
//     nor a replica past the low one (disk.go), spread over zones and
//     nodes) as
//     INITIALIZING with a new allocation id — a primary only if the
//     in-sync set is empty (a new shard), a replica only while its
//     primary is started (it recovers from it).
//  7. Copies on drained nodes or past the high disk watermark are moved,
//     and once every copy is active the cluster is rebalanced (the
//     copies rebalance_enable allows, never a pinned primary), a bounded
//     number of moves at a time, never to a node a move of the copy
//     failed to while its backoff runs (moves.go).
func Plan(in Input) ([]Change, time.Time) {
	st := in.State
	var ups []Change
	var next time.Time
	var pending []placement.Shard
	waiting := map[state.ShardID][]*statev1.ShardCopy{} // the copies of pending, in order
	planned := map[state.ShardID]*statev1.ShardRouting{}
	revs := map[state.ShardID]int64{}
	for uuid, x := range st.ByUUID {
		for n, sh := range x.Shards {
			if sh == nil {
				continue // being created in several transactions
			}
			id := state.ShardID{Index: uuid, Shard: n}
			nr, wake := in.planShard(id, x, sh.Routing)
			if !wake.IsZero() && (next.IsZero() || wake.Before(next)) {
				next = wake
			}
			planned[id], revs[id] = nr, sh.ModRevision
			primaryActive := in.active(state.Primary(nr))
			for _, c := range nr.Copies {
				if c.NodeId != "" || c.State != sluicev1.ShardState_SHARD_STATE_UNASSIGNED {
					continue
				}
				switch {
				case c.Primary && len(nr.InSync) > 0:
					c.Reason = fmt.Sprintf("no in-sync copy of the shard is on a live node; waiting for one of %v to return (the shard's data is on its disk)", nr.InSync)
				case !c.Primary && !primaryActive:
					c.Reason = "waiting for the primary to start (a replica recovers from it)"
				default:
					pending = append(pending, placement.Shard{Index: uuid, Shard: n, NewPrimary: c.Primary})
					waiting[id] = append(waiting[id], c)
				}
			}
		}
	}
	// One placement decision per pending copy, in order: a shard with two
	// pending copies gets two decisions, and the second sees the first.
	for _, d := range placement.Place(in.placementNodes(), st.PlacementCopies(), pending) {
		id := state.ShardID{Index: d.Shard.Index, Shard: d.Shard.Shard}
		c := waiting[id][0]
		waiting[id] = waiting[id][1:]
		if d.Node == "" {
			c.Reason = d.Reason
			continue
		}
		c.NodeId, c.State, c.AllocationId, c.Reason = d.Node, sluicev1.ShardState_SHARD_STATE_INITIALIZING, in.NewID(), ""
	}
	if wake := in.planMoves(planned); !wake.IsZero() && (next.IsZero() || wake.Before(next)) {
		next = wake
	}
	for id, nr := range planned {
		if !proto.Equal(nr, st.ByUUID[id.Index].Shards[id.Shard].Routing) {
			ups = append(ups, Change{id, in.Keys.Shard(id.Index, id.Shard), revs[id], nr})
		}
	}
	slices.SortFunc(ups, func(a, b Change) int { return cmp.Compare(a.Key, b.Key) })
	return ups, next
}

// available reports whether a node may hold copies: registered, and
// passing its follower checks.
func (in Input) available(node string) bool {
	_, bad := in.Unreachable[node]
	return node != "" && in.State.Live(node) && !bad
}

// placementNodes are the available nodes as placement sees them, with
// what each refuses (disk.go).
func (in Input) placementNodes() []placement.Node {
	ns := slices.DeleteFunc(in.State.PlacementNodes(), func(n placement.Node) bool { return !in.available(n.ID) })
	for i := range ns {
		ns[i].Refuse, ns[i].RefuseReplicas = in.refusals(ns[i].ID)
	}
	return ns
}

// goneReason says why a node counts as gone.
func (in Input) goneReason(node string) string {
	if why, ok := in.Unreachable[node]; ok && in.State.Live(node) {
		return fmt.Sprintf("node [%s] is not reachable: %s", node, why)
	}
	return fmt.Sprintf("node [%s] left the cluster (its lease expired)", node)
}

// active reports whether a copy is started on an available node.
func (in Input) active(c *statev1.ShardCopy) bool {
	return state.Started(c) && in.available(c.GetNodeId())
}

// planShard applies steps 1 to 5 of Plan to one shard and returns the
// entry it wants (a clone), and when its next delay runs out.
func (in Input) planShard(id state.ShardID, x *state.Index, r *statev1.ShardRouting) (*statev1.ShardRouting, time.Time) {
	nr := proto.Clone(r).(*statev1.ShardRouting)
	var wake time.Time
	// 1. Gone and returned nodes.
	for _, c := range nr.Copies {
		switch {
		case c.NodeId == "":
		case !in.available(c.NodeId) && c.State != sluicev1.ShardState_SHARD_STATE_NODE_LEFT:
			c.State, c.Reason, c.Recovery, c.LeftAt = sluicev1.ShardState_SHARD_STATE_NODE_LEFT, in.goneReason(c.NodeId), nil, timestamppb.New(in.Now)
		case in.available(c.NodeId) && c.State == sluicev1.ShardState_SHARD_STATE_NODE_LEFT:
			c.State, c.Reason, c.LeftAt = sluicev1.ShardState_SHARD_STATE_INITIALIZING, fmt.Sprintf("node [%s] is back; reopening the copy", c.NodeId), nil
		}
	}
	// 2. A lost primary.
	if p := state.Primary(nr); p != nil && (p.State == sluicev1.ShardState_SHARD_STATE_NODE_LEFT || p.State == sluicev1.ShardState_SHARD_STATE_FAILED) {
		if best := in.promotionCandidate(id, nr); best != nil {
			nr = state.Promote(nr, best.AllocationId, in.NewID(), in.Now)
		} else if len(nr.InSync) == 0 && p.State == sluicev1.ShardState_SHARD_STATE_NODE_LEFT {
			// A new shard's primary that never started: nothing to wait
			// for. A new term fences the lost allocation.
			*p = statev1.ShardCopy{Primary: true, State: sluicev1.ShardState_SHARD_STATE_UNASSIGNED,
				Reason: fmt.Sprintf("%s before the new primary started; placing it again", p.Reason)}
			nr.PrimaryTerm++
		} else if p.State == sluicev1.ShardState_SHARD_STATE_NODE_LEFT {
			p.Reason = in.goneReason(p.NodeId) + "; no in-sync replica on a live node to promote: waiting for the node (the shard's data is on its disk)"
		}
	}
	// 2b. A primary whose node is shutting down (shutdown.go).
	nr = in.handOff(nr)
	primaryActive := in.active(state.Primary(nr))
	// 3. Replicas given up on.
	delay := DefaultNodeLeftDelay
	if d := x.Meta.GetSettings().GetNodeLeftDelayedTimeout(); d != nil {
		delay = d.AsDuration()
	}
	for _, c := range nr.Copies {
		if c.Primary || c.State != sluicev1.ShardState_SHARD_STATE_NODE_LEFT {
			continue
		}
		due := c.GetLeftAt().AsTime().Add(delay)
		if in.Now.Before(due) {
			if wake.IsZero() || due.Before(wake) {
				wake = due
			}
			continue
		}
		*c = statev1.ShardCopy{State: sluicev1.ShardState_SHARD_STATE_UNASSIGNED,
			Reason: fmt.Sprintf("%s and did not return within %v; placing the copy on another node", c.Reason, delay)}
	}
	// 3b. Moves that ended or failed (moves.go).
	nr = in.resolveMoves(id, nr)
	// 4. The copy count, relocation targets aside.
	want := 1 + int(x.Meta.GetSettings().GetNumberOfReplicas()) + len(targets(nr))
	for len(nr.Copies) < want {
		nr.Copies = append(nr.Copies, &statev1.ShardCopy{State: sluicev1.ShardState_SHARD_STATE_UNASSIGNED,
			Reason: fmt.Sprintf("replica added (number_of_replicas %d)", want-1-len(targets(nr)))})
	}
	for len(nr.Copies) > want {
		i := surplus(nr, primaryActive)
		if i < 0 {
			break
		}
		nr.Copies = slices.Delete(nr.Copies, i, i+1)
	}
	// 5. The in-sync set, while the primary is active.
	if primaryActive {
		nr.InSync = slices.DeleteFunc(nr.InSync, func(alloc string) bool {
			c := state.CopyByAllocation(nr, alloc)
			return c == nil || !state.Started(c) && c.State != sluicev1.ShardState_SHARD_STATE_INITIALIZING
		})
	}
	if len(nr.InSync) == 0 {
		nr.InSync = nil
	}
	return nr, wake
}

// surplus picks the replica to remove when a shard has more copies than
// it should: the least useful (unassigned, gone, failed, recovering,
// started), the last of equals. Only unassigned ones go while the primary
// is not active (another copy may have to be promoted). -1: none.
func surplus(r *statev1.ShardRouting, primaryActive bool) int {
	rank := map[sluicev1.ShardState]int{
		sluicev1.ShardState_SHARD_STATE_UNASSIGNED:   0,
		sluicev1.ShardState_SHARD_STATE_NODE_LEFT:    1,
		sluicev1.ShardState_SHARD_STATE_FAILED:       2,
		sluicev1.ShardState_SHARD_STATE_INITIALIZING: 3,
		sluicev1.ShardState_SHARD_STATE_STARTED:      4,
	}
	best, bestRank := -1, 99
	for i, c := range r.Copies {
		k, ok := rank[c.State]
		moving := slices.ContainsFunc(r.Copies, func(t *statev1.ShardCopy) bool { return t.RelocatingFrom == c.AllocationId && c.AllocationId != "" })
		if c.Primary || isTarget(c) || moving || !ok || k > 0 && !primaryActive {
			continue
		}
		if k <= bestRank {
			best, bestRank = i, k
		}
	}
	return best
}

// promotionCandidate picks the copy to promote in place of a lost primary:
// an in-sync replica, started or recovering (its node restarted), on an
// available node — the one furthest ahead by CopyState, else a started one
// first, in routing order. Nil if there is none.
func (in Input) promotionCandidate(id state.ShardID, r *statev1.ShardRouting) *statev1.ShardCopy {
	type cand struct {
		c     *statev1.ShardCopy
		state *nodev1.GetCopyStateResponse
	}
	var cands []cand
	for _, c := range r.Copies {
		if c.Primary || !state.InSync(r, c.AllocationId) || !in.available(c.NodeId) ||
			!state.Started(c) && c.State != sluicev1.ShardState_SHARD_STATE_INITIALIZING {
			continue
		}
		var cs *nodev1.GetCopyStateResponse
		if in.CopyState != nil {
			cs, _ = in.CopyState(id, c)
		}
		cands = append(cands, cand{c, cs})
	}
	if len(cands) == 0 {
		return nil
	}
	best := slices.MinFunc(cands, func(a, b cand) int {
		// Answered before unanswered; further ahead first; started first.
		return cmp.Or(
			cmp.Compare(boolRank(a.state != nil), boolRank(b.state != nil)),
			-cmp.Compare(a.state.GetLocalCheckpoint(), b.state.GetLocalCheckpoint()),
			-cmp.Compare(a.state.GetCheckpointSeqNo(), b.state.GetCheckpointSeqNo()),
			cmp.Compare(boolRank(state.Started(a.c)), boolRank(state.Started(b.c))),
		)
	})
	return best.c
}

// boolRank orders true before false.
func boolRank(b bool) int {
	if b {
		return 0
	}
	return 1
}
