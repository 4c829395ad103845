package index

// Impact is a (freq, norm) pair of a postings block. A block's competitive
// impacts are the pairs no other doc of the block dominates (a doc with at
// least the freq and at most the norm); since BM25 depends on a doc only
// through freq and norm, the best score over them is the block's exact
// maximum score — much tighter than BM25(maxFreq, minNorm), which pairs the
// block's largest freq with its shortest doc even when no doc has both.
type Impact struct {
	Freq int
	Norm uint8 // EncodeNorm'd length
}

// BlockImpactsEnum is optionally implemented by an ImpactsEnum whose skip
// data keeps each block's competitive impacts (Lucene's Impacts). Top-k
// scorers check for it with a type assertion and fall back to BlockMax.
type BlockImpactsEnum interface {
	ImpactsEnum
	// BlockImpacts appends the competitive impacts of the block
	// AdvanceShallow last positioned on to dst and returns it.
	BlockImpacts(dst []Impact) []Impact
}

// ImpactsReuser is optionally implemented by a TermsEnum whose impacts
// enums can be recycled, as Postings recycles with its reuse argument:
// ReuseImpacts is Impacts for the current term, resetting reuse (an enum
// a TermsEnum of the same Terms returned earlier, no longer in use)
// instead of allocating when it can. Top-k searches pool their enums
// through it so a query does not allocate one per term and segment.
type ImpactsReuser interface {
	ReuseImpacts(reuse ImpactsEnum, flags PostingsFlags) ImpactsEnum
}
