// Package reindex is a data node's share of a reindex task: the Runner
// serves and registers the internal sluice.node.v1.Reindex service
// (RunReindexSlice, ShardIngest, RethrottleReindexSlice). The coordinator
// side — planning, dispatch, checkpoints in etcd, verification — is
// coordinator/reindex.
//
// # A slice
//
// A slice is one source shard held by this node, or one _id-hash
// sub-slice of it. Its run:
//
//  1. Pins a point-in-time reader of the source shard (Acquire) and selects
//     the docs to copy per segment as bitsets (engine.Reader.Select, as a
//     sliced scan does): live ∩ sub-slice (engine.SliceHash over the _id
//     term dictionary) ∩ query matches (a no-scores weight per segment),
//     cut to the first max_docs in index order. The selection is a pure
//     function of the reader and the request.
//  2. Reads the selected docs in index order from stored fields — _id,
//     _routing and the original _source bytes, no JSON decoding unless an
//     in-place doc-values update changed a field of the doc since it was
//     indexed: then the field's current value is written into the copy's
//     _source (engine.CurrentSource) — and
//     routes each as a bulk would, by hash(routing or _id) over the
//     destination's routing shards, where the routing is the document's
//     own unless the request's routing (routing.Dest) discards or replaces it
//     (Elasticsearch's dest.routing keep | discard | =value); the routing
//     travels with the document and is stored with it. A destination shard
//     open on this node is written in-process (Shard.IndexDoc: parsed once,
//     with the destination's mapping) by a pool of writer goroutines; any
//     other goes into that shard's ShardIngest stream to its node, in binary
//     batches whose Send blocks while the receiver is behind
//     (backpressure). Periodic refresh of local destination shards is off
//     while any copy writes to them and restored (to the index's setting)
//     after.
//  3. Every checkpoint interval, and at the end, makes everything before
//     the current position durable — writers drained and local destination
//     shards committed, ingest streams closed (the receiving node commits
//     before it answers) — and only then streams a progress message with
//     the cursor and the counters since the run began.
//
// The cursor is (layout fingerprint, next doc). A slice starting afresh
// commits its source shard and pins a reader of exactly the committed
// segments, so the layout it reads is the one the shard reopens with after
// a crash. A slice resumed with a cursor continues in the reader it came
// from if the node still holds it (kept for ReaderKeepAlive after an
// interrupted run, as when the coordinator died), or in the shard's current
// reader if its segment layout hashes the same (a restarted node: the
// shard reopened from that commit). Otherwise — the source was written to
// or merged and committed since — doc positions mean nothing and the slice
// starts over, saying so (restarted): writes are idempotent by _id, so the
// destination still ends with every document exactly once.
//
// # Update by query
//
// A slice request with update_doc_values is an update-by-query slice
// (update.go): it selects as above, then sets the fields in place on each
// selected document of its source shard itself, conditional on the
// version its reader saw, paced by the throttle, with translog syncs as
// checkpoints. Nothing is copied. A run that stops syncs what it updated;
// resumed in the reader the node kept, it goes on after the last document
// it updated rather than from its caller's last checkpoint, whose later
// documents carry its own updates (newer than the reader's versions: not
// conflicts).
//
// # Segment copy
//
// A slice whose request says SEGMENTS (the coordinator checked the task is
// eligible; the slice is checked again by the same rule, package
// segmentcopy, and refused with INVALID_ARGUMENT if it fails it) copies no
// documents: after pinning the committed source reader
// as above, it adds that reader's segments (engine.AddIndexes: hard links,
// in-place updates' generation files included, checksums verified,
// nothing re-analysed) into each destination shard
// drawing from its source shard — the k shards s*k..(s+1)*k-1 of a ×k
// layout — keeping in each the docs whose routing (else _id) maps to it,
// as a bulk would route them. Each add commits with the marker
// reindex/<task>/<slice>, which records the docs added: a rerun after a
// crash or a coordinator retry finds the marker and adds nothing, and
// reports the same count. The slice reports once, at the end, with copied
// = live docs added, which must equal the source reader's live docs (else
// it fails). It copies documents instead, saying why in its messages,
// when a destination shard is not open here, its mapping (canonical form)
// differs from the source's, or it already holds documents this slice did
// not add (a document copy of an earlier run: segments would duplicate
// ids). A corrupt source file fails the slice with FAILED_PRECONDITION.
//
// A throttle (cluster/throttle) paces documents at requests_per_second
// (the coordinator's baseline mode uses it too): a token bucket that
// carries the lateness of its timers, so the rate asked for is the rate
// achieved (TestThrottleAchievesItsRate: 24,997–24,999 of 25,000 docs/s on
// a busy 2-core machine, where a timer per document reached 811);
// RethrottleReindexSlice wakes a waiting slice so a new rate applies at
// once. Cancelling the RPC stops the slice within one document.
//
// # Disk watermarks
//
// A slice writes nothing into an index that refuses writes because a node
// holding a copy of it is past the flood-stage disk watermark (the
// allocator's disk block, as the node's cluster state shows it:
// Options.WriteBlocked): it is refused at its start, and a block set while
// it runs stops it at its next chunk of local documents, its next ingest
// batch (the receiving node checks each batch too) or its next segment
// add; an update by query checks its own index every chunkDocs documents.
// The error is the bulk's — RESOURCE_EXHAUSTED, "index [x] refuses
// writes: disk of node [n] at <path> is …, past the flood-stage disk
// watermark" — so the coordinator resumes the slice from its last
// checkpoint later, and it copies on once the block is lifted.
//
// Outcomes: a created or replaced document is counted; one that does not
// fit the destination mapping is a failure (counted, sampled, the copy
// goes on); with op_type create an existing id is a conflict — fatal
// (ErrConflictAbort, ABORTED: the API's version-conflict code) under
// conflicts=abort, after the slice reports its counts, the conflict
// among them. The runner returns typed
// errors (ErrInvalid, ErrConflictAbort, ErrNoDestination, the shard's and
// the engine's); the node's error table gives their codes, which tell the
// coordinator whether to retry: a bad request, a conflict under abort or
// a corrupt source ends the task, anything else ends the run and the
// coordinator resumes the slice from its last checkpoint: nothing is ever
// dropped.
package reindex
