// Package translog is the shard's write-ahead log: every acknowledged
// operation (index, delete, no-op; with sequence number, primary term, _id,
// _source and routing) is appended here before it is acknowledged, so a
// crash loses nothing that Lucene-style segments had not yet committed.
// It is modelled on etcd's WAL (server/storage/wal) and Elasticsearch's
// Translog.
//
// # Files
//
// Generations live in translog-<gen>.tlog, each starting with a header
// (magic, version, generation, the translog's UUID, CRC). Records are
//
//	length u32 | crc u32 | prev u32 | payload
//
// with crc the CRC-32C of length, prev and payload, and prev the crc of the
// record before it (the header's for the first): every record can be
// checked on its own, and the prev chain proves their order. The payload is
// binary (type byte, uvarint seqno and term, length-prefixed id, source and
// routing).
//
// translog.ckp, the checkpoint, names the current generation, the offset up
// to which it is known durable, the oldest generation still needed and the
// seqno range. It is replaced atomically (temp file, fsync, rename, fsync
// directory) when the translog is created, rolled, trimmed or closed — not
// on every sync, which would triple the fsyncs.
//
// # Durability and group commit
//
// With Request durability Add (or AddBatch, one fsync for a bulk) returns
// once the operation is fsynced. One fsync runs at a time; callers that
// arrive while it runs wait, and the first of them then fsyncs for all of
// them (leader/follower group commit), so concurrent writers share fsyncs.
// With Async a goroutine syncs every SyncInterval. A failed write or fsync
// fails the translog for good: after an fsync error the file's state is
// unknown.
//
// # Generations
//
// Add rolls to a new generation when the current one exceeds
// GenerationSize; Roll does it on demand. After a commit, TrimBelow(seqNo)
// deletes the oldest generations whose operations are all below seqNo
// (never the current one). Snapshot(fromSeqNo) replays retained operations
// in write order.
//
// # Recovery
//
// Open checks every record of the retained generations. Older generations
// were fsynced when rolled and the current one up to the checkpoint's
// offset, so a bad record there is corruption. A bad record past that
// offset is a torn write and is truncated (logged, and counted in
// Stats.TruncatedBytes) when it runs past the end of the file, holds a
// whole zeroed 512-byte sector (as etcd's WAL reasons), or is not followed
// by any valid record; a bad record followed by a valid one is corruption
// in the middle. Corruption is never skipped: Open fails with an error
// wrapping ErrCorrupt that names the file and offset.
package translog
