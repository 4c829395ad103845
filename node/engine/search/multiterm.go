package search

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/sluice-search/sluice/node/engine/document"
	"github.com/sluice-search/sluice/node/engine/index"
)

// maxDisjunctionTerms is how many matching terms a multi-term query unions
// directly in a leaf; beyond it the postings are OR-ed into a bitset once
// (Lucene's rewrite threshold of 16), so a wide range costs one pass over
// its postings instead of a heap of thousands of iterators.
const maxDisjunctionTerms = 16

// TermsQuery matches docs with any of Terms in Field, with a constant score
// (1 × boost), as Elasticsearch's terms query.
type TermsQuery struct {
	Field string
	Terms [][]byte
}

func (q *TermsQuery) String() string { return fmt.Sprintf("%s:terms(%d)", q.Field, len(q.Terms)) }

func (q *TermsQuery) createWeight(qc *queryContext, mode scoreMode, boost float32) (weight, error) {
	sorted := slices.Clone(q.Terms)
	slices.SortFunc(sorted, bytes.Compare)
	sorted = slices.CompactFunc(sorted, bytes.Equal)
	return &multiTermWeight{field: q.Field, score: boost, terms: func(te index.TermsEnum, yield func()) {
		for _, t := range sorted {
			if te.SeekExact(t) {
				yield()
			}
		}
	}}, nil
}

// IDsQuery matches docs by _id (constant score).
func IDsQuery(ids [][]byte) Query {
	return &TermsQuery{Field: index.IDField, Terms: ids}
}

// RangeQuery matches docs with a term of Field in a range of the term
// dictionary's byte order, with a constant score. Lower or Upper nil means
// unbounded. Numeric fields are indexed as 8-byte sortable terms, so
// NewLongRange / NewDoubleRange give numeric ranges; keyword ranges compare
// bytes.
type RangeQuery struct {
	Field                      string
	Lower, Upper               []byte
	IncludeLower, IncludeUpper bool
}

// NewLongRange is a range over a long, date (epoch millis) or boolean field.
func NewLongRange(field string, lower, upper int64, includeLower, includeUpper bool) *RangeQuery {
	return &RangeQuery{Field: field,
		Lower: document.EncodeSortable(nil, lower), Upper: document.EncodeSortable(nil, upper),
		IncludeLower: includeLower, IncludeUpper: includeUpper}
}

// NewDoubleRange is a range over a double field.
func NewDoubleRange(field string, lower, upper float64, includeLower, includeUpper bool) *RangeQuery {
	return NewLongRange(field, document.SortableFloat64(lower), document.SortableFloat64(upper), includeLower, includeUpper)
}

func (q *RangeQuery) String() string {
	l, u := "[", "]"
	if !q.IncludeLower {
		l = "{"
	}
	if !q.IncludeUpper {
		u = "}"
	}
	return fmt.Sprintf("%s:%s%x TO %x%s", q.Field, l, q.Lower, q.Upper, u)
}

func (q *RangeQuery) createWeight(qc *queryContext, mode scoreMode, boost float32) (weight, error) {
	lower, upper := slices.Clone(q.Lower), slices.Clone(q.Upper)
	inclL, inclU := q.IncludeLower, q.IncludeUpper
	if lower != nil && upper != nil {
		if c := bytes.Compare(lower, upper); c > 0 || c == 0 && !(inclL && inclU) {
			return matchNoneWeight{}, nil
		}
	}
	return &multiTermWeight{field: q.Field, score: boost, terms: func(te index.TermsEnum, yield func()) {
		var ok bool
		if lower == nil {
			ok = te.Next()
		} else {
			switch te.SeekCeil(lower) {
			case index.SeekEnd:
				return
			case index.SeekFound:
				ok = inclL || te.Next()
			default:
				ok = true
			}
		}
		for ; ok; ok = te.Next() {
			if upper != nil {
				if c := bytes.Compare(te.Term(), upper); c > 0 || c == 0 && !inclU {
					return
				}
			}
			yield()
		}
	}}, nil
}

// multiTermWeight matches the union of the postings of the terms that
// terms() positions te on, in each leaf.
type multiTermWeight struct {
	field string
	score float32
	terms func(te index.TermsEnum, yield func())
}

func (w *multiTermWeight) count(*leafContext) int { return -1 }

func (w *multiTermWeight) scorer(lc *leafContext) (scorer, error) {
	t := lc.leaf.Reader.Terms(w.field)
	if t == nil {
		return nil, nil
	}
	te := t.Iterator()
	var its []scorer
	var bits *index.FixedBitSet
	maxDoc := lc.leaf.Reader.MaxDoc()
	w.terms(te, func() {
		if bits == nil && len(its) < maxDisjunctionTerms {
			its = append(its, newConstantScorer(te.Postings(nil, index.PostingsDocs), w.score))
			return
		}
		if bits == nil {
			bits = index.NewFixedBitSet(maxDoc)
			for _, s := range its {
				orInto(bits, s)
			}
			its = nil
		}
		orInto(bits, te.Postings(nil, index.PostingsDocs))
	})
	switch {
	case bits != nil:
		return newConstantScorer(&bitSetIterator{bits: bits, doc: -1, cost: int64(bits.Cardinality())}, w.score), nil
	case len(its) == 0:
		return nil, nil
	case len(its) == 1:
		return its[0], nil
	default:
		return &rescoredScorer{scorer: newDisjunctionScorer(its, 1, false), value: w.score}, nil
	}
}

func orInto(bits *index.FixedBitSet, it index.DocIDIterator) {
	for doc := it.NextDoc(); doc != noMoreDocs; doc = it.NextDoc() {
		bits.Set(doc)
	}
}
