package search

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/sluice-search/sluice/node/engine/index"
)

// Query is a search query. Queries are immutable values, safe to reuse and
// share between goroutines; the node server builds them from protobuf.
type Query interface {
	// createWeight prepares the query for one search: term statistics and
	// per-leaf state. boost multiplies the query's scores.
	createWeight(qc *queryContext, mode scoreMode, boost float32) (weight, error)
	String() string
}

// scoreMode says what a search needs from scorers.
type scoreMode struct {
	scores    bool // scores are read at all
	topScores bool // only the top-k scores: block-max pruning allowed
}

var noScores = scoreMode{}

// weight is a query bound to one search; it creates a scorer per leaf.
type weight interface {
	// scorer returns the leaf's scorer, or nil when nothing can match.
	scorer(lc *leafContext) (scorer, error)
	// count returns the number of live docs matching in the leaf without
	// iterating, or -1 when that cannot be done cheaply.
	count(lc *leafContext) int
}

// leafContext is one leaf during one search.
type leafContext struct {
	ord  int
	leaf *Leaf
}

// ErrInvalidQuery marks a query that cannot be executed as built (negative
// boost, phrase positions out of order, ...). Node servers map it to
// InvalidArgument.
var ErrInvalidQuery = errors.New("invalid query")

// TermQuery matches docs containing Term in Field, scored by BM25.
type TermQuery struct {
	Field string
	Term  []byte
}

func (q *TermQuery) String() string { return fmt.Sprintf("%s:%q", q.Field, q.Term) }

func (q *TermQuery) createWeight(qc *queryContext, mode scoreMode, boost float32) (weight, error) {
	w := &termWeight{qc: qc, field: q.Field, mode: mode, enums: make([]index.TermsEnum, len(qc.s.leaves))}
	var df int64
	for i := range qc.s.leaves {
		terms := qc.s.leaves[i].Reader.Terms(q.Field)
		if terms == nil {
			continue
		}
		te := qc.termsEnum(i, q.Field, terms)
		if te.SeekExact(q.Term) {
			w.enums[i] = te
			df += int64(te.DocFreq())
			if !terms.IndexOptions().HasFreqs() {
				w.noFreqs = true
			}
		}
	}
	if df == 0 {
		return matchNoneWeight{}, nil
	}
	if mode.scores {
		fs := qc.fieldStats(q.Field)
		w.sim = bm25{weight: boost * idf(df, fs.docCount), cache: &fs.cache}
	}
	return w, nil
}

type termWeight struct {
	qc      *queryContext
	field   string
	mode    scoreMode
	enums   []index.TermsEnum
	sim     bm25
	noFreqs bool
}

func (w *termWeight) scorer(lc *leafContext) (scorer, error) {
	te := w.enums[lc.ord]
	if te == nil {
		return nil, nil
	}
	if !w.mode.scores {
		return newConstantScorer(te.Postings(nil, index.PostingsDocs), 0), nil
	}
	s := w.qc.termScorer(lc.ord, w.field)
	s.sim, s.blockEnd, s.norms = w.sim, -1, lc.leaf.Reader.Norms(w.field)
	if w.mode.topScores {
		s.imp = w.qc.impactsEnum(lc.ord, w.field, te, index.PostingsFreqs)
		s.impacts = s.impactsBuf[:0]
		s.pe = s.imp
	} else {
		s.pe = te.Postings(nil, index.PostingsFreqs)
	}
	return s, nil
}

func (w *termWeight) count(lc *leafContext) int {
	te := w.enums[lc.ord]
	if te == nil {
		return 0
	}
	if lc.leaf.Live == nil {
		return te.DocFreq()
	}
	return -1
}

// MatchAllQuery matches every live doc with a constant score (1 × boost).
type MatchAllQuery struct{}

func (q *MatchAllQuery) String() string { return "*:*" }

func (q *MatchAllQuery) createWeight(qc *queryContext, mode scoreMode, boost float32) (weight, error) {
	return matchAllWeight{score: boost}, nil
}

type matchAllWeight struct{ score float32 }

func (w matchAllWeight) scorer(lc *leafContext) (scorer, error) {
	return newConstantScorer(&rangeIterator{doc: -1, maxDoc: lc.leaf.Reader.MaxDoc()}, w.score), nil
}

func (w matchAllWeight) count(lc *leafContext) int {
	if lc.leaf.Live == nil {
		return lc.leaf.Reader.MaxDoc()
	}
	return lc.leaf.Live.Cardinality()
}

// MatchNoneQuery matches nothing (an empty analyzed match, unknown field).
type MatchNoneQuery struct{}

func (q *MatchNoneQuery) String() string { return "MatchNone" }

func (q *MatchNoneQuery) createWeight(*queryContext, scoreMode, float32) (weight, error) {
	return matchNoneWeight{}, nil
}

type matchNoneWeight struct{}

