// Package state is the cluster state in etcd, shared by coordinators and
// data nodes: the key layout (Keys), the value encoding (codec.go), a
// consistent in-memory view at one revision (Snapshot, read with one range
// Get of the prefix), guarded transactions (Txn, Store.Commit,
// Store.Update), and a watch-fed cache of the latest Snapshot (Cache).
//
// Layout under the prefix (default /sluice/):
//
//	nodes/<id>                 NodeInfo, attached to the node's lease
//	indices/<name>             IndexInfo (metadata only)
//	routing/<index-uuid>/<n>   ShardRouting of shard n
//	aliases/<alias>            AliasInfo
//	tasks/<id>                 reindex tasks
//	cluster/name               the cluster's name, set by its first coordinator
//	election/allocator/...     the allocator election (concurrency.Election)
//
// Every multi-key change is one etcd transaction whose guards compare the
// mod revisions of the keys it read (0 = must be absent) — compare-and-swap
// over several keys. Update retries a transaction whose guards failed on a
// fresh read. Shard state reports from nodes (SetShardState) are guarded by
// the routing entry's node and allocation id, so a stale report is dropped;
// a starting node's MarkRecovering by the entries' mod revisions.
package state
