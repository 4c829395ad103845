package allocator

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sluice-search/sluice/cluster/placement"
	"github.com/sluice-search/sluice/cluster/rebalance"
	"github.com/sluice-search/sluice/cluster/state"
	statev1 "github.com/sluice-search/sluice/proto/sluice/state/v1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// Moves (relocation), as Elasticsearch relocates a shard: a move adds a
// target copy on the new node — INITIALIZING, relocating_from the source's
// allocation id, outside number_of_replicas — which recovers from the
// primary like a new replica (peer recovery: files, then operations) and
// is added to the in-sync set by the primary. Only once the target is
// STARTED and in sync is the source dropped, in one write (state.Relocated);
// a primary source hands its role to the target in that same write, with
// the term raised so the old primary is fenced. So a move never loses the
// source before the target holds every acknowledged operation: a target
// that fails, or whose node or source goes, is dropped and the source
// stays (the move is tried again later).
//
// A move that failed (the target failed to recover, or its node went) is
// not tried again to the same node at once: the source copy records the
// failure per target node (ShardCopy.move_retries) and that node is
// refused for the copy until a capped exponential backoff has passed
// (MoveRetryInitial, doubled per failure in a row, at most MoveRetryMax);
// another node may take the copy meanwhile. The source's move note says
// which node failed, why, and until when it is not tried again, so
// `sluice state` and health show it.
//
// Copies move off nodes that are drained (ClusterSettings.drained_nodes)
// or whose disk is past the high watermark, and — once every copy in the
// cluster is active and nothing must move — to rebalance: per index, from
// the node that weighs most to the one that weighs least (Elasticsearch's
// BalancedShardsAllocator: copies of the index, copies in all, and disk
// used, each against the cluster's average), when the difference is more
// than one copy's worth, never to a zone that holds more copies of the
// shard than the source's. Rebalancing moves primaries and replicas, as
// the cluster setting rebalance_enable allows (cluster/rebalance), but
// never a primary a task pins (Snapshot.PinnedBy: a local reindex's
// co-located source and destination primaries); a rebalancing move of a
// primary pinned while it was under way is cancelled. Drains and the high
// watermark move pinned primaries all the same (the reindex then copies
// documents for that slice, which is exact). At most NodeConcurrentMoves
// moves go into and out of each node, and at most max_concurrent_rebalance
// (default DefaultConcurrentRebalance) rebalancing moves are under way at
// once; one move per shard at a time.
//
// A target goes only to a node that registers the peer-recovery capability
// (state.CapabilityPeerRecovery; data nodes of this version do): a node
// that cannot recover a copy from its primary would fail it, so an older
// node is never given one, and the source copy says so in its move field.

// NodeConcurrentMoves bounds the moves into, and out of, one node
// (Elasticsearch's cluster.routing.allocation.node_concurrent_recoveries).
const NodeConcurrentMoves = 2

// DefaultConcurrentRebalance is the default bound of rebalancing moves
// under way in the cluster (cluster_concurrent_rebalance).
const DefaultConcurrentRebalance = 2

// MoveRetryInitial and MoveRetryMax bound the backoff of a copy's moves to
// a node after they failed: the first failure keeps the copy off the node
// for MoveRetryInitial, each further failure in a row doubles that, up to
// MoveRetryMax.
const (
	MoveRetryInitial = 10 * time.Second
	MoveRetryMax     = 5 * time.Minute
)

// Rebalancing weights (Elasticsearch's cluster.routing.allocation.balance.*
// shard 0.45, index 0.55, threshold 1.0; disk: a node with its disk full
// weighs two copies more than one with it empty).
const (
	weightShard     = 0.45
	weightIndex     = 0.55
	weightDisk      = 2.0
	weightThreshold = 1.0
	// rebalanceGain: how much closer a move must bring the two nodes'
	// weights, a tenth of a copy's weight, so that a difference in disk
	// use too small to matter does not tip a move that only swaps them.
	rebalanceGain = 0.1
)

// isTarget reports whether a copy is a relocation's target.
func isTarget(c *statev1.ShardCopy) bool { return c.GetRelocatingFrom() != "" }