func (matchNoneWeight) scorer(*leafContext) (scorer, error) { return nil, nil }
func (matchNoneWeight) count(*leafContext) int              { return 0 }

// BoostQuery multiplies the scores of Query by Boost (>= 0).
type BoostQuery struct {
	Query Query
	Boost float32
}

func (q *BoostQuery) String() string { return fmt.Sprintf("(%v)^%g", q.Query, q.Boost) }

func (q *BoostQuery) createWeight(qc *queryContext, mode scoreMode, boost float32) (weight, error) {
	if !(q.Boost >= 0) {
		return nil, fmt.Errorf("%w: boost %v must be >= 0", ErrInvalidQuery, q.Boost)
	}
	return q.Query.createWeight(qc, mode, boost*q.Boost)
}

// ConstantScoreQuery matches what Query matches with the score 1 × boost;
// the inner query is never scored.
type ConstantScoreQuery struct {
	Query Query
}

func (q *ConstantScoreQuery) String() string { return fmt.Sprintf("ConstantScore(%v)", q.Query) }

func (q *ConstantScoreQuery) createWeight(qc *queryContext, mode scoreMode, boost float32) (weight, error) {
	inner, err := q.Query.createWeight(qc, noScores, 1)
	if err != nil {
		return nil, err
	}
	return &constantWeight{inner: inner, score: boost}, nil
}

type constantWeight struct {
	inner weight
	score float32
}

func (w *constantWeight) scorer(lc *leafContext) (scorer, error) {
	s, err := w.inner.scorer(lc)
	if s == nil || err != nil {
		return nil, err
	}
	return &rescoredScorer{scorer: s, value: w.score}, nil
}

func (w *constantWeight) count(lc *leafContext) int { return w.inner.count(lc) }

func (w *constantWeight) scorerForLead(lc *leafContext, leadCost int64) (scorer, error) {
	la, ok := w.inner.(leadAwareWeight)
	if !ok {
		return w.scorer(lc)
	}
	s, err := la.scorerForLead(lc, leadCost)
	if s == nil || err != nil {
		return nil, err
	}
	return &rescoredScorer{scorer: s, value: w.score}, nil
}

// Operator combines the terms of a match query.
type Operator uint8

const (
	OperatorOr  Operator = iota // any term (subject to minimum_should_match)
	OperatorAnd                 // every term
)

// MatchQuery builds Elasticsearch's `match` from already analyzed terms: a
// BooleanQuery of TermQuerys, SHOULD with minimum_should_match msm for OR,
// MUST for AND. No terms (everything analyzed away) matches nothing.
func MatchQuery(field string, terms [][]byte, op Operator, msm int) Query {
	if len(terms) == 0 {
		return &MatchNoneQuery{}
	}
	if len(terms) == 1 {
		return &TermQuery{Field: field, Term: terms[0]}
	}
	clauses := make([]Query, len(terms))
	for i, t := range terms {
		clauses[i] = &TermQuery{Field: field, Term: t}
	}
	if op == OperatorAnd {
		return &BooleanQuery{Must: clauses}
	}
	return &BooleanQuery{Should: clauses, MinimumShouldMatch: msm}
}

// BooleanQuery combines clauses as Elasticsearch's bool: Must clauses must
// match and score; Filter clauses must match and do not score; MustNot
// clauses must not match; Should clauses add their scores, and with no Must
// or Filter at least max(1, MinimumShouldMatch) of them must match
// (otherwise MinimumShouldMatch of them, default 0). A query with only
// MustNot clauses matches every other doc with score 0, as Elasticsearch;
// an empty query matches nothing, as Lucene (Elasticsearch's empty bool is
// match_all: the DSL compiler maps it so).
type BooleanQuery struct {
	Must, Should, MustNot, Filter []Query
	MinimumShouldMatch            int
}

func (q *BooleanQuery) String() string {
	var b strings.Builder
	b.WriteString("bool(")
	for _, part := range []struct {
		name string
		qs   []Query
	}{{"+", q.Must}, {"", q.Should}, {"-", q.MustNot}, {"#", q.Filter}} {
		for _, c := range part.qs {
			fmt.Fprintf(&b, " %s%v", part.name, c)
		}
	}
	if q.MinimumShouldMatch > 0 {
		fmt.Fprintf(&b, " msm=%d", q.MinimumShouldMatch)
	}
	b.WriteString(")")
	return b.String()
}

