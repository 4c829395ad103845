package search

import (
	"bytes"
	"fmt"
	"slices"
	"sort"

	"github.com/sluice-search/sluice/node/engine/index"
)

// Queries over doc values, for fields mapped with index: false and
// doc_values: true (Lucene's SortedNumericDocValuesField.newSlowRangeQuery
// and SortedSetDocValuesField.newSlowRangeQuery): no terms to seek, so
// every live doc of a leaf is a candidate and its column value decides.
// They are two-phase, so inside a conjunction they check only the docs the
// other clauses lead to; alone they cost one column read per live doc. The
// column read is the reader's: values updated in place (the engine's
// doc-values updates) are what they see.

// NumericDocValuesRangeQuery matches docs whose numeric doc value (long,
// date, boolean as 0/1, double as document.SortableFloat64 bits) is in
// [Lower, Upper], both inclusive.
type NumericDocValuesRangeQuery struct {
	Field        string
	Lower, Upper int64
}

func (q *NumericDocValuesRangeQuery) String() string {
	return fmt.Sprintf("%s:dv[%d TO %d]", q.Field, q.Lower, q.Upper)
}

func (q *NumericDocValuesRangeQuery) createWeight(qc *queryContext, mode scoreMode, boost float32) (weight, error) {
	if q.Lower > q.Upper {
		return matchNoneWeight{}, nil
	}
	lo, hi := q.Lower, q.Upper
	return numericWeight(q.Field, boost, func(v int64) bool { return v >= lo && v <= hi }), nil
}

// numericWeight matches the docs whose numeric doc value of field accept
// takes.
func numericWeight(field string, boost float32, accept func(int64) bool) weight {
	return &docValuesWeight{score: boost, leafMatcher: func(r index.LeafReader) func(int) bool {
		dv := r.NumericDocValues(field)
		if dv == nil {
			return nil
		}
		return func(doc int) bool {
			v, ok := dv.Get(doc)
			return ok && accept(v)
		}
	}}
}

// NumericDocValuesSetQuery matches docs whose numeric doc value is one of
// Values (a term or terms query on a doc-value-only field).
type NumericDocValuesSetQuery struct {
	Field  string
	Values []int64
}

func (q *NumericDocValuesSetQuery) String() string {
	return fmt.Sprintf("%s:dv%v", q.Field, q.Values)
}

func (q *NumericDocValuesSetQuery) createWeight(qc *queryContext, mode scoreMode, boost float32) (weight, error) {
	if len(q.Values) == 0 {
		return matchNoneWeight{}, nil
	}
	vals := slices.Clone(q.Values)
	slices.Sort(vals)
	vals = slices.Compact(vals)
	return numericWeight(q.Field, boost, func(v int64) bool {
		_, found := slices.BinarySearch(vals, v)
		return found
	}), nil
}

// SortedDocValuesRangeQuery matches docs whose keyword doc value is in the
// byte-order range; a nil bound is open.
type SortedDocValuesRangeQuery struct {
	Field                      string
	Lower, Upper               []byte
	IncludeLower, IncludeUpper bool
}

func (q *SortedDocValuesRangeQuery) String() string {
	return fmt.Sprintf("%s:dv[%q TO %q]", q.Field, q.Lower, q.Upper)
}

func (q *SortedDocValuesRangeQuery) createWeight(qc *queryContext, mode scoreMode, boost float32) (weight, error) {
	lower, upper := slices.Clone(q.Lower), slices.Clone(q.Upper)
	inclL, inclU := q.IncludeLower, q.IncludeUpper
	return &docValuesWeight{score: boost, leafMatcher: func(r index.LeafReader) func(int) bool {
		dv := r.SortedDocValues(q.Field)
		if dv == nil {
			return nil
		}
		// The ordinal range [lo, hi) whose terms are in the byte range.
		n := dv.ValueCount()
		lo, hi := 0, n
		if lower != nil {
			lo = sort.Search(n, func(i int) bool {
				c := bytes.Compare(dv.LookupOrd(i), lower)
				return c > 0 || c == 0 && inclL
			})
		}
		if upper != nil {
			hi = sort.Search(n, func(i int) bool {
				c := bytes.Compare(dv.LookupOrd(i), upper)
				return c > 0 || c == 0 && !inclU
			})
		}
		if lo >= hi {
			return nil
		}
		return func(doc int) bool {
			o := dv.Ord(doc)
			return o >= lo && o < hi
		}
	}}, nil
}

// SortedDocValuesSetQuery matches docs whose keyword doc value is one of
// Terms.
type SortedDocValuesSetQuery struct {
	Field string
	Terms [][]byte
}

func (q *SortedDocValuesSetQuery) String() string {
	return fmt.Sprintf("%s:dv%q", q.Field, q.Terms)
}

func (q *SortedDocValuesSetQuery) createWeight(qc *queryContext, mode scoreMode, boost float32) (weight, error) {
	terms := make([][]byte, len(q.Terms))
	for i, t := range q.Terms {
		terms[i] = slices.Clone(t)
	}
	return &docValuesWeight{score: boost, leafMatcher: func(r index.LeafReader) func(int) bool {
		dv := r.SortedDocValues(q.Field)
		if dv == nil {
			return nil
		}
		n := dv.ValueCount()
		var ords []int
		for _, t := range terms {
			o := sort.Search(n, func(i int) bool { return bytes.Compare(dv.LookupOrd(i), t) >= 0 })
			if o < n && bytes.Equal(dv.LookupOrd(o), t) {
				ords = append(ords, o)
			}
		}
		if len(ords) == 0 {
			return nil
		}
		slices.Sort(ords)
		return func(doc int) bool {
			_, found := slices.BinarySearch(ords, dv.Ord(doc))
			return found
		}
	}}, nil
}

// docValuesWeight matches, per leaf, the docs a predicate over the leaf's
// doc values accepts; leafMatcher returns nil when no doc of the leaf can.
type docValuesWeight struct {
	score       float32
	leafMatcher func(index.LeafReader) func(doc int) bool
}

func (w *docValuesWeight) scorer(lc *leafContext) (scorer, error) {
	m := w.leafMatcher(lc.leaf.Reader)
	if m == nil {
		return nil, nil
	}
	return &docValuesScorer{rangeIterator: rangeIterator{doc: -1, maxDoc: lc.leaf.Reader.MaxDoc()}, match: m, value: w.score}, nil
}

func (w *docValuesWeight) count(*leafContext) int { return -1 }

// docValuesScorer approximates with every doc and confirms by the column.
type docValuesScorer struct {
	rangeIterator
	match func(int) bool
	value float32
}

func (s *docValuesScorer) score() float32            { return s.value }
func (s *docValuesScorer) twoPhase() twoPhase        { return s }
func (s *docValuesScorer) matches() bool             { return s.match(s.doc) }
func (s *docValuesScorer) advanceShallow(int) int    { return noMoreDocs }
func (s *docValuesScorer) maxScore(upTo int) float32 { return s.value }
