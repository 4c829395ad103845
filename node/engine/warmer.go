package engine

import (
	"context"

	"github.com/sluice-search/sluice/node/engine/index"
)

// WarmSegment is the default merged-segment warmer (Lucene's
// SimpleMergedSegmentWarmer): before a merged segment becomes visible it
// touches, for every field, the first term and its postings, the first doc's
// norm and doc values, and the first stored document — so the first searches
// after a big merge do not stall on page faults into the new files, and a
// segment that cannot be read fails the merge instead of a search.
func WarmSegment(ctx context.Context, r index.LeafReader) error {
	infos := r.FieldInfos()
	for n := 0; n < infos.Len(); n++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		f := infos.ByNumber(n)
		if t := r.Terms(f.Name); t != nil {
			te := t.Iterator()
			if te.Next() {
				pe := te.Postings(nil, index.PostingsFreqs)
				pe.NextDoc()
				if err := enumErr(pe); err != nil {
					return err
				}
			}
			if err := enumErr(te); err != nil {
				return err
			}
		}
		if r.MaxDoc() == 0 {
			continue
		}
		if nr := r.Norms(f.Name); nr != nil {
			nr.Norm(0)
		}
		if dv := r.NumericDocValues(f.Name); dv != nil {
			dv.Get(0)
		}
		if dv := r.SortedDocValues(f.Name); dv != nil {
			if ord := dv.Ord(0); ord >= 0 {
				dv.LookupOrd(ord)
			}
		}
	}
	if r.MaxDoc() > 0 {
		var d index.StoredDoc
		if err := r.StoredFields().Document(0, &d); err != nil {
			return err
		}
	}
	return nil
}

// enumErr reports decoding errors an enum recorded, for codecs whose enums
// expose them (the Sluice10 codec does: Err() error).
func enumErr(e any) error {
	if ee, ok := e.(interface{ Err() error }); ok {
		return ee.Err()
	}
	return nil
}
