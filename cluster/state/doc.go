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
//	routing/<index-uuid>/<n>   ShardRouting of shard n: its copies, primary term, in-sync set
//	aliases/<alias>            AliasInfo
//	tasks/<id>                 reindex tasks
//	cluster/name               the cluster's name, set by its first coordinator
//	cluster/settings           ClusterSettings: disk watermarks (cluster/watermark)
//	election/allocator/...     the allocator election (concurrency.Election)
//
// Every multi-key change is one etcd transaction whose guards compare the
// mod revisions of the keys it read (0 = must be absent) — compare-and-swap
// over several keys. Update retries a transaction whose guards failed on a
// fresh read.
//
// # Shard copies
//
// A shard's routing entry holds all of it (copies.go; docs/replication.md):
// every copy (node, allocation id, primary flag, state, reason, recovery
// progress), the primary term and the in-sync set, so that each change of
// a shard is one guarded write of one key (compare-and-swap on its mod
// revision, retried on conflict):
//
//   - a node's report on a copy it holds (SetShardState) lands only on a
//     copy it still holds under that allocation id, never on a copy the
//     allocator holds for gone (NODE_LEFT); a replica is STARTED only in
//     sync; a new shard's primary joins the in-sync set when it starts;
//   - the primary's removal of a failed replica from the in-sync set and
//     its addition of a recovered one (RemoveInSync, AddInSync) are guarded
//     by its term and allocation id: a deposed primary gets ErrStaleTerm;
//   - a promotion (Promote, written by the allocator) makes an in-sync
//     replica primary, raises the term and takes the old primary out of
//     the in-sync set, at once;
//   - a starting node's MarkRecovering turns its copies INITIALIZING;
//   - a node opening a primary copy records it first (ActivatePrimary):
//     INITIALIZING and, unless the shard is new, the term raised, so a
//     primary reopened where it was never writes in its old term;
//   - a move's end (Relocated, written by the allocator) drops the source
//     copy once its target (relocating_from) is started and in sync, a
//     primary source handing its role over with the term raised.
//
// Health (Snapshot.IndexHealth) is green when every copy is started (a
// relocation's target aside while its source is: Snapshot.Relocating), yellow
// when every shard still has a copy that serves (Serving: a started primary,
// or a started in-sync copy, which the allocator promotes), red otherwise;
// a copy counts as started only on a registered node. Records of the single-copy form an
// earlier version wrote are read as one primary at term 1.
package state
