package node

import (
	"context"
	"fmt"

	"github.com/sluice-search/sluice/cluster/state"
	statev1 "github.com/sluice-search/sluice/proto/sluice/state/v1"
)

// storedCopy is the data of a shard copy on this node's disk, as the
// reconciler tracks it between passes.
type storedCopy struct {
	// seen: this run of the node has seen the shard's index in the
	// cluster state (or opened the copy). Only then does the index's
	// absence mean it was deleted: data found at start of an index the
	// cluster does not know is kept (Elasticsearch's dangling indices), so
	// a node started against an empty or wrong etcd deletes nothing.
	seen bool
	// kept is why the data was last kept, as logged (once per reason,
	// not on every pass).
	kept string
}

// deleteUnneeded deletes the data of the shard copies on this node that
// are neither wanted here, open nor opening, once nothing needs them, as
// Elasticsearch's IndicesStore does: their index was deleted, or the
// shard is fully active elsewhere — as many copies as the index asks for,
// every one STARTED and in sync on another live node. Until then the data
// stays: a copy that comes back here (a node back from maintenance, a
// move undone) recovers by reusing the files it still has. Copies that
// left while the node was down are found by listing the data dir on the
// first pass.
func (r *reconciler) deleteUnneeded(ctx context.Context, st *state.Snapshot, desired map[state.ShardID]want) {
	if !r.scanned {
		ids, err := r.host.stored()
		if err != nil {
			r.log.Warn("list shard data", "err", err) // tried again next pass
		} else {
			r.scanned = true
			for _, id := range ids {
				if r.stored[id] == nil {
					r.stored[id] = &storedCopy{}
				}
			}
		}
	}
	for id, c := range r.stored {
		_, wanted := desired[id]
		_, isOpen := r.open[id]
		_, busy := r.opening[id]
		if wanted || isOpen || busy {
			continue
		}
		x := st.ByUUID[id.Index]
		if x != nil {
			c.seen = true
		}
		why, ok := unneeded(st, x, id, r.nodeID)
		if x == nil && !c.seen {
			why, ok = "its index is not in the cluster state (deleted while this node was down, or the node joined another cluster): delete it by hand once sure", false
		}
		if !ok {
			if why != c.kept {
				c.kept = why
				r.log.Info("shard data kept", "shard", id, "why", why)
			}
			continue
		}
		if err := r.host.deleteShard(ctx, id); err != nil {
			r.log.Warn("delete shard data", "shard", id, "err", err)
			continue
		}
		delete(r.stored, id)
		delete(r.failed, id) // its corruption marker, if any, went with it
		r.log.Info("deleted shard data", "shard", id, "why", why)
	}
}

// unneeded says whether the data of shard id, not wanted on node nodeID,
// can go (ok), and why it can or is kept. x is the shard's index, nil if
// not in the cluster state.
func unneeded(st *state.Snapshot, x *state.Index, id state.ShardID, nodeID string) (why string, ok bool) {
	if x == nil {
		return "its index was deleted", true
	}
	if id.Shard >= len(x.Shards) || x.Shards[id.Shard] == nil {
		return fmt.Sprintf("the index has no shard %d", id.Shard), false
	}
	if k := notActiveElsewhere(st, x, x.Shards[id.Shard].Routing, nodeID); k != "" {
		return "the shard is not fully active on other nodes: " + k, false
	}
	return "the shard is fully active on other nodes", true
}

// notActiveElsewhere says why shard routing rt is not fully active on
// nodes other than nodeID, or "" if it is: number_of_replicas + 1 copies
// or more, each STARTED, in sync and on a live node other than nodeID.
func notActiveElsewhere(st *state.Snapshot, x *state.Index, rt *statev1.ShardRouting, nodeID string) string {
	copies := rt.GetCopies()
	if want := 1 + int(x.Meta.GetSettings().GetNumberOfReplicas()); len(copies) < want {
		return fmt.Sprintf("%d copies of %d placed", len(copies), want)
	}
	for _, c := range copies {
		switch n := c.GetNodeId(); {
		case n == "":
			return "a copy is unassigned"
		case n == nodeID:
			return fmt.Sprintf("a copy is assigned to this node (%s)", c.GetState())
		case !state.Started(c):
			return fmt.Sprintf("the copy on node [%s] is %s", n, c.GetState())
		case !state.InSync(rt, c.GetAllocationId()):
			return fmt.Sprintf("the copy on node [%s] is not in sync", n)
		case !st.Live(n):
			return fmt.Sprintf("node [%s] is not registered", n)
		}
	}
	return ""
}
