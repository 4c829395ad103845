// Package codec is Sluice10, the segment format: a Lucene-style codec
// (index.Codec) whose readers decode straight from mmap'd file bytes.
//
// # Files of segment _N
//
// Every file starts with a header — magic "SLC1", codec name, format version,
// the 16-byte segment ID, the file's suffix — and ends with a 16-byte footer:
// footer magic, algorithm (0), CRC32 (IEEE) of everything before the CRC.
// OpenSegment checks every header and footer frame and the full checksum of
// .smt and .tim (small, and read without per-lookup checks); CheckIntegrity
// checksums everything and decodes every structure; VerifyChecksum checks
// one file's whole checksum in paced chunks (merges, the engine's scrubber
// and Verify). Readers of the other
// files bounds-check every block, so corruption becomes an error wrapping
// index.ErrCorrupt (file + offset), never a panic.
//
//   - _N.smt  metadata: maxDoc, field infos, per field the term statistics,
//     the .tim regions of its FST and term metadata, norms and doc-values
//     encodings with their offsets, and the stored-fields block index's
//     offset. Fixed by the writer, parsed once at open.
//   - _N.tim  per field: a term-metadata block followed by a vellum FST
//     mapping each term to the offset of its metadata entry. The FST is
//     loaded in place from the mmap'd bytes. Entry: docFreq, ttf-docFreq
//     (with freqs), then
//     docFreq == 1 ("pulsing"): the doc itself, pos offset, norm byte — an
//     _id lookup is one FST seek and no postings read;
//     one block (<= 128 docs): .doc offset, .pos offset, the block's
//     competitive impacts (below; omitted when the field has neither
//     freqs nor norms);
//     more blocks: .doc offset, .pos offset, offset of the skip entries.
//   - _N.doc  per term: blocks of 128 docs — width byte + doc deltas-1
//     frame-of-reference bit-packed (package packed), width byte + freqs-1
//     packed — then a tail of < 128 docs as vints (delta-1 <<1 | freq==1,
//     freq if not 1); then, for terms of more than one block, one fixed
//     29-byte skip entry per block: last doc u32, max freq u32, block
//     offset u64, positions offset u64, min norm u8, impacts offset u32;
//     then the impacts region: each block's competitive impacts, which the
//     impacts offset points into. Advance gallops + binary-searches the
//     entries (logarithmic in the distance skipped) and decodes only the
//     target block; AdvanceShallow/BlockMax/BlockImpacts read entries and
//     impacts without decoding docs.
//
// # Impacts
//
// A block's competitive impacts (Lucene's impacts) are its (freq, norm)
// pairs that no other doc of the block dominates — a doc with at least the
// freq and at most the norm. BM25 grows with freq and falls with length,
// so the best score over them is the block's exact max score for any
// query's idf and avgdl, where BM25(max freq, min norm) pairs the largest
// freq with the shortest doc even when no doc has both: on the corpus's
// frequent terms that loose bound let many times more blocks through
// block-max pruning. The writer finds the set per block with a best-freq-
// per-norm table and one pass over the norms in order (impactAccumulator),
// caps it at 32 pairs by merging the two pairs closest in norm into one
// dominating both (coarser, still a bound; real blocks stay well below),
// and encodes it: uvarint count, then per pair, from (freq 0, norm -1),
// uvarint((freqDelta-1)<<1 | normDelta != 1) and, if that bit is set,
// uvarint(normDelta-2) — one or two bytes a pair. The skip entry keeps max
// freq and min norm too, so BlockMax stays a fixed-offset read. The skip
// data has one level: a scorer's bound beyond the current block is the
// term's global max score.
//   - _N.pos  positions as vint deltas per doc, read lazily: docs whose
//     positions are not read are skipped by counting vint terminators.
//   - _N.nvd  norms per field: constant, dense (one byte per doc) or sparse
//     (doc list + bytes, when fewer than 1/8 of docs have a nonzero norm).
//   - _N.dvd  numeric doc values: all docs / presence bitset / sparse doc
//     list, values as (v-min)/gcd or as indexes into a table of <= 256
//     values, bit-packed with random access by one unaligned 8-byte load.
//     Sorted doc values: u32 offsets + term bytes, and ord+1 per doc
//     bit-packed (0 = no value).
//   - _N.fdt  stored fields (_id, _routing, _source) in blocks of >= 16
//     KiB compressed with S2 (default) or zstd-fastest, then a (first doc,
//     offset) index. A doc is uvarint(len(_id)<<1 | hasRouting), _id, the
//     routing (uvarint length + bytes) only if the flag is set, then
//     uvarint len(_source), _source: docs routed by _id pay nothing for
//     _routing. A StoredFieldsReader caches its last decompressed block, so
//     reading docs in order decompresses each block once.
//   - _N_<gen>.liv  live docs: maxDoc and the bitset's words; checksummed
//     in full when read.
//
// # Versions
//
// The header's format version is 4 since doc-values updates files (.dvu)
// hold fixed-width arrays read in place (version 1-3 .dvu files hold
// varints and are decoded onto the heap); version 3 made postings keep
// impacts; version 2 added _routing to stored fields. Older files stay readable: version 1
// .fdt files have no flag bit in the _id length; version 1-2 .doc skip
// entries are 25 bytes (no impacts offset, no impacts region) and one-block
// terms' metadata holds maxFreq (with freqs) and minNorm (with norms)
// instead of impacts — their impacts enums offer BlockMax only, not
// index.BlockImpactsEnum. testdata/golden holds a small segment of every
// version (from 2 on with multi-block postings); TestGoldenSegments opens
// each one (regenerate the current one with -update-golden after a format
// change, and bump formatVersion when the bytes change). CheckIntegrity
// recomputes every block's impacts from its docs and norms.
//
// # Choices, measured
//
// S2 is the default stored-fields compressor: on corpus _source blocks of
// 16 KiB zstd-fastest reaches ratio 2.3 vs S2's 1.55 but compresses ~2.7x
// and decompresses ~2x slower (BenchmarkStoredCompression); flush and fetch
// speed are the targets, as with Lucene's LZ4 default. CompressionZstd is
// the best_compression option; BenchmarkFlushCorpus shows the flush of 20k
// corpus docs running ~2.3x faster with S2 (706 vs 474 stored B/doc).
// Positions are vints (~10 ns per position read, contended CPU): they are
// read only by phrase queries and a packed layout costs more on the write
// path. .fdt is mmap'd with MADV_RANDOM (store.Advise): cold fetches
// measured 2-4x faster without read-ahead; other files keep the default.
//
// Flushing a DWPT: its position streams are already in the .pos encoding
// (per doc, freq uvarint deltas from 0), so a source whose TermsEnum offers
// AppendRawPositions hands each term's stream over whole; the writer only
// decodes docs and freqs, counts varints to find where each 128-doc block
// starts and checks the stream holds exactly the term's total freq.
// TestRawPositionsSameSegment checks the result is byte-identical to
// decoding; on the corpus a flush takes ~20% less CPU. The per-term and
// per-field scratch (term metadata, FST buffer and builder) is pooled
// across segments, so a flush makes little garbage.
//
// The empty term is allowed (Lucene allows it; the FST stores it).
//
// Read paths allocate nothing in steady state: enums are reused through
// Postings' reuse argument, SeekExact uses a vellum.Reader with a
// preallocated state, stored documents are copied into the caller's
// buffers. Enums record corruption met while decoding in an Err() error
// method (beyond the index interfaces) and end with NoMoreDocs.
package codec
