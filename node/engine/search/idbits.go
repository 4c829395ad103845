package search

import "github.com/sluice-search/sluice/node/engine/index"

// IDBits marks the docs of a segment whose _id satisfies keep, walking the
// _id term dictionary (every _id is one term with one doc), so selecting a
// slice of a shard by _id hash reads no stored fields. Deleted docs are
// marked too: intersect with live docs.
func IDBits(r index.LeafReader, keep func(id []byte) bool) *index.FixedBitSet {
	b := index.NewFixedBitSet(r.MaxDoc())
	terms := r.Terms(index.IDField)
	if terms == nil {
		return b
	}
	te := terms.Iterator()
	var pe index.PostingsEnum
	for te.Next() {
		if !keep(te.Term()) {
			continue
		}
		pe = te.Postings(pe, index.PostingsDocs)
		for d := pe.NextDoc(); d != index.NoMoreDocs; d = pe.NextDoc() {
			b.Set(d)
		}
	}
	return b
}
