// Package replication is a data node's part of shard replication
// (docs/replication.md; the engine's primitives are node/engine's
// "Replication"): the primary-side replication group of each primary copy
// the node holds, the replica side of each replica copy, and the
// Replication gRPC service between them.
//
// # Writes
//
// A primary copy's Group is its shard.Replicator. A batch of writes
// (shard.Batch: a bulk, a reindex slice, a single write) is applied and
// logged by the primary's engine; at Sync the group sends the operations
// — seqNo, term, op — to every copy of the group (ReplicateOps, one call
// per copy per batch) while the primary fsyncs its own translog, and Sync
// returns once both are done. A replica appends them to its translog
// (engine.Replica.ApplyOps: fsynced there under request durability) and
// answers with its local checkpoint; the group's global checkpoint is the
// lowest local checkpoint of the in-sync copies, passed with every request.
// An in-sync copy that fails (an error, OpsTimeout, unreachable) is removed
// from the in-sync set in etcd — state.Store.RemoveInSync, guarded by the
// primary's term and allocation — before Sync returns; if that write fails
// the batch fails with ErrUnavailable (UNAVAILABLE: nothing of it may be
// acknowledged) and the group acknowledges nothing more until the routing
// table shows it primary at its term again. A routing entry with another
// primary or a newer term makes the group stale at once.
//
// The group follows the routing table (Service.Run): copies in the in-sync
// set join it, copies gone, failed or moved leave it. A recovering copy is
// tracked: it gets new operations, and a failure only fails its recovery.
//
// # Fencing
//
// Every request a primary sends carries its term; a replica refuses an
// older one (engine.ErrStaleTerm, FAILED_PRECONDITION) and adopts a newer
// one, and adopts the routing table's term as soon as it sees it, so an
// old primary is fenced before its requests arrive.
//
// # Checkpoints
//
// After each refresh of a primary the group takes a replication
// checkpoint (engine.Engine.Checkpoint) and offers it to every in-sync
// copy, latest wins: a copy busy installing one gets only the newest next.
// The replica installs it (engine.Replica.InstallCheckpoint), fetching the
// files it lacks from the primary's node over the streaming GetFiles RPC
// (1 MiB chunks, which the fetcher decodes in place rather than through a
// copy: fileChunk);
// the engine verifies length and checksum of each, and reuses same-name,
// same-checksum files. The answer is the copy's visible seqNo, which
// refresh=wait_for (and refresh=true) waits on (WaitVisible): a write is
// visible on every in-sync copy when the bulk returns; a copy that does
// not show it within VisibleTimeout is failed. The time from a
// checkpoint's publication to a copy's answer is the replica lag
// histogram (Collector: sluice_replica_lag_seconds, per index, on the
// primary's clock). Merged segments are
// pre-copied to the in-sync copies before the merge commits
// (engine.Options.MergedSegmentPreCopy, PreCopyFiles).
//
// Segments a primary adds outside its translog (shard.Shard.AddIndexes:
// a reindex's segment copy) are in no operation a copy could replay, so
// they are synced as a write is replicated (Group.SyncSegments): the add,
// a refresh, and the checkpoint holding them sent to every in-sync copy at
// once, flagged to be committed (PublishCheckpointRequest.commit: a copy
// otherwise commits only every CommitInterval, and a crash before would
// lose segments no translog holds); AddIndexes returns once each has
// installed and committed it or has been removed from the in-sync set, and
// fails (ErrUnavailable) when the primary's term has ended. So every
// in-sync copy — the only ones promoted or handed the primary's role —
// holds every add that returned, durably. A recovery's last segment sync
// (joinSynced) commits likewise, within the recovery's context.
//
// # Recovery
//
// A replica copy opens (engine.OpenReplica over whatever files it has)
// and recovers from its primary over the StartRecovery stream: the
// primary tracks it, refreshes, sends a checkpoint C and keeps its
// translog above C (RetainTranslogFrom); the target installs C over a new
// translog (engine.Replica.Recover, reusing the files it still has: a
// returning node copies little) and says so; the primary sends every
// operation above C (ReplicateOps; sendHistory, which copies each one out
// of the translog reader's reused buffer), then, with segment adds held
// off, has the target install its newest checkpoint if it is newer than C
// (a last segment sync, as OpenSearch forces one before a relocation
// hand-off: an add since C is in no operation it got), adds the copy to
// the in-sync set (AddInSync, guarded by its term) and says done. The node then reports
// the copy STARTED. While the primary is not ready the target tries again
// for RecoveryWait. A copy whose last commit holds a file the primary has
// under the same name with other bytes (engine.ErrFileConflict: a primary
// reopened in the same term, before reopens raised it, reused a name) deletes its data and recovers
// from nothing. Recovery is throttled per node (Config): the target's
// file fetches share RecoveryBytesPerSec (cluster/throttle, a token a
// byte), and a primary's node serves OutgoingRecoveries recoveries at
// once, the others waiting in StartRecovery before anything is retained
// (Collector: sluice_recoveries_outgoing, _queued).
// A replica the primary failed (FAILED, out of the in-sync
// set) is opened again by its node, which reports it INITIALIZING first:
// the retry is a recovery, and the primary adds it back to the set. A
// replica whose files were damaged on its disk (the node's scrubber or
// a verification; engine.Replica.Failure) leaves the set by its node's
// own FAILED report (state.ShardReport.LeaveInSync) before its data is
// deleted and it recovers from nothing: it is never promoted.
//
// # Promotion
//
// A replica whose routing entry makes it primary is promoted in place
// (shard.Host.Promote: engine.Replica.Promote seals it, commits, and opens
// an engine of the new term that replays its translog above the global
// checkpoint). Its new group then resyncs every other in-sync copy
// (Resync: a trim record voiding older terms' operations above the new
// primary's highest seqNo; then its operations above the global
// checkpoint) and publishes a checkpoint. Readers pinned on the replica
// (points-in-time, scrolls) move to the promoted shard and keep their
// view (shard.Host.Promote). A primary reopened after a
// restart (at term + 1: its node records the reopen with a new term,
// state.Store.ActivatePrimary) resyncs its in-sync copies the same way,
// so what its earlier run sent them and then lost is voided.
//
// A relocation target handed the primary's role (the allocator's
// state.Relocated: term + 1) is promoted the same way. Until it adopts
// the new term it takes the old primary's operations as any in-sync copy
// and replays them once promoted; after, it refuses them, the old primary
// cannot remove it from the in-sync set at its ended term and fails the
// batch with ErrUnavailable, which the coordinator retries on the new
// primary.
package replication
