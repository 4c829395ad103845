// Package dwpt is the in-memory segment of the write path (Lucene's
// DocumentsWriterPerThread with FreqProxTermsWriter): one indexing goroutine
// at a time inverts parsed documents (document.Document) into it, and when
// the writer flushes, the DWPT is handed to the Codec as an index.LeafReader.
//
// Layout, chosen so the Go GC sees a handful of large pointer-free arrays
// rather than an object per posting:
//
//   - bytePool: 32 KiB byte blocks addressed by int32. Term bytes (length
//     prefixed) and postings streams live here. Each term's streams are
//     chains of slices of growing size (5, 14, 20, … 200 bytes); a full
//     slice's last 4 bytes are overwritten with the next slice's address, and
//     a zero-filled slice ends in a non-zero level marker so the writer
//     notices the end from the byte it is about to overwrite.
//   - termHash per field: open addressing over int32 term ids with stored
//     hashes (no Go strings); term ids are dense, in first-seen order.
//   - posting rows per field ([]posting, one 36-byte struct per term): stream
//     addresses, the last doc (not yet written to the doc stream), its freq,
//     last position, doc freq, total term freq.
//   - norms ([]uint8), numeric doc values ([]int64 + presence bits), sorted
//     doc values (a second termHash of values + per-doc value id), and stored
//     _id/_routing/_source appended to 256 KiB chunks.
//
// Streams: the doc stream of a text field holds (docDelta<<1 | freq==1)
// [freq]; of a docs-only field (keyword, numerics, _id) the doc delta. The
// position stream holds position deltas within a doc. The last doc of each
// term stays in its posting row until the next doc with the term arrives;
// readers emit it after the stream.
//
// Reading: FieldInfos (field 0 is always index.IDField, docs-only), Terms
// (term ids sorted by bytes once per field at first use), postings decoded
// from the slices, norms, doc values and stored fields. Deletes by _id within
// the DWPT are marked with DeleteID(id, docIDUpto) and exported as the
// segment's initial LiveDocs.
//
// RAMBytesUsed sums the capacities of everything above, so the writer's
// flush policy sees what the heap actually holds; released blocks are
// recycled through an Allocator shared by a writer's DWPTs, and full row
// pages, hash tables, stored chunks and flush-time sort arrays through
// sync.Pools (recycle.go), which keep nothing an idle writer does not reuse
// across two GCs; when nothing has been pooled for IdleRelease (30 s), a
// watcher runs those two GCs and returns the memory to the OS, rather than
// waiting for Go's forced GC every 2 minutes. A flush copies each term's position stream to the codec
// as raw bytes (AppendRawPositions): it is already in the .pos encoding.
package dwpt