func (q *BooleanQuery) createWeight(qc *queryContext, mode scoreMode, boost float32) (weight, error) {
	w := &booleanWeight{msm: q.MinimumShouldMatch, mode: mode}
	if w.msm < 0 {
		return nil, fmt.Errorf("%w: minimum_should_match %d < 0", ErrInvalidQuery, w.msm)
	}
	if len(q.Must) == 0 && len(q.Filter) == 0 {
		if len(q.Should) == 0 {
			if len(q.MustNot) == 0 {
				return matchNoneWeight{}, nil
			}
			w.filter = append(w.filter, matchAllWeight{})
		} else {
			w.msm = max(w.msm, 1)
		}
	}
	if w.msm > len(q.Should) {
		return matchNoneWeight{}, nil
	}
	build := func(qs []Query, m scoreMode) ([]weight, error) {
		ws := make([]weight, 0, len(qs))
		for _, c := range qs {
			cw, err := c.createWeight(qc, m, boost)
			if err != nil {
				return nil, err
			}
			ws = append(ws, cw)
		}
		return ws, nil
	}
	var err error
	if w.must, err = build(q.Must, mode); err != nil {
		return nil, err
	}
	if w.should, err = build(q.Should, mode); err != nil {
		return nil, err
	}
	f, err := build(q.Filter, noScores)
	if err != nil {
		return nil, err
	}
	w.filter = append(w.filter, f...)
	if w.mustNot, err = build(q.MustNot, noScores); err != nil {
		return nil, err
	}
	return w, nil
}

type booleanWeight struct {
	must, should, mustNot, filter []weight
	msm                           int
	mode                          scoreMode
}

func (w *booleanWeight) scorer(lc *leafContext) (scorer, error) {
	var required, scoring []scorer
	// Filters that can verify candidates more cheaply than iterate
	// (ranges) wait until the cheapest other required clause is known.
	var deferred []leadAwareWeight
	for _, cw := range w.must {
		s, err := cw.scorer(lc)
		if s == nil || err != nil {
			return nil, err
		}
		required = append(required, s)
		scoring = append(scoring, s)
	}
	for _, cw := range w.filter {
		if la, ok := cw.(leadAwareWeight); ok && len(w.filter)+len(w.must) > 1 {
			deferred = append(deferred, la)
			continue
		}
		s, err := cw.scorer(lc)
		if s == nil || err != nil {
			return nil, err
		}
		required = append(required, s)
	}
	if len(deferred) > 0 {
		leadCost := int64(math.MaxInt64)
		for _, s := range required {
			leadCost = min(leadCost, s.Cost())
		}
		for i, la := range deferred {
			var s scorer
			var err error
			if i == 0 && len(required) == 0 {
				s, err = la.scorer(lc) // nothing else leads
			} else {
				s, err = la.scorerForLead(lc, leadCost)
			}
			if s == nil || err != nil {
				return nil, err
			}
			required = append(required, s)
			leadCost = min(leadCost, s.Cost())
		}
	}
	var optional []scorer
	for _, cw := range w.should {
		s, err := cw.scorer(lc)
		if err != nil {
			return nil, err
		}
		if s != nil {
			optional = append(optional, s)
		}
	}
	if len(optional) < w.msm {
		return nil, nil
	}
	var excluded []scorer
	for _, cw := range w.mustNot {
		s, err := cw.scorer(lc)
		if err != nil {
			return nil, err
		}
		if s != nil {
			excluded = append(excluded, s)
		}
	}

	var main scorer
	switch {
	case len(required) == 0:
		main = w.union(optional, w.msm)
	case w.msm > 0:
		// The shoulds become one more required, scoring clause.
		u := w.union(optional, w.msm)
		required = append(required, u)
		scoring = append(scoring, u)
		main = conjunction(required, scoring)
	case len(optional) > 0 && w.mode.scores:
		main = &reqOptScorer{scorer: conjunction(required, scoring), opt: exact(w.union(optional, 1))}
	default:
		main = conjunction(required, scoring)
	}
	if !w.mode.scores {
		main = &rescoredScorer{scorer: main}
	} else if len(scoring) == 0 && len(required) > 0 && len(optional) == 0 {
		// Pure filters score 0.
		main = &rescoredScorer{scorer: main}
	}
	if len(excluded) > 0 {
		ex := exact(w.union(excluded, 1))
		main = &reqExclScorer{scorer: main, reqTP: main.twoPhase(), excl: ex}
	}
	return main, nil
}

func (w *booleanWeight) union(subs []scorer, msm int) scorer {
	if len(subs) == 1 && msm <= 1 {
		return subs[0]
	}
	return newDisjunctionScorer(subs, msm, w.mode.scores)
}

func conjunction(required, scoring []scorer) scorer {
	if len(required) == 1 && len(scoring) == 1 {
		return required[0]
	}
	return newConjunctionScorer(required, scoring)
}

func (w *booleanWeight) count(lc *leafContext) int {
	// A single clause keeps its count (Elasticsearch wraps many queries in
	// a bool with one clause).
	if len(w.mustNot) == 0 && len(w.must)+len(w.filter)+len(w.should) == 1 {
		for _, ws := range [][]weight{w.must, w.filter, w.should} {
			if len(ws) == 1 {
				return ws[0].count(lc)
			}
		}
	}
	return -1
}