// resolveMoves completes and cancels the moves of one shard (Plan's step
// 3b): a move of a primary that is pinned (Snapshot.PinnedBy) and that
// nothing forces (drain, disk) is cancelled, even when its target has
// recovered; a STARTED, in-sync target on an available node replaces its
// source; a target that failed, whose node is gone or whose source is no longer
// active is dropped, the source noting why; a target whose source went
// otherwise (a failover demoted it) is an ordinary copy.
func (in Input) resolveMoves(id state.ShardID, nr *statev1.ShardRouting) *statev1.ShardRouting {
	for _, alloc := range targets(nr) {
		t := state.CopyByAllocation(nr, alloc)
		src := state.CopyByAllocation(nr, t.RelocatingFrom)
		switch {
		case src == nil:
			t.RelocatingFrom, t.Reason = "", ""
		case src.Primary && in.active(src) && in.mustMove(src.NodeId) == "" && in.State.PinnedBy(id) != "":
			// A rebalancing move of a primary a task has pinned since
			// (a local reindex accepted while it was under way): the
			// primary stays, or the task's co-located shards would part.
			// Not counted as a failed move.
			nr = dropCopy(nr, alloc)
		case in.active(t) && state.InSync(nr, alloc):
			nr = state.Relocated(nr, alloc)
		case !in.available(t.NodeId) || (t.State != sluicev1.ShardState_SHARD_STATE_INITIALIZING && !state.Started(t)):
			in.moveFailed(src, t.NodeId, cmp.Or(t.Reason, t.State.String()))
			src.Move = in.retryNote(src)
			nr = dropCopy(nr, alloc)
		case !in.active(src):
			src.Move = fmt.Sprintf("the move to node [%s] was cancelled: the source copy is no longer active", t.NodeId)
			nr = dropCopy(nr, alloc)
		}
	}
	return nr
}

// moveFailed records on src that its move to node failed, for why: the
// node is not tried again for it until the backoff has passed.
func (in Input) moveFailed(src *statev1.ShardCopy, node, why string) {
	n := src.GetMoveRetries()[node].GetFailures() + 1
	if src.MoveRetries == nil {
		src.MoveRetries = map[string]*statev1.MoveRetry{}
	}
	src.MoveRetries[node] = &statev1.MoveRetry{Failures: n, RetryAt: timestamppb.New(in.Now.Add(moveBackoff(n))), Reason: why}
}

// moveBackoff is how long a copy stays off a node after failures moves
// to it failed in a row.
func moveBackoff(failures int32) time.Duration {
	d := MoveRetryInitial
	for i := int32(1); i < failures && d < MoveRetryMax; i++ {
		d *= 2
	}
	return min(d, MoveRetryMax)
}

// backedOff says why copy c may not move to node now, as placement words
// a refusal ("" if it may).
func (in Input) backedOff(c *statev1.ShardCopy, node string) string {
	r := c.GetMoveRetries()[node]
	if r == nil || !in.Now.Before(r.GetRetryAt().AsTime()) {
		return ""
	}
	failed := "failed a move of this copy"
	if n := r.GetFailures(); n > 1 {
		failed = fmt.Sprintf("failed %d moves of this copy in a row", n)
	}
	return fmt.Sprintf("%s (last: %s); not tried again before %s", failed, r.GetReason(), r.GetRetryAt().AsTime().UTC().Format(time.RFC3339))
}

// retryNote says which nodes copy c stays off while their backoff runs
// ("" for none), and forgets failures whose backoff has been over for
// longer than MoveRetryMax.
func (in Input) retryNote(c *statev1.ShardCopy) string {
	var notes []string
	for _, node := range slices.Sorted(maps.Keys(c.GetMoveRetries())) {
		if in.Now.After(c.MoveRetries[node].GetRetryAt().AsTime().Add(MoveRetryMax)) {
			delete(c.MoveRetries, node)
			continue
		}
		if why := in.backedOff(c, node); why != "" {
			notes = append(notes, fmt.Sprintf("node [%s] %s", node, why))
		}
	}
	if len(c.MoveRetries) == 0 {
		c.MoveRetries = nil
	}
	return strings.Join(notes, "; ")
}

