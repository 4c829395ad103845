package state

import (
	"slices"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	statev1 "github.com/sluice-search/sluice/proto/sluice/state/v1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// A shard's routing entry holds every copy of the shard, its primary term
// and its in-sync set (statev1.ShardRouting). The functions here read and
// change one entry; they never change their argument (changes return a
// clone), so entries of a shared Snapshot stay as read.

// Primary returns the shard's primary copy, or nil if it has none.
func Primary(r *statev1.ShardRouting) *statev1.ShardCopy {
	for _, c := range r.GetCopies() {
		if c.GetPrimary() {
			return c
		}
	}
	return nil
}

// CopyByAllocation returns the copy with allocation id alloc, or nil.
func CopyByAllocation(r *statev1.ShardRouting, alloc string) *statev1.ShardCopy {
	if alloc == "" {
		return nil
	}
	for _, c := range r.GetCopies() {
		if c.GetAllocationId() == alloc {
			return c
		}
	}
	return nil
}

// CopyOnNode returns the copy on node nodeID (a shard has at most one per
// node), or nil.
func CopyOnNode(r *statev1.ShardRouting, nodeID string) *statev1.ShardCopy {
	if nodeID == "" {
		return nil
	}
	for _, c := range r.GetCopies() {
		if c.GetNodeId() == nodeID {
			return c
		}
	}
	return nil
}

// InSync reports whether the copy with allocation id alloc is in the
// shard's in-sync set.
func InSync(r *statev1.ShardRouting, alloc string) bool {
	return alloc != "" && slices.Contains(r.GetInSync(), alloc)
}

// Started reports whether a copy is STARTED.
func Started(c *statev1.ShardCopy) bool {
	return c.GetState() == sluicev1.ShardState_SHARD_STATE_STARTED
}

// cloneRouting returns a deep copy of r to change.
func cloneRouting(r *statev1.ShardRouting) *statev1.ShardRouting {
	return proto.Clone(r).(*statev1.ShardRouting)
}

// withoutInSync returns ids without alloc.
func withoutInSync(ids []string, alloc string) []string {
	return slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return id == alloc })
}

// upgradeRouting turns a record written before shards had copies (one
// copy in the entry's own fields) into the current form: that copy as the
// primary, term 1, in sync if it ever started (it is the only copy there
// ever was). The legacy fields are cleared, so a rewrite drops them.
func upgradeRouting(r *statev1.ShardRouting) {
	if len(r.GetCopies()) > 0 || r.GetPrimaryTerm() != 0 {
		return
	}
	c := &statev1.ShardCopy{NodeId: r.GetLegacyNodeId(), AllocationId: r.GetLegacyAllocationId(), Primary: true,
		State: r.GetLegacyState(), Reason: r.GetLegacyReason(), Recovery: r.GetLegacyRecovery()}
	if c.State == sluicev1.ShardState_SHARD_STATE_UNSPECIFIED {
		c.State = sluicev1.ShardState_SHARD_STATE_UNASSIGNED
	}
	r.Copies, r.PrimaryTerm = []*statev1.ShardCopy{c}, 1
	if c.AllocationId != "" && c.State != sluicev1.ShardState_SHARD_STATE_UNASSIGNED {
		// An allocated copy of an old record is the shard's data: the
		// allocator may never place an empty primary instead of it.
		r.InSync = []string{c.AllocationId}
	}
	r.LegacyNodeId, r.LegacyPrimary, r.LegacyState, r.LegacyAllocationId, r.LegacyReason, r.LegacyRecovery = "", false, 0, "", "", nil
}

// NewShardRouting is the routing entry of a new shard: term 1, an empty
// in-sync set (the first primary joins it when it starts) and replicas+1
// unassigned copies, the primary first.
func NewShardRouting(shard, replicas int, reason string) *statev1.ShardRouting {
	r := &statev1.ShardRouting{Shard: int32(shard), PrimaryTerm: 1}
	for i := range replicas + 1 {
		r.Copies = append(r.Copies, &statev1.ShardCopy{Primary: i == 0, State: sluicev1.ShardState_SHARD_STATE_UNASSIGNED, Reason: reason})
	}
	return r
}

// Promote returns r with the copy alloc as its primary: the term goes up
// by one; the old primary (if any) becomes a replica that is out of the
// in-sync set, under a new allocation id newAlloc, so that no report of its
// node about the old allocation is taken for the new one — left where it
// was (NODE_LEFT since now, if it was not already) when its node left, or
// unassigned (to be placed afresh) when it failed. The promoted copy moves
// to the front. alloc must be an in-sync copy other than the primary;
// otherwise Promote returns nil.
func Promote(r *statev1.ShardRouting, alloc, newAlloc string, now time.Time) *statev1.ShardRouting {
	return promote(r, alloc, func(c *statev1.ShardCopy) { demote(c, newAlloc, now) })
}

