// Package index holds the concepts shared by the shard engine's parts, in
// Lucene's vocabulary: FieldInfos, SegmentInfo, the read API of a segment
// (LeafReader: Terms, TermsEnum, PostingsEnum, doc values, norms, stored
// fields), live docs, and the Codec that writes and opens segments.
//
// One read API serves three producers, so the codec writer has one input
// type: an in-memory segment being flushed (the indexing chain), a segment
// read from disk (the codec), and a merged view over several segments (the
// merger). A Codec writes any LeafReader as a new segment.
//
// Doc ids are int32-range ints local to a segment, assigned in indexing
// order; NoMoreDocs ends every iteration.
//
// Concurrency: a LeafReader is shared by many searching goroutines; the
// enums and per-call readers it hands out are used by one goroutine at a
// time.
package index