// retryWake is the earliest backoff of a copy of r that runs out after
// now (zero for none): the allocator plans again then.
func (in Input) retryWake(r *statev1.ShardRouting) time.Time {
	var wake time.Time
	for _, c := range r.GetCopies() {
		for _, m := range c.GetMoveRetries() {
			if at := m.GetRetryAt().AsTime(); at.After(in.Now) && (wake.IsZero() || at.Before(wake)) {
				wake = at
			}
		}
	}
	return wake
}

// targets lists the allocation ids of a shard's relocation targets.
func targets(r *statev1.ShardRouting) []string {
	var out []string
	for _, c := range r.GetCopies() {
		if isTarget(c) {
			out = append(out, c.AllocationId)
		}
	}
	return out
}

// dropCopy removes the copy alloc from r (which Plan owns) and from the
// in-sync set.
func dropCopy(r *statev1.ShardRouting, alloc string) *statev1.ShardRouting {
	r.Copies = slices.DeleteFunc(r.Copies, func(c *statev1.ShardCopy) bool { return c.AllocationId == alloc })
	r.InSync = slices.DeleteFunc(r.InSync, func(id string) bool { return id == alloc })
	return r
}

// mustMove says why a copy on node must leave it ("" if it need not): the
// node is drained, or its disk is past the high watermark.
func (in Input) mustMove(node string) string {
	if in.State.Draining(node) {
		return fmt.Sprintf("node [%s] is being drained", node)
	}
	if lvl, why := in.diskLevel(node); lvl >= sluicev1.DiskWatermark_DISK_WATERMARK_HIGH {
		return why
	}
	return ""
}

// moveState is what planMoves counts while it plans.
type moveState struct {
	in, out  map[string]int // moves into and out of each node
	inFlight int
	copies   []placement.Copy
}

// planMoves adds the moves Plan wants to the planned entries (its step 7),
// and returns when a move's backoff runs out (zero for none).
func (in Input) planMoves(planned map[state.ShardID]*statev1.ShardRouting) time.Time {
	ids := make([]state.ShardID, 0, len(planned))
	for id := range planned {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b state.ShardID) int {
		return cmp.Or(cmp.Compare(a.Index, b.Index), cmp.Compare(a.Shard, b.Shard))
	})
	ms := &moveState{in: map[string]int{}, out: map[string]int{}}
	allActive := true
	for _, id := range ids {
		r := planned[id]
		for _, c := range r.Copies {
			if c.NodeId != "" {
				ms.copies = append(ms.copies, placement.Copy{Index: id.Index, Shard: id.Shard, Node: c.NodeId})
			}
			if isTarget(c) {
				ms.inFlight++
				ms.in[c.NodeId]++
				ms.out[state.CopyByAllocation(r, c.RelocatingFrom).GetNodeId()]++
			}
			allActive = allActive && in.active(c)
		}
	}
	forced := false
	for _, id := range ids {
		forced = in.planForcedMoves(id, planned[id], ms) || forced
	}
	if !forced && allActive {
		in.planRebalance(ids, planned, ms)
	}
	var wake time.Time
	for _, id := range ids {
		if w := in.retryWake(planned[id]); !w.IsZero() && (wake.IsZero() || w.Before(wake)) {
			wake = w
		}
	}
	return wake
}

