// Package scaledown empties a data node that a Kubernetes StatefulSet
// scale-down removes, from the pod's preStop hook (`sluice node prestop`),
// and leaves a node that only restarts alone.
//
// A data node on SIGTERM hands its primaries to in-sync replicas and keeps
// its replicas for when it is back (node.Shutdown): right for a restart,
// where draining would copy every shard off the node and back. A pod that
// a scale-down deletes is not coming back, and without a drain its copies
// go offline with it: red for indices without replicas, yellow and a full
// re-replication for the others. The preStop hook runs before SIGTERM and
// tells the two apart from the StatefulSet itself, as ECK migrates data off
// Elasticsearch nodes before it removes them:
//
//   - Decide reads the StatefulSet's spec.replicas (and spec.ordinals.start)
//     through the Kubernetes API. A pod whose ordinal is outside
//     [start, start+replicas) is leaving; any other pod is restarting (a
//     rolling update, an eviction, a deleted pod), and the hook returns at
//     once. A StatefulSet that is gone or being deleted, or scaled to 0,
//     drains nothing: there is nowhere to move the copies to, and a whole
//     cluster stopped keeps its data on its volumes. Any error of the API
//     is treated as a restart, so the hook never stands in the way of a
//     shutdown.
//   - PreStop drains a leaving node (the cluster settings' drained_nodes,
//     metadata.Service.DrainNode, the same etcd write as `sluice node
//     drain`) and waits until the cluster state shows it holding no copy,
//     logging what is left and why each copy waits (its move note). It
//     gives up at its timeout — derived by the chart from the pod's
//     terminationGracePeriodSeconds, so SIGTERM's primary hand-off and the
//     commits still fit in the grace period — and it stops, ending the
//     drain, when the StatefulSet is scaled back up meanwhile.
//
// The drain mark is stored in etcd under the node's id, which a
// StatefulSet pod keeps: a pod of the same ordinal created by a later
// scale-up would come up drained and be given nothing. So the hook writes a
// marker file (MarkerFile) into the node's data directory before it drains,
// and ClearDrain, which `sluice node` calls once the node has stopped (and
// deregistered, so the allocator can place nothing on it) and again when a
// node starts, ends the drain and removes the marker when the marker is
// there. A drain made by hand (`sluice node drain`) has no marker and
// survives restarts, as Elasticsearch's allocation exclusions do. If the
// process is killed before it ends the drain and its volume is deleted
// before the pod comes back, the new node starts drained; `sluice node
// drain ID --undo` ends it (docs/operations.md).
package scaledown
