// Package merge is Lucene's SegmentMerger in Sluice's shape: a Reader is an
// index.LeafReader over the live docs of several segments, concatenated in
// input order and renumbered densely, so that the codec writes a merged
// segment with its ordinary WriteSegment:
//
//	view, err := merge.NewReader(ctx, inputs)
//	err = codec.WriteSegment(ctx, dir, info, view, ioctx)
//
// The view merges field infos by name (a name must keep its type, index
// options and doc-values type), term dictionaries by a k-way merge of the
// inputs' TermsEnums, postings by concatenation with remapped doc ids (and
// Advance through each input's own skip data), norms and numeric doc values
// by doc mapping, sorted doc values through an ordinal map of the values
// live docs use, and stored fields by doc mapping.
//
// DocMap(input, oldDoc) gives each input doc's new id (or -1 for a doc
// deleted when the merge started): the engine uses it to carry deletes that
// arrive while the merge runs into the merged segment.
//
// Terms whose docs were all deleted are skipped. Statistics are exact over
// live docs but computed lazily, since the codec writer recomputes them from
// what it writes: Terms.Size, DocCount, SumDocFreq and SumTotalTermFreq by a
// pass over the merged postings on first use (cached), TermsEnum.DocFreq and
// TotalTermFreq by a pass over the term's postings when asked.
package merge
