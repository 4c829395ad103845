package index

import "math"

// NoMoreDocs is returned by iterators when they are exhausted.
const NoMoreDocs = math.MaxInt32

// LeafReader is the read API of one segment (Lucene's LeafReader /
// CodecReader). It is what searches run against and what a Codec writes.
type LeafReader interface {
	FieldInfos() *FieldInfos
	// MaxDoc is one more than the largest doc id, counting deleted docs.
	MaxDoc() int
	// Terms returns the terms of an indexed field, or nil if the segment
	// has no terms for it.
	Terms(field string) Terms
	// Norms returns the encoded lengths (EncodeNorm) of a field with norms,
	// or nil.
	Norms(field string) NormsReader
	// NumericDocValues returns a field's numeric doc values, or nil.
	NumericDocValues(field string) NumericDocValues
	// SortedDocValues returns a field's sorted (keyword) doc values, or nil.
	SortedDocValues(field string) SortedDocValues
	// StoredFields returns a reader of _id and _source for use by one
	// goroutine.
	StoredFields() StoredFieldsReader
}

// Terms is the term dictionary and postings of one field of one segment.
type Terms interface {
	// Iterator returns a new TermsEnum positioned before the first term.
	Iterator() TermsEnum
	// Size is the number of distinct terms.
	Size() int64
	// DocCount is the number of docs with at least one term (BM25's
	// per-field doc count).
	DocCount() int
	// SumDocFreq is the sum of DocFreq over all terms.
	SumDocFreq() int64
	// SumTotalTermFreq is the sum of TotalTermFreq over all terms (for
	// BM25's average field length); equal to SumDocFreq without freqs.
	SumTotalTermFreq() int64
	IndexOptions() IndexOptions
}

// SeekStatus is the result of TermsEnum.SeekCeil.
type SeekStatus uint8

const (
	SeekFound    SeekStatus = iota // the exact term
	SeekNotFound                   // positioned on the next greater term
	SeekEnd                        // no term is >= the target
)

// TermsEnum iterates the terms of a field in unsigned byte order.
// Term() aliases enum-owned memory valid until the next move.
type TermsEnum interface {
	// Next moves to the next term; false at the end.
	Next() bool
	// SeekExact positions on term and reports whether it exists.
	SeekExact(term []byte) bool
	// SeekCeil positions on the smallest term >= target.
	SeekCeil(target []byte) SeekStatus
	Term() []byte
	DocFreq() int
	TotalTermFreq() int64
	// Postings returns the current term's postings, reusing reuse if it
	// came from the same Terms. flags is a PostingsFlags mask of what the
	// caller will read.
	Postings(reuse PostingsEnum, flags PostingsFlags) PostingsEnum
	// Impacts is Postings plus skip-level score upper bounds, for
	// block-max WAND / MaxScore.
	Impacts(flags PostingsFlags) ImpactsEnum
}

// PostingsFlags says which parts of the postings a consumer needs, so the
// codec can skip decoding the rest.
type PostingsFlags uint8

const (
	PostingsDocs      PostingsFlags = 0
	PostingsFreqs     PostingsFlags = 1 << 0
	PostingsPositions PostingsFlags = 1<<1 | PostingsFreqs
)

// DocIDIterator is the common iteration protocol (Lucene's
// DocIdSetIterator). DocID is -1 before the first NextDoc/Advance.
type DocIDIterator interface {
	DocID() int
	NextDoc() int
	// Advance moves to the first doc >= target (target > DocID()) and
	// returns it, or NoMoreDocs. It must be sub-linear in the number of
	// docs skipped (skip data).
	Advance(target int) int
	// Cost is an upper bound on the number of docs iterated (doc freq).
	Cost() int64
}

// PostingsEnum iterates the docs of one term, with freqs and positions when
// indexed and requested.
type PostingsEnum interface {
	DocIDIterator
	// Freq is the term frequency in the current doc (1 without freqs).
	Freq() int
	// NextPosition returns the next position in the current doc; call it
	// at most Freq() times per doc. Only with PostingsPositions.
	NextPosition() int
}

// ImpactsEnum exposes per-block upper bounds of the scoring factors, so a
// top-k scorer can skip blocks that cannot compete.
type ImpactsEnum interface {
	PostingsEnum
	// AdvanceShallow moves skip data so that target is in the current
	// block, without decoding docs, and returns the last doc id covered by
	// that block (NoMoreDocs for the last block); target >= DocID().
	AdvanceShallow(target int) int
	// BlockMax returns, for the block AdvanceShallow last positioned on,
	// the maximum freq and the smallest encoded norm (EncodeNorm) of any
	// doc in it: BM25(maxFreq, minNorm) bounds every score in the block.
	BlockMax() (maxFreq int, minNorm uint8)
}

// NormsReader returns a field's encoded length per doc (0 for docs without
// the field).
type NormsReader interface {
	Norm(doc int) uint8
}

// NumericDocValues returns one int64 per doc.
type NumericDocValues interface {
	// Get returns doc's value; ok is false if the doc has none.
	Get(doc int) (v int64, ok bool)
}

// SortedDocValues maps docs to ordinals of a sorted, deduplicated term set.
type SortedDocValues interface {
	// Ord returns doc's ordinal, or -1 if the doc has no value.
	Ord(doc int) int
	// LookupOrd returns the term of an ordinal; it aliases reader memory.
	LookupOrd(ord int) []byte
	// ValueCount is the number of distinct terms.
	ValueCount() int
}

// StoredDoc is a stored document: its _id, the custom routing value it was
// indexed with (_routing; empty when it was routed by _id) and its original
// JSON _source.
type StoredDoc struct {
	ID      []byte
	Routing []byte
	Source  []byte
}

// StoredFieldsReader reads stored documents; used by one goroutine.
type StoredFieldsReader interface {
	// Document reads doc into dst, reusing dst's buffers; dst's slices are
	// valid until the next call.
	Document(doc int, dst *StoredDoc) error
}

// DocumentReader is implemented by leaf readers that read single
// documents more cheaply than a fresh StoredFieldsReader per call (random
// access: gets, fetch phases). Document copies into dst's buffers, as
// StoredFieldsReader.Document does.
type DocumentReader interface {
	Document(doc int, dst *StoredDoc) error
}