// planForcedMoves moves the copies of one shard that must leave their
// node, one at a time, and reports whether the shard has one.
func (in Input) planForcedMoves(id state.ShardID, r *statev1.ShardRouting, ms *moveState) bool {
	moving := len(targets(r)) > 0
	forced := false
	for _, c := range r.Copies {
		if isTarget(c) || slices.ContainsFunc(r.Copies, func(t *statev1.ShardCopy) bool { return t.RelocatingFrom == c.AllocationId }) {
			continue // a move is under way for it
		}
		if !in.active(c) {
			continue // what happened to its last move stays said
		}
		why := in.mustMove(c.NodeId)
		retry := in.retryNote(c)
		if why == "" {
			c.Move = retry
			continue
		}
		forced = true
		switch {
		case moving:
			c.Move = why + "; waiting for the shard's move in progress to end"
		case !in.active(state.Primary(r)):
			c.Move = why + "; waiting for the shard's primary to start (a new copy recovers from it)"
		case ms.out[c.NodeId] >= NodeConcurrentMoves:
			c.Move = fmt.Sprintf("%s; waiting: %d moves out of node [%s] are under way", why, ms.out[c.NodeId], c.NodeId)
		default:
			nodes := in.moveNodes(ms)
			for i := range nodes {
				if nodes[i].Refuse == "" && nodes[i].RefuseReplicas == "" {
					nodes[i].Refuse = in.backedOff(c, nodes[i].ID)
				}
			}
			d := placement.Place(nodes, ms.copies, []placement.Shard{{Index: id.Index, Shard: id.Shard}})[0]
			if d.Node == "" {
				c.Move = why + "; cannot move: " + d.Reason
				continue
			}
			in.startMove(id, r, c, d.Node, why, ms)
			if retry != "" {
				c.Move += " (" + retry + ")"
			}
			moving = true
		}
	}
	return forced
}

// moveNodes are the nodes a move may go to, as placement sees them: the
// available nodes with their refusals (drained, disk), and a refusal for
// those that cannot recover a copy or have enough moves coming in.
func (in Input) moveNodes(ms *moveState) []placement.Node {
	ns := in.placementNodes()
	for i := range ns {
		n := &ns[i]
		switch {
		case n.Refuse != "" || n.RefuseReplicas != "":
		case !slices.Contains(in.State.Nodes[n.ID].Info.GetCapabilities(), state.CapabilityPeerRecovery):
			n.Refuse = "cannot recover a copy from its primary (its version has no peer recovery)"
		case ms.in[n.ID] >= NodeConcurrentMoves:
			n.Refuse = fmt.Sprintf("has %d moves coming in already", ms.in[n.ID])
		}
	}
	return ns
}

// startMove adds a target for copy src on node, and counts it.
func (in Input) startMove(id state.ShardID, r *statev1.ShardRouting, src *statev1.ShardCopy, node, why string, ms *moveState) {
	src.Move = fmt.Sprintf("%s; moving to node [%s]", why, node)
	r.Copies = append(r.Copies, &statev1.ShardCopy{NodeId: node, AllocationId: in.NewID(), State: sluicev1.ShardState_SHARD_STATE_INITIALIZING,
		RelocatingFrom: src.AllocationId, Reason: fmt.Sprintf("moving here from node [%s] (%s); recovering from the primary", src.NodeId, why)})
	ms.copies = append(ms.copies, placement.Copy{Index: id.Index, Shard: id.Shard, Node: node})
	ms.in[node]++
	ms.out[src.NodeId]++
	ms.inFlight++
}

