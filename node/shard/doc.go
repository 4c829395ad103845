// Package shard hosts a data node's shard engines: one engine.Engine per
// shard copy assigned to the node, under <data-dir>/<index-uuid>/<shard>/,
// with the index mapping it parses documents by.
//
// # Lifecycle
//
// Host.Open opens (or recovers from its last commit) a shard when the
// routing table assigns it to the node; opening an open shard is a no-op.
// Host.Close commits and closes it (shard moved away, node shutting down);
// Host.Delete closes it without committing and removes its directory (index
// deleted). Writes are durable through the engine's translog when they
// return (IndexDoc, DeleteDoc), or at the Sync of the Batch they went
// through (one fsync per batch); a restarted shard replays the translog
// above its last commit.
//
// Create-only writes (IndexDoc with createOnly, OpCreate) use
// engine.Create, atomic per id, and fail with ErrConflict when the id
// exists. A Batch takes the document's custom routing (a bulk item's, or a
// reindexed document's), which the engine stores with it (_routing).
//
// # Replica copies
//
// Host.OpenReplica opens a shard copy as a replica (engine.Replica): it
// indexes nothing, refuses writes and realtime gets with ErrNotPrimary
// (UNAVAILABLE: retry on the primary), and serves searches, scans and
// gets from the checkpoints its primary publishes (node/replication).
// Host.Promote turns it into the primary of a new term in place: the
// replica's Shard is replaced by a primary's that shares its mapping, and
// readers pinned on the replica move to it, keeping their view (their
// files stay mapped when the new engine deletes what its commit lacks). A primary's Replicator (its
// replication group) receives every write of a Batch at Sync; a bulk, a
// reindex slice and a single write are acknowledged only once durable on
// the primary and every in-sync copy, and refresh=wait_for or true also
// waits for the replicas to show them.
//
// # Bulk
//
// Shard.Bulk applies a shard's share of a bulk request: the operations are
// split by id over HostOptions.BulkParallelism goroutines (so one id's
// operations apply in request order, and each goroutine fills one DWPT),
// made durable by one fsync, and then the refresh policy is applied
// (RefreshImmediate refreshes, RefreshWaitFor waits for a refresh to cover
// the highest sequence number written). An operation the shard cannot
// apply fails alone, in its OpResult; an error return means nothing may be
// acknowledged.
//
// OpUpdateDocValues is the engine's in-place update. OpUpdate is a partial
// update (Batch.Update, update.go): a real-time read of the document with
// the current values of fields updated in place, a merge of the partial
// document (package node/engine/source, as Elasticsearch merges), and a
// re-index — or the upsert when the id has none; a merge that changes
// nothing writes nothing (OpResult.Noop). The re-index is conditional on
// the version read (engine.IndexIf), retried Op.RetryOnConflict times, so
// a write of the id landing in between is never overwritten. Partial
// updates of one id are serialised by a striped lock. Op.If makes any op
// but a create conditional on the id's version (if_seq_no).
//
// # Pinned readers
//
// Point-in-time readers that later calls must find again (a search's fetch
// phase, a point-in-time's pages, a scan's batches) are pinned by id with a
// keep-alive (Shard.PinReader, Shard.Reader; Elasticsearch's
// ReaderContext): every use extends it, Host.Run releases expired ones,
// and at most HostOptions.MaxOpenReaders are open per node
// (ErrTooManyReaders beyond, as Elasticsearch's
// search.max_open_scroll_context). A shard's readers are released when it
// closes, while its files are still there. PinnedReader.Memo keeps what a
// caller derives from one reader (a scan's selection) for its next call.
//
// # Refresh
//
// A shard refreshes at its index's interval (Shard.SetRefreshInterval; 0
// is the default, negative is off). A reindex writing into it pauses
// periodic refresh (Shard.PauseRefresh) — refreshing mid-copy only makes
// small segments — and the last copy to end restores the index's interval,
// including a change made meanwhile.
//
// # Dynamic mapping updates
//
// As in Elasticsearch, a document that brings new fields is indexed only
// after the cluster has accepted the mapping update. Shard.Index parses the
// document with the shard's current mapping (inside engine.Index, through a
// pooled mapping.Parser). If parsing finds unmapped fields, the engine
// rejects the document with a *MappingUpdateError carrying the inferred
// fields; the shard merges them into its own mapping (a type clash with a
// known field rejects the document, naming the field), sends the update to
// the cluster through MappingUpdater — an etcd transaction, where a racing
// update of the same field with another type from another shard loses — and
// indexes the document again with the merged mapping the cluster returned.
// Updates of one shard are serialized, and an update the shard's mapping
// already covers is not sent again, so a burst of documents with the same
// new field costs one round trip. Nothing unacknowledged ever reaches the
// index, so a restarted shard never holds fields its mapping lacks.
//
// Host.UpdateMapping pushes a newer cluster mapping (fields added through
// other shards or PutMapping) to every open shard of the index.
//
// # Damaged files
//
// While shards are open the host runs the node's engine.Scrubber
// (HostOptions.Scrub: a pass a day at 20 MiB/s by default), which
// re-verifies the checksum of every file of every open shard. When it, a
// merge or Host.Verify (the on-demand check behind `sluice shard verify`)
// finds a damaged file, the shard's engine fails and marks its store
// corrupted; the host records the failure (Failure), tells FailureNotify,
// and Get refuses the shard with an error wrapping ErrFailed and
// index.ErrCorrupt that names the file, so no search, get or write
// reaches it. The node's routing reconciler sees it (Failure,
// FailureNotify) and closes the shard — without a commit — and
// opens it again; Open refuses it with the recorded failure (after a
// restart, with the store's corruption marker), and the routing entry
// says FAILED with that reason. Deleting the shard clears both. The
// Collector counts scrubbed bytes and files and damaged files.
//
// Replica copies are scrubbed and verified the same way
// (engine.Replica.Verify): their files were checked when copied from the
// primary, and a disk can damage them afterwards. A damaged replica fails
// (engine.Replica.Failure: no operations, installs, reads or promotion)
// and the host records it as it does a primary; the reconciler then
// reports it FAILED out of the in-sync set, deletes it and recovers it
// from the primary.
package shard
