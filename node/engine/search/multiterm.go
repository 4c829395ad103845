package search

import (
	"bytes"
	"fmt"
	"math"
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
	mt := &multiTermWeight{field: q.Field, score: boost, terms: func(te index.TermsEnum, yield func()) {
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
	}}
	return &rangeWeight{multiTermWeight: mt, lower: lower, upper: upper, inclL: inclL, inclU: inclU}, nil
}

// leadAwareWeight can build a cheaper scorer when it only verifies the
// candidates of a more selective required clause (Lucene's ScorerSupplier
// with a lead cost, as IndexOrDocValuesQuery uses it).
type leadAwareWeight interface {
	weight
	scorerForLead(lc *leafContext, leadCost int64) (scorer, error)
}

// dvLeadFactor: a range verifies a conjunction's candidates with doc values
// when the lead clause matches fewer than maxDoc/dvLeadFactor docs; then a
// lookup per candidate is cheaper than reading the whole range's postings.
const dvLeadFactor = 8

// rangeWeight is a term-range weight that, inside a selective
// conjunction, checks each candidate's doc value instead of reading the
// range's postings: the cost follows the lead clause, not the range (a
// match query filtered by a wide date range).
type rangeWeight struct {
	*multiTermWeight
	lower, upper []byte
	inclL, inclU bool
}

func (w *rangeWeight) scorerForLead(lc *leafContext, leadCost int64) (scorer, error) {
	r := lc.leaf.Reader
	maxDoc := r.MaxDoc()
	fi := r.FieldInfos().ByName(w.field)
	t := r.Terms(w.field)
	if fi == nil || t == nil || leadCost*dvLeadFactor >= int64(maxDoc) ||
		// Doc values hold one value per doc (the smallest): only exact
		// when every doc has a single term.
		t.SumDocFreq() != int64(t.DocCount()) {
		return w.scorer(lc)
	}
	s := &dvRangeScorer{rangeIterator: rangeIterator{doc: -1, maxDoc: maxDoc}, value: w.score}
	switch fi.DocValues {
	case index.DocValuesNumeric:
		if s.num = r.NumericDocValues(w.field); s.num == nil || !w.numericBounds(s) {
			return w.scorer(lc)
		}
	case index.DocValuesSorted:
		if s.sorted = r.SortedDocValues(w.field); s.sorted == nil {
			return w.scorer(lc)
		}
		s.lo, s.hi = 0, int64(s.sorted.ValueCount())-1
		if w.lower != nil {
			// localOrd: 2*ord if present, else 2*insertion-1.
			o := localOrd(s.sorted, w.lower)
			s.lo = (o + 1) / 2
			if o%2 == 0 && !w.inclL {
				s.lo++
			}
		}
		if w.upper != nil {
			o := localOrd(s.sorted, w.upper)
			s.hi = o / 2
			if o%2 != 0 {
				s.hi = (o - 1) / 2
			} else if !w.inclU {
				s.hi--
			}
		}
	default:
		return w.scorer(lc)
	}
	return s, nil
}

// numericBounds sets s.lo/s.hi (inclusive) from 8-byte sortable bounds;
// false if the bounds are not numeric terms.
func (w *rangeWeight) numericBounds(s *dvRangeScorer) bool {
	s.lo, s.hi = math.MinInt64, math.MaxInt64
	if w.lower != nil {
		if len(w.lower) != 8 {
			return false
		}
		s.lo = document.DecodeSortable(w.lower)
		if !w.inclL {
			if s.lo == math.MaxInt64 {
				s.hi = math.MinInt64 // empty
				return true
			}
			s.lo++
		}
	}
	if w.upper != nil {
		if len(w.upper) != 8 {
			return false
		}
		s.hi = document.DecodeSortable(w.upper)
		if !w.inclU {
			if s.hi == math.MinInt64 {
				s.lo = math.MaxInt64 // empty
				return true
			}
			s.hi--
		}
	}
	return true
}

// dvRangeScorer approximates with every doc and confirms by doc value, so
// in a conjunction it never leads and costs one lookup per candidate.
type dvRangeScorer struct {
	rangeIterator
	num    index.NumericDocValues
	sorted index.SortedDocValues
	lo, hi int64 // inclusive: values, or ordinals
	value  float32
}

func (s *dvRangeScorer) twoPhase() twoPhase        { return s }
func (s *dvRangeScorer) score() float32            { return s.value }
func (s *dvRangeScorer) advanceShallow(int) int    { return noMoreDocs }
func (s *dvRangeScorer) maxScore(upTo int) float32 { return s.value }

func (s *dvRangeScorer) matches() bool {
	var v int64
	if s.num != nil {
		var ok bool
		if v, ok = s.num.Get(s.doc); !ok {
			return false
		}
	} else {
		ord := s.sorted.Ord(s.doc)
		if ord < 0 {
			return false
		}
		v = int64(ord)
	}
	return v >= s.lo && v <= s.hi
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
	var reuse index.PostingsEnum
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
		reuse = te.Postings(reuse, index.PostingsDocs)
		orInto(bits, reuse)
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