// planRebalance plans at most one move per index while rebalancing moves
// are below their bound, of the copies rebalance_enable lets it move, never
// a pinned primary.
func (in Input) planRebalance(ids []state.ShardID, planned map[state.ShardID]*statev1.ShardRouting, ms *moveState) {
	enable := rebalance.FromSettings(in.State.Settings)
	if enable == rebalance.None {
		return
	}
	limit := int(in.State.Settings.GetMaxConcurrentRebalance())
	switch {
	case limit == 0:
		limit = DefaultConcurrentRebalance
	case limit < 0: // -1, as Elasticsearch's: no bound (UpdateClusterSettings refuses less)
		limit = math.MaxInt
	}
	nodes := in.moveNodes(ms)
	all := in.placementNodes()
	if len(all) < 2 {
		return
	}
	total, perIndex, zoneOf := map[string]float64{}, map[string]map[string]float64{}, map[string]string{}
	used := map[string]float64{}
	for _, n := range all {
		zoneOf[n.ID] = n.Zone
		if n.DiskTotal > 0 {
			used[n.ID] = float64(n.DiskTotal-n.DiskFree) / float64(n.DiskTotal)
		}
	}
	for _, c := range ms.copies {
		if _, ok := zoneOf[c.Node]; !ok {
			continue
		}
		total[c.Node]++
		if perIndex[c.Index] == nil {
			perIndex[c.Index] = map[string]float64{}
		}
		perIndex[c.Index][c.Node]++
	}
	avg := func(m map[string]float64) float64 {
		s := 0.0
		for _, n := range all {
			s += m[n.ID]
		}
		return s / float64(len(all))
	}
	avgTotal, avgUsed := avg(total), avg(used)
	indices := map[string]bool{}
	for _, id := range ids {
		indices[id.Index] = true
	}
	for _, index := range slices.Sorted(maps.Keys(indices)) {
		if ms.inFlight >= limit {
			return
		}
		avgIndex := avg(perIndex[index])
		weight := func(node string) float64 {
			return weightShard*(total[node]-avgTotal) + weightIndex*(perIndex[index][node]-avgIndex) + weightDisk*(used[node]-avgUsed)
		}
		// A copy rebalancing may move: one rebalance_enable allows,
		// active, of a shard whose primary is active and that has no
		// move under way. A primary moves by relocation with a hand-off
		// (term + 1), as a drain moves it; the segments a local reindex
		// adds outside the translog go with it (an add returns once every
		// in-sync copy installed them; a recovering target installs the
		// newest checkpoint before it joins). But a local reindex's
		// segment copy needs its source and destination primaries to stay
		// together on one node: its task pins them (pins/<task-id>) and
		// they are not rebalanced while it runs.
		movable := func(id state.ShardID, r *statev1.ShardRouting, c *statev1.ShardCopy) bool {
			return c != nil && enable.Allows(c.GetPrimary()) && !(c.GetPrimary() && in.State.PinnedBy(id) != "") &&
				in.active(c) && in.active(state.Primary(r)) && len(targets(r)) == 0
		}
		holds := map[string]bool{} // nodes holding a movable copy of the index
		for _, id := range ids {
			if id.Index != index {
				continue
			}
			for _, c := range planned[id].Copies {
				if movable(id, planned[id], c) {
					holds[c.NodeId] = true
				}
			}
		}
		// The lightest node that may take a copy, and the heaviest
		// holding one that may move; ties by id.
		var light, heavy string
		for _, n := range nodes {
			if n.Refuse == "" && n.RefuseReplicas == "" && (light == "" || weight(n.ID) < weight(light)) {
				light = n.ID
			}
		}
		for _, n := range all {
			if holds[n.ID] && (heavy == "" || weight(n.ID) > weight(heavy)) {
				heavy = n.ID
			}
		}
		// A move takes one copy's weight (weightShard + weightIndex)
		// off the heavy node and puts it on the light one. It must
		// leave them closer by more than rebalanceGain: at a difference
		// of about one copy it would only swap which node is the heavier
		// (2, 1, 1 copies on three nodes), and the next round would move
		// it back, for ever.
		diff := weight(heavy) - weight(light)
		if light == "" || heavy == "" || diff <= weightThreshold || diff-math.Abs(diff-2*(weightShard+weightIndex)) <= rebalanceGain {
			continue
		}
		for _, id := range ids {
			r := planned[id]
			if id.Index != index || state.CopyOnNode(r, light) != nil || ms.out[heavy] >= NodeConcurrentMoves {
				continue
			}
			c := state.CopyOnNode(r, heavy)
			if !movable(id, r, c) || in.backedOff(c, light) != "" {
				continue
			}
			zones := map[string]int{}
			for _, o := range r.Copies {
				zones[zoneOf[o.NodeId]]++
			}
			if zoneOf[light] != zoneOf[heavy] && zones[zoneOf[light]] >= zones[zoneOf[heavy]] {
				continue // the shard's copies would crowd a zone
			}
			why := fmt.Sprintf("rebalancing index [%s]: node [%s] weighs %.2f, node [%s] %.2f", in.State.ByUUID[index].Name(), heavy, weight(heavy), light, weight(light))
			in.startMove(id, r, c, light, why, ms)
			// Weigh the nodes as if the move were done: the next index's
			// move must not pick the same heavy and light nodes from
			// counts this one changed, or two indices move the same way in
			// one round and back in the next, for ever (single-copy
			// primaries swung between two nodes at every round).
			total[heavy]--
			total[light]++
			perIndex[index][heavy]--
			perIndex[index][light]++
			break
		}
	}
}
