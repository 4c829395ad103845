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
// (magic, version, generation, the translog's UUID, the previous
// generation's final size and record count, CRC). Records are
//
//	length u32 | crc u32 | prev u32 | payload
//
// with crc the CRC-32C of length, prev and payload, and prev the crc of the
// record before it (the header's for the first): every record can be
// checked on its own, and the prev chain proves their order. The payload is
// binary (type byte, uvarint seqno and term, length-prefixed id, source and
// routing).
//
// # Primary terms and trim records (format version 3)
//
// Every record carries the primary term of the primary that assigned its
// sequence number. Generation files are version 3; versions 1 and 2, whose
// records all carry term 0 (no build wrote another), are read with term 0
// as 1, the shard's first primary term. A trim record (OpTrim: a term T
// and a bound S, appended by Trim and fsynced at once) voids every record
// before it whose term is below T and whose seqno is above S: the ops an
// old primary sent a replica but never acknowledged, which the new primary
// (term T, holding everything up to S) does not have. Snapshots skip void
// records and never return trim records, so replay and peer recovery see
// only live operations; Open finds the trim records while it checks the
// generations, and TrimBelow forgets those of the generations it deletes
// (they void only older records). A build that reads only version 2
// refuses version 3 files rather than mistake a trim record for damage.
//
// translog.ckp, the checkpoint, names the current generation, the offset up
// to which it is fsynced with the number of records below it, the oldest
// generation still needed and the synced seqno range. It is rewritten on
// every sync, as Elasticsearch's translog.ckp is: the file has two fixed
// 4 KiB slots, written in turn in place (pwrite, fdatasync) with a
// sequence number and CRC; the newest valid slot wins, and a torn write
// leaves the other. Byte layouts: file.go.
//
// # Durability and group commit
//
// A sync fsyncs the current generation and then writes the checkpoint for
// what that fsync covered: the checkpoint is never ahead of the data.
// With Request durability Add (or AddBatch, one sync for a bulk) returns
// once a checkpoint covers the operation. One sync runs at a time; callers
// that arrive while it runs wait, and the first of them then syncs for all
// of them (leader/follower group commit), so concurrent writers share both
// fsyncs. With Async a goroutine syncs every SyncInterval. A failed write
// or fsync fails the translog for good: after an fsync error the file's
// state is unknown.
//
// The checkpoint costs a second device flush per sync. Measured on ext4
// over virtio in one run against the previous build (BenchmarkAdd, medians
// of 5): one writer, one op per call 137 -> 230 µs per op (1.7×); two
// writers 1.6×; bulks of 100 with two writers 1.2×; the engine's
// BenchmarkDurability, with indexing, shows no difference beyond noise.
// Rejected: a temp file, fsync, rename and directory fsync (4.1× a lone
// fsync in BenchmarkSyncCost, against 1.7× in place); overlapping one
// group's checkpoint with the next group's fsync (slower: two writers no
// longer paired into one group); a checkpoint record inside the
// generation file (one flush cannot order a checkpoint after the data it
// vouches for).
//
// # Generations
//
// Add rolls to a new generation when the current one exceeds
// GenerationSize; Roll does it on demand. After a commit, TrimBelow(seqNo)
// deletes the oldest generations whose operations are all below seqNo
// (never the current one). Snapshot(fromSeqNo) replays retained operations
// in write order, without those trim records void.
//
// # Recovery
//
// Open checks every record of the retained generations. Older generations
// were fsynced when rolled and must end exactly where the next
// generation's header says; the current one was fsynced up to the
// checkpoint's offset before the checkpoint was written, and must hold the
// records the checkpoint counted. A bad record anywhere in that is
// corruption: Open fails with an error wrapping ErrCorrupt that names the
// file and offset, never skipping it. Past the checkpoint's offset nothing
// was acknowledged as durable: the first bad record there and everything
// after it is a torn tail, truncated, logged and counted in
// Stats.TruncatedBytes (valid records before it are kept and replayed).
//
// When the newest checkpoint slot is damaged Open uses the other one, whose
// offset is only a lower bound, and then accepts no torn tail but an
// incomplete last record or a zeroed end — what a write cut short leaves —
// so a damaged acknowledged record is still corruption; both slots damaged
// fail Open. A version 1 translog (written before checkpoints on every
// sync) is read under the same lower-bound rule and continues in the new
// format.
package translog
