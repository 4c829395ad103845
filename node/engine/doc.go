// Package engine is the shard engine's write and refresh path, modelled on
// Lucene's IndexWriter / DocumentsWriter / StandardDirectoryReader and
// Elasticsearch's InternalEngine: an Engine indexes JSON documents by _id,
// makes them searchable at refresh, and hands out ref-counted point-in-time
// Readers.
//
// # Write path
//
// An operation (IndexWriter.Add, Update, Delete; Engine.Index, Delete) checks
// out a DWPT (dwpt.DWPT, the in-memory segment) from a free list — at most
// one goroutine uses a DWPT at a time, none owns one — inverts its document
// into it without any lock, then enters one short critical section
// (IndexWriter.sequence) that:
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
//   - checks the DWPT in and runs the flush policy.
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
package engine
