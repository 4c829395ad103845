// Package engine is the shard engine's write and refresh path, modelled on
// Lucene's IndexWriter / DocumentsWriter / StandardDirectoryReader and
// Elasticsearch's InternalEngine: an Engine indexes JSON documents by _id,
// makes them searchable at refresh, and hands out ref-counted point-in-time
// Readers.
//
// # Parts of the writer
//
// IndexWriter composes four parts, each a type with its own lock and a
// small surface, as Lucene's DocumentsWriter and tantivy's SegmentUpdater
// divide the work:
//
//   - perThreadPool (Lucene's DocumentsWriterPerThreadPool,
//     perthreadpool.go): hands out DWPTs, one operation at a time, by
//     affinity; knows every DWPT not yet taken for flushing.
//   - flushControl (DocumentsWriterFlushControl with its flush policy and
//     stall control, flushcontrol.go): RAM accounting, flush-pending and
//     flushing DWPTs, operations in flight, a refresh's full flush, the
//     flushed segments waiting for a refresh, the tragedy that fails the
//     writer.
//   - segmentSet (IndexWriter.segmentInfos with merge registration;
//     tantivy's SegmentUpdater, segmentset.go): the live segments, merges
//     registered and committed against them, deletes applied to them at
//     refresh, AddIndexes segments and markers waiting to be published.
//     Its lock serialises every change to the list: a refresh holds it
//     throughout.
//   - committer (commit.go): one commit at a time, the last commit point.
//
// The writer itself keeps the sequence section (mu: sequence numbers,
// delete queue, version map) and publishes readers. Locks nest in the
// order committer, segmentSet, then flushControl or the writer's mu (never
// both), then perThreadPool.
//
// # Write path
//
// An operation (IndexWriter.Add, Update, Delete; Engine.Index, Delete) checks
// out a DWPT (dwpt.DWPT, the in-memory segment) from the perThreadPool's
// free list — at most one goroutine uses a DWPT at a time, none owns one,
// but a worker whose context has an affinity (WithAffinity: bulk requests,
// reindex writers, the bench) gets back the one it used last, so a DWPT's
// memory stays in one core's cache — inverts its document into it without
// any lock, then enters one short critical section (IndexWriter.sequence)
// that:
//
//   - assigns the operation's sequence number (monotonic int64);
//   - appends its delete-by-id, if any, to the global delete queue, a linked
//     list of delNodes with increasing sequence numbers;
//   - brings the DWPT up to date with deletes queued since its previous
//     operation, applied only to its docs added before this one (Lucene's
//     docIDUpto), so a doc added after a delete survives it;
//   - records the id in the version map (ids written since the last
//     refresh) and decides created / found: from the version map, else from
//     the current reader's per-segment _id lookup (done just before the lock
//     and re-done if a refresh published in between);
//   - records the doc's version in the DWPT's _seq_no and _primary_term
//     columns (version.go), and for a conditional operation (OpOptions.If,
//     if_seq_no) first compares the id's current version — version map,
//     else the reader's columns — refusing with a *VersionConflictError
//     before any sequence number is taken.
//
// It then checks the DWPT in with the flushControl, which runs the flush
// policy.
//
// Flush policy (Lucene's FlushByRamOrCountsPolicy + DocumentsWriterFlushControl):
// the DWPTs' RAM is summed; above RAMBufferBytes the largest DWPT is marked
// flush-pending. If a goroutine holds it, that goroutine flushes it when it
// checks it in; otherwise the goroutine that noticed flushes it. Others keep
// indexing into other DWPTs. When pending plus flushing bytes exceed twice
// the budget, checkouts stall (and help flush) until flushing catches up.
// A flushed DWPT becomes a segment through the Codec (no fsync) and waits,
// invisible, for the next refresh.
//
// Deletes reach segments lazily: every segment keeps a cursor into the
// delete queue (the last delete applied to its live docs). Consumed queue
// nodes are garbage once no cursor points before them.
//
// # Refresh path
//
// IndexWriter.Refresh (Lucene's openIfChanged): wait for in-flight
// operations, take every non-empty DWPT and record the boundary (max seqNo,
// queue tail); flush them in parallel; wait for flushes that started before
// the boundary; apply queued deletes up to the boundary to every segment's
// live docs, copy-on-write; drop fully deleted segments; publish a new
// Reader that shares unchanged segments — or keep the current one when
// nothing changed. Readers and the writer ref-count segments; a segment's
// files are deleted (fileDeleter) when the last reference goes.
//
// Visibility: a Reader's SeqNo is the boundary of the refresh that made it;
// every operation with seqNo <= SeqNo is visible. WaitForGeneration(seq)
// blocks until a refresh covers seq (refresh=wait_for).
//
// The Engine's refresher goroutine (Lucene's ControlledRealTimeReopenThread)
// refreshes every RefreshInterval (default 1 s, negative: off, changeable at
// runtime); a WaitForGeneration caller gets a refresh within
// WaitRefreshDelay (default 100 ms; waiters in that window share it) even
// when the interval is off; a realtime Get of an id changed since the last
// refresh refreshes at once; and when the version map and delete queue
// outgrow a quarter of the RAM budget it refreshes to release them.
//
// A refresh with applyDeletes=false (Options.SkipDeletesOnRefresh) skips
// step 3: readers may then show docs deleted or replaced since (an updated
// id in both versions) until a refresh applies them; the version map keeps
// its entries meanwhile, so created/found stay exact.
//
// # Memory
//
// Buffered documents are bounded by RAMBufferBytes (DWPTs measure the heap
// they hold; dwpt's test checks it against the Go heap), plus the version
// map and delete queue until the next refresh (a quarter of the budget
// forces one). The Go GC lets the heap grow to twice the live heap before
// collecting (GOGC=100), so a process holding other large live data sees
// that headroom as RSS: set a soft memory limit (GOMEMLIMIT or
// debug.SetMemoryLimit) in the process. Measured on the whole corpus with
// the corpus itself held in memory by the benchmark (~1.2 GB RSS): peak RSS
// 1.9 GB (+690 MB) with GOGC alone, 1.5 GB (+308 MB, budget 256 MB) with
// GOMEMLIMIT=1400MiB, at the same throughput.
//
// # Id lookups
//
// Whether a live doc with an id exists is answered by the version map for
// ids written since the last refresh, else by the current reader: per
// segment, a Bloom filter over _id (10 bits per id, built when the segment
// is opened) and then one term-dictionary seek, newest segment first.
//
// # Merging
//
// After a refresh or merge changes the segment list, the MergePolicy
// (mergepolicy.TieredMergePolicy) picks merges; their inputs are pinned and
// the MergeScheduler (mergescheduler.ConcurrentMergeScheduler) runs them,
// writing through the codec with its rate limiter as the IOContext
// throttle. The merged segment is warmed, then replaces its inputs in the
// writer's list and becomes visible at the next refresh. Deletes that
// reached the inputs during the merge are carried over: inputs are brought
// to the most advanced delete cursor among them and every doc deleted since
// the merge's snapshot is deleted in the merged segment through the doc map.
// Indexing goroutines that flush call MaybeStall, so indexing waits when
// merges fall too far behind.
//
// # Refresh versus merges
//
// Refresh never waits for a merge: merges take the segmentSet's lock only
// to commit (swap the merged segment in, a walk over the inputs' deletes)
// and to unregister, never while writing. The reverse is bounded: while a refresh
// runs, running merges pause at their next checkpoint — every 64 KiB a
// merge writes (the IOContext throttle, before the rate limiter), every
// 256 terms of the merged view (the _id field writes nothing while its
// singleton terms go into the in-memory term dictionary), every 256 ids
// while the merged segment's _id bloom filter is built (a trace of a slow
// reopen showed that step alone taking a core for 60 ms), and before
// warming — and resume when
// the refresh publishes (mergeyield.go). On a small machine the refresh's
// flush otherwise shares the cores with merges, and an IO rate limit does
// not help: the contention is CPU. Limits keep merges keeping up: one
// refresh pauses them at most MaxMergeYield (1 s), over time they spend at
// most MergeYieldShare (0.5) of wall-clock time paused, and no pause starts
// while merging is behind: indexing stalled in MaybeStall, merges queued
// beyond MaxMergeCount, or big merges stopped beyond MaxThreadCount. Stats counts
// the refreshes that paused merges, those that could not, and the time
// merges waited. Measured in docs/benchmarks.md section 2.
//
// Across shards, the periodic refresh's flushes and small merges share the
// process's CPU budget (Options.CPUBudget, package cpubudget: max(1,
// GOMAXPROCS/2) slots): each flush waits for a slot, ahead of merges, and a merge hands
// its slot to a waiting flush at its next checkpoint. A merge holds no
// slot while it pauses for a refresh or takes that lock, so the two never
// wait on each other. Many shards refreshing at once then take turns on
// part of the cores instead of stalling searches on all of them. A refresh
// someone asked for (Refresh, refresh=true, a commit) flushes at once.
// The core a merge holds is still shared with searches through Go's
// scheduler, so at each checkpoint a merge also steps aside while
// goroutines wait for a CPU (cpubudget.Slot.StepAside: short sleeps, at
// most 3/4 of its time, never while merging is behind); Stats.MergeStepAside
// counts that time.
//
// # In-place doc-values updates
//
// UpdateDocValues (Lucene's updateDocValues; the bulk action
// update_doc_values) sets numeric and keyword fields mapped index: false,
// doc_values: true of the live doc with an _id without re-indexing it. The update
// takes a sequence number and joins the delete queue as a node carrying
// field values (DWPTs skip such nodes: the writer refreshes first when the
// id was written since the last refresh, as a realtime get does, so no
// buffered doc is ever its target). It also enters the version map, marked
// in place: a realtime read (a partial update's, with
// GetOptions.CurrentValues) refreshes for it, a later in-place update of
// the id does not. The refresh that applies deletes walks
// it in order with the deletes, records docID → value for the live docs
// of each segment, and freezes them into a new run per field, layered
// over the segment's column by the leaf reader the new Reader holds
// (dvupdates.go; a keyword field's values are ids into a per-segment
// term table whose terms the layered column slots between the segment's
// ordinals). Reopen cost is O(updates since the last reopen); runs of
// similar length are merged so a field keeps O(log n) of them; readers
// opened earlier keep their runs. Commits and replication checkpoints
// write a segment's updates, cumulative, as a generation file
// (codec.WriteDocValuesUpdates, "_N_<gen>.dvu", codec header and CRC
// footer; CommitSegment.DVGen, DocValuesUpdates), loaded at open and by
// replicas at install; merges read the layered values, folding them into
// the merged column, and carry through the doc map the updates that
// arrived while they ran. The translog logs them as OpUpdateDocValues
// (format version 4); replay applies each in seqNo order unless the id's
// winning index or delete comes after it; ApplyOps accepts them. Their
// heap is reported in Stats.DocValuesUpdatesBytes and counted in
// RAMBufferBytes with the DWPTs' RAM: a refresh that leaves it above a
// quarter of the budget writes the largest segments' updates out as
// generation files, which then serve them in place (mmap'd), as loaded
// generation files always do. _source is never
// rewritten: it shows the document as indexed. See docs/updates.md.
//
// # Commit points
//
// Commit (Lucene's commit; durability, not visibility) refreshes, writes a
// live-docs generation (codec.WriteLiveDocs) for each segment whose deletes
// changed since its newest live-docs file (a replication checkpoint may
// have written it already; generations come from the segment counter, and
// a segment holds a file reference on its newest file as on its core
// files), fsyncs every referenced file, and
// publishes segments_<gen base 36>: "SLSI", a version byte, a JSON
// SegmentInfos (generation, SeqNo, next segment counter, user data, and per
// segment its SegmentInfo, DelGen, DelCount, live-docs file and size) and a
// big-endian CRC32 of everything before it — written as
// pending_segments_<gen>, fsynced, renamed, and the directory fsynced. Only
// the last commit is kept. Opening loads the newest commit, deletes index
// files it does not reference (names starting with "_", "segments_",
// "pending_segments_"), and continues sequence numbers from its SeqNo. Segment
// file formats are the codec's (node/engine/codec).
//
// # Adding segments of another index
//
// AddIndexes (Lucene's addIndexes(CodecReader...) without the merge;
// Elasticsearch's _clone/_split) adds the segments of a point-in-time
// Reader of another index with the same codec and mapping, without
// re-analysing anything: each segment's files are hard-linked
// (store.LinkOrCopy; copied across file systems) under a fresh name from
// this writer's counter, keeping the segment ID the codec checks in every
// file header; every file's checksum is verified before the segment is
// opened; its live docs are the source's live docs a Keep function accepts
// by position (a split keeps the docs that route to this shard); the _id Bloom filter
// is built at open like any segment's. In-place doc-values updates the
// source reader layers over a segment come with it: its generation file is
// linked too when it holds exactly those updates (a committed reader's),
// else the copy holds them in memory and the add's commit writes them. A
// refresh publishes the segments
// together with a marker, and every later commit records the marker in its
// user data (UserDataAddedPrefix), so an add already published or
// committed is not done twice, and a crash before the commit leaves
// neither segments nor marker. The added docs take no sequence numbers
// and are not in the translog: the commit is what makes them durable
// (Engine.AddIndexes commits). Docs a split rejected are ordinary
// deletes: the merge policy's DeletesPctAllowed rule merges them away.
//
// # Durability
//
// With a translog (Options.Path or TranslogPath; durability.go) every
// Index, Create and Delete appends its operation, with the sequence number
// the writer gave it, to the translog after the writer applied it and
// before returning; with Request durability it returns after the sync
// covering it — an fsync of the translog and then of its checkpoint —
// (concurrent callers share syncs), and a Bulk shares one sync among many
// operations. Commit rolls the translog, writes the
// commit point with the translog's UUID and generation in its user data,
// and then trims the generations whose operations the commit holds. Open
// loads the last commit, opens the translog (a torn tail past the last
// sync's checkpoint is truncated; damage below it fails Open with
// translog.ErrCorrupt naming the file and offset), and replays operations
// above the commit's SeqNo — per id only the one with the highest seqNo,
// since concurrent writers append out of seqNo order, and after a change
// of primary only records no trim record voids and, per seqNo, of the
// highest term (recovery.go) — fills the seqNos between the commit and the
// highest seen that no record holds with no-ops of the engine's term, then
// refreshes and continues numbering after the highest seqNo seen. A
// replayed document was acknowledged, so a parser that is a ReplayParser
// parses it without checks added since it was written (UTF-8 of strings).
// Every logged operation carries the primary term (Options.PrimaryTerm,
// SetPrimaryTerm). See docs/engine-durability.md.
//
// # Damaged files
//
// Every file is checksummed before it is trusted somewhere: at open (the
// commit point, live docs, the small .smt and .tim in full; every header
// and footer), by a merge before it copies its inputs (verifyMergeInputs,
// as Lucene's SegmentMerger checks its readers' integrity), by AddIndexes
// before it serves linked segments, and at rest by the Scrubber — one per
// data node, re-verifying every file of every engine on an interval,
// throttled and behind all other background work (scrub.go) — and by
// Verify on demand (verify.go; VerifyFiles is the same check for anything
// that copies files). A damaged file found while the engine is open fails
// it (corruption.go, Elasticsearch's failEngine): reads, writes, refreshes
// and commits return the failure, which wraps ErrFailed and
// index.ErrCorrupt and names the file; Options.OnFailure hears of it; and
// a corrupted_<uuid> marker in the directory (Store.markStoreCorrupted)
// makes every later Open fail with ErrMarkedCorrupted and the original
// reason, until the shard's data is deleted.
//
// # Replication
//
// A shard's copies are kept current by segment replication (Lucene's NRT
// replicator, OpenSearch's segment replication): the primary alone
// analyses and indexes; replicas log its operations and copy its segment
// files. This package holds both ends; the node moves the bytes.
//
// Terms. Every operation the primary logs carries its primary term; the
// term is adopted at Open from Options.PrimaryTerm, never below what the
// last commit and the translog know (ErrStaleTerm), recorded in every
// commit, raised in place by SetPrimaryTerm. A primary of term t names
// new segments — and live-docs generations, which come from the same
// counter — from (t-1)<<32 up (termCounterFloor), so primaries of
// different terms never write two files under one name; term 1 keeps the
// names an index had before terms. The translog (format version 3) also
// holds trim records: Trim(T, S) voids the operations logged before it
// with a term below T and a seqNo above S — what an old primary sent a
// replica but never acknowledged, beyond the new primary's history.
// Replay skips void records; of two records of one seqNo the higher term
// wins (a new primary reassigned it); per id the highest seqNo wins; and
// seqNo gaps are filled with no-ops of the new term, so a copy's local
// checkpoint can pass them and an old primary's record at such a number
// loses (Elasticsearch's fillSeqNoGaps).
//
// Checkpoints (checkpoint.go). Engine.Checkpoint describes the current
// reader as a ReplicationCheckpoint: a SegmentInfos without a generation,
// the seqNo every operation up to which it shows (deletes applied), the
// term, a version (checkpoints are ordered by term, then version), and
// every file with its length and the CRC32 its codec footer records (read
// from the footer once per file, not re-hashed). Building one writes,
// unsynced, a live-docs file for each segment whose deletes changed since
// its newest (Lucene's writeAllDeletes); a checkpoint pins its files until
// its last Release, whatever merges and commits do meanwhile.
// RefreshNotify says when to take the next; MarshalBinary and
// DecodeCheckpoint carry it over the wire (decoding refuses file names
// that are not index files, files the segments do not reference, counts
// that do not add up); OpenIndexFile opens a referenced file to stream
// it. Its cost (BenchmarkNRTRefresh, four alternated runs of 20
// refreshes of ~1 MB of corpus updates over 20k docs in 6 segments, 2-core
// VM shared with other work): 0.22–0.50 ms per checkpoint (median 0.39)
// after refreshes of 22–24 ms mean, p50 20.7–23.1 ms with it and
// 21.9–24.2 without — within the refreshes' own noise.
//
// Replicas (replica.go). OpenReplica opens a copy that indexes nothing.
// ApplyOps appends the primary's operations, with their own seqNos and
// terms, to the replica's translog — one group-committed fsync per call
// under Request durability — fenced by the sending primary's term (older:
// ErrStaleTerm and nothing appended; newer: adopted), and tracks the local
// checkpoint (every seqNo up to it held) and the highest seqNo received.
// InstallCheckpoint diffs the checkpoint's files with the copy's (same
// name, length and checksum: reused), fetches the missing ones through a
// FetchFunc into temporary files, Options.ConcurrentFileFetches at a time
// (default 2, Elasticsearch's indices.recovery.max_concurrent_file_chunks),
// checks length, footer and full checksum — computed as the bytes are
// written (codec ChecksumWriter, Elasticsearch's VerifyingIndexOutput),
// not by reading the file back — renames each into place, opens the new
// segments, reads changed live docs and publishes a Reader whose SeqNo is the
// checkpoint's — the Reader type searches, scans and Select use on a
// primary. A name the copy holds with other bytes (an old primary's file)
// is replaced only at publication, readers keeping their mapping, and
// refused with ErrFileConflict if the copy's last commit holds it.
// PreCopy fetches a merged segment ahead of its checkpoint; on the
// primary, Options.MergedSegmentPreCopy runs once a merged segment is
// written and warmed, before the merge commits, bounded by
// MergePreCopyTimeout and never failing the merge (the MergedSegmentWarmer
// gets a reader, not files, and its error fails the merge). Commit fsyncs
// the installed checkpoint's files, writes segments_N for it with the
// translog's identity, the term and the global checkpoint, and trims the
// translog below min(seqNo, global checkpoint)+1 — not below the seqNo
// alone: a checkpoint can show operations its primary never acknowledged,
// which a new primary reassigns, so a promotion must replay, by id, over
// the segments from the global checkpoint; for the same reason a
// checkpoint below what the translog was trimmed to is not committed.
// Recover (peer recovery's first phase) installs the primary's checkpoint
// whatever was installed and commits it over a new, empty translog — a
// returning copy's old log may lack operations the checkpoint holds, and
// replaying it would bring back what they superseded — swapping
// translogs so that a crash leaves the old or the new pair (Open finishes
// the swap). Promote seals the replica, commits, closes it and opens an
// Engine of the new term over the same files, which replays the translog
// above min(commit, global checkpoint), fills gaps, and commits once with
// the translog above its replay start retained for the resync.
//
// On the primary, RetainTranslogFrom keeps the operations above a seqNo
// through commits until released, and TranslogSnapshot reads them (with
// their terms, without void ones) to stream to a copy.
//
// How the node uses this. Writes: after a bulk's Sync, send its
// operations (TranslogSnapshot above the last sent, or the bulk's own) to
// every replica of the replication group with ApplyOps, with the primary's
// term and the global checkpoint — the lowest local checkpoint of the
// in-sync copies, passed to UpdateGlobalCheckpoint — and acknowledge once
// every in-sync copy returned. Refreshes: wait on RefreshNotify, take a
// Checkpoint, publish it (latest wins), let replicas fetch files with
// OpenIndexFile while it is retained, release it when superseded and no
// copy is still fetching; replicas call InstallCheckpoint and report
// State().Visible (refresh=wait_for on a replica: WaitForGeneration), and
// Commit on an interval (the replica's periodic committer does, by
// CommitInterval and CommitTranslogBytes). Merges: MergedSegmentPreCopy
// sends PreCopyFiles to every replica. Recovery: on the primary take a
// Checkpoint C and RetainTranslogFrom(C.SeqNo+1); on the target
// Recover(C); then stream TranslogSnapshot(C.SeqNo) through ApplyOps (the
// target also receives new operations meanwhile; duplicates are
// harmless), release the lock, and add the copy to the in-sync set.
// Promotion: Replica.Promote(term); RetainTranslogFrom(global checkpoint +
// 1) on the new primary; on every other copy SetPrimaryTerm, Trim(term,
// new primary's max seqNo) and ApplyOps of TranslogSnapshot(global
// checkpoint); then publish a checkpoint. Every (re)assignment of a
// primary must come with a new term: a primary reopened in the same term
// could name a file it named before with other bytes (ErrFileConflict on
// replicas) and reuse checkpoint versions.
package engine