// HandOff returns r with the primary role handed from a primary that is
// still running — its node is shutting down — to the in-sync copy alloc:
// the term goes up by one, so the old primary is fenced and acknowledges
// nothing more; the old primary becomes a replica on its node, out of the
// in-sync set, INITIALIZING under the new allocation id newAlloc (its
// node reopens it as a replica, which recovers from the new primary, once
// it is back). alloc must be an in-sync copy other than the primary;
// otherwise HandOff returns nil.
func HandOff(r *statev1.ShardRouting, alloc, newAlloc, reason string) *statev1.ShardRouting {
	return promote(r, alloc, func(c *statev1.ShardCopy) {
		*c = statev1.ShardCopy{NodeId: c.NodeId, AllocationId: newAlloc, State: sluicev1.ShardState_SHARD_STATE_INITIALIZING, Reason: reason}
	})
}

// promote makes the in-sync copy alloc the primary at term + 1, moves it
// to the front, takes the old primary out of the in-sync set and lets
// demote say what becomes of it.
func promote(r *statev1.ShardRouting, alloc string, demote func(*statev1.ShardCopy)) *statev1.ShardRouting {
	if !InSync(r, alloc) || CopyByAllocation(r, alloc) == nil || CopyByAllocation(r, alloc).GetPrimary() {
		return nil
	}
	nr := cloneRouting(r)
	nr.PrimaryTerm++
	var promoted *statev1.ShardCopy
	rest := make([]*statev1.ShardCopy, 0, len(nr.Copies))
	for _, c := range nr.Copies {
		switch {
		case c.AllocationId == alloc:
			c.Primary = true
			promoted = c
			continue
		case c.Primary:
			c.Primary = false
			nr.InSync = withoutInSync(nr.InSync, c.AllocationId)
			demote(c)
		}
		rest = append(rest, c)
	}
	nr.Copies = append([]*statev1.ShardCopy{promoted}, rest...)
	return nr
}

// demote turns a lost primary copy into a replica slot.
func demote(c *statev1.ShardCopy, newAlloc string, now time.Time) {
	c.Recovery = nil
	switch c.State {
	case sluicev1.ShardState_SHARD_STATE_NODE_LEFT:
		c.AllocationId = newAlloc
		if c.LeftAt == nil {
			c.LeftAt = timestamppb.New(now)
		}
		c.Reason += "; it was the primary, and an in-sync replica was promoted"
	case sluicev1.ShardState_SHARD_STATE_UNASSIGNED:
		c.AllocationId = ""
	default:
		// It failed on a live node: place a replica afresh.
		reason := c.Reason
		*c = statev1.ShardCopy{State: sluicev1.ShardState_SHARD_STATE_UNASSIGNED,
			Reason: "was the primary, failed (" + reason + "); another copy was promoted"}
	}
}

// CapabilityPeerRecovery is the capability (statev1.Node.capabilities) of
// a data node that can recover a new copy of a shard from its primary:
// only such a node is given a relocation's target.
const CapabilityPeerRecovery = "peer-recovery"

// Relocated returns r with the move to copy target completed: its source
// (target's relocating_from) is dropped and leaves the in-sync set, and
// target takes its place. A primary source hands its role over in the same
// write: target becomes primary and the term goes up by one, so the old
// primary, fenced by the term, can acknowledge nothing more. target must
// be a STARTED, in-sync relocation target whose source is in r; otherwise
// Relocated returns nil.
func Relocated(r *statev1.ShardRouting, target string) *statev1.ShardRouting {
	t := CopyByAllocation(r, target)
	if t == nil || !Started(t) || !InSync(r, target) || CopyByAllocation(r, t.GetRelocatingFrom()) == nil {
		return nil
	}
	nr := cloneRouting(r)
	t = CopyByAllocation(nr, target)
	src := CopyByAllocation(nr, t.RelocatingFrom)
	nr.InSync = withoutInSync(nr.InSync, src.AllocationId)
	t.RelocatingFrom, t.Reason = "", ""
	nr.Copies = slices.DeleteFunc(nr.Copies, func(c *statev1.ShardCopy) bool { return c == src })
	if src.Primary {
		t.Primary = true
		nr.PrimaryTerm++
		nr.Copies = append([]*statev1.ShardCopy{t}, slices.DeleteFunc(nr.Copies, func(c *statev1.ShardCopy) bool { return c == t })...)
	}
	return nr
}
