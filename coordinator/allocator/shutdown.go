package allocator

import (
	"fmt"

	"github.com/sluice-search/sluice/cluster/state"
	statev1 "github.com/sluice-search/sluice/proto/sluice/state/v1"
)

// A data node that is stopping (SIGTERM) registers shutting_down
// (statev1.Node; node.Node.Shutdown) and waits, for a bounded time, until
// it holds no primary that another copy could take. The allocator hands
// each of its active primaries to an in-sync replica that is started on
// another available node that is not stopping too (Plan's step 2b,
// state.HandOff): one write, term + 1, so the old primary is fenced and
// acknowledges nothing more, and writes go to the new primary before the
// old one stops serving — the shard is never without a primary that takes
// writes, and health never counts it red. The old primary stays on its
// node as a replica out of the in-sync set, which the node reopens (a
// recovery from the new primary, reusing its files) once it is back, as
// its other replicas are: nothing is copied elsewhere, as Elasticsearch's
// node shutdown of type restart keeps a restarting node's replicas where
// they are (the node_left delay). A stopping node is given no new copy.
//
// A primary with no such replica (number_of_replicas 0, or its replicas
// still recovering) stays; the node waits for a recovering replica to
// join the in-sync set, and closes the copy at its timeout as before.

// shuttingDownReason is the reason of a primary handed off because its
// node is stopping.
func shuttingDownReason(node, to string) string {
	return fmt.Sprintf("node [%s] is shutting down; its primary role was handed to node [%s] (the copy is reopened as a replica when the node is back)", node, to)
}

// handOff applies Plan's step 2b to one shard's planned entry: an active
// primary on a node that is shutting down is handed to an in-sync replica
// that is active on a node that is not.
func (in Input) handOff(nr *statev1.ShardRouting) *statev1.ShardRouting {
	p := state.Primary(nr)
	if !in.active(p) || !in.State.ShuttingDown(p.NodeId) {
		return nr
	}
	for _, c := range nr.Copies {
		if c.Primary || isTarget(c) || !in.active(c) || in.State.ShuttingDown(c.NodeId) || !state.InSync(nr, c.AllocationId) {
			continue
		}
		if h := state.HandOff(nr, c.AllocationId, in.NewID(), shuttingDownReason(p.NodeId, c.NodeId)); h != nil {
			return h
		}
	}
	return nr
}
