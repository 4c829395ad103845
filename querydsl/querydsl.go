package querydsl

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"

	"github.com/sluice-search/sluice/node/engine/analysis"
	"github.com/sluice-search/sluice/node/engine/document"
	"github.com/sluice-search/sluice/node/engine/index"
	"github.com/sluice-search/sluice/node/engine/mapping"
	"github.com/sluice-search/sluice/node/engine/search"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// ErrInvalid marks a query, sort or mapping that cannot be translated.
var ErrInvalid = errors.New("invalid request")

// Error is a translation problem concerning one field ("" for the request
// as a whole).
type Error struct {
	Field  string
	Reason string
}

func (e *Error) Error() string {
	if e.Field == "" {
		return e.Reason
	}
	return fmt.Sprintf("field [%s]: %s", e.Field, e.Reason)
}

// Unwrap makes errors.Is(err, ErrInvalid) true.
func (e *Error) Unwrap() error { return ErrInvalid }

// ErrorField names the field (rpc.FieldError).
func (e *Error) ErrorField() string { return e.Field }

func invalid(field, format string, args ...any) error {
	return &Error{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// The query limits, Elasticsearch's (8.x) defaults:
const (
	// MaxClauses bounds the clauses of a whole query: every query in it,
	// and every term a match query analyses to (Elasticsearch's
	// indices.query.bool.max_clause_count, which counts the rewritten
	// Lucene query tree).
	MaxClauses = 4096
	// MaxDepth bounds how deep queries nest in bool queries
	// (indices.query.bool.max_nested_depth), so a hostile query cannot
	// exhaust the stack.
	MaxDepth = 30
	// MaxTerms bounds the values of one terms or ids query, which count as
	// one clause (index.max_terms_count).
	MaxTerms = 65536
)

// Compiler translates queries against one mapping. It is cheap to build and
// safe for concurrent use.
type Compiler struct {
	Mapping *mapping.Mapping
	// Strict rejects fields the mapping does not have; otherwise they match
	// nothing.
	Strict bool

	clauses *int // counted by one Compile
}

// Compile translates q; nil (or a Query with no kind set) matches all.
func (c Compiler) Compile(q *sluicev1.Query) (search.Query, error) {
	if c.Mapping == nil {
		return nil, invalid("", "no mapping")
	}
	c.clauses = new(int)
	return c.compile(q, 0)
}

// count adds n clauses to the query's count.
func (c Compiler) count(n int) error {
	if *c.clauses += n; *c.clauses > MaxClauses {
		return invalid("", "the query has more than %d clauses (queries, and the terms match queries analyse to)", MaxClauses)
	}
	return nil
}

func (c Compiler) compile(q *sluicev1.Query, depth int) (search.Query, error) {
	if depth > MaxDepth {
		return nil, invalid("", "queries nest deeper than %d levels in bool queries", MaxDepth)
	}
	if q == nil {
		return &search.MatchAllQuery{}, nil
	}
	if err := c.count(1); err != nil {
		return nil, err
	}
	switch k := q.Kind.(type) {
	case nil:
		return &search.MatchAllQuery{}, nil
	case *sluicev1.Query_MatchAll:
		return boosted(&search.MatchAllQuery{}, k.MatchAll.GetBoost(), "")
	case *sluicev1.Query_Match:
		return c.match(k.Match)
	case *sluicev1.Query_Term:
		return c.term(k.Term)
	case *sluicev1.Query_Terms:
		return c.terms(k.Terms)
	case *sluicev1.Query_Bool:
		return c.boolean(k.Bool, depth)
	case *sluicev1.Query_Range:
		return c.rangeQuery(k.Range)
	case *sluicev1.Query_Phrase:
		return c.phrase(k.Phrase)
	case *sluicev1.Query_Ids:
		ids := k.Ids.GetValues()
		if len(ids) > MaxTerms {
			return nil, invalid("_id", "%d ids exceed the limit of %d", len(ids), MaxTerms)
		}
		terms := make([][]byte, len(ids))
		for i, id := range ids {
			terms[i] = []byte(id)
		}
		return boosted(search.IDsQuery(terms), k.Ids.GetBoost(), "_id")
	default:
		return nil, invalid("", "unsupported query kind %T", k)
	}
}

// boosted wraps q in a BoostQuery unless boost is 0 (unset) or 1.
func boosted(q search.Query, boost float32, field string) (search.Query, error) {
	switch {
	case boost < 0 || math.IsNaN(float64(boost)) || math.IsInf(float64(boost), 0):
		return nil, invalid(field, "boost must be a finite number >= 0, got %v", boost)
	case boost == 0 || boost == 1:
		return q, nil
	}
	return &search.BoostQuery{Query: q, Boost: boost}, nil
}

// field looks a field up; ok is false (with a nil error) when a lenient
// compiler should match nothing.
func (c Compiler) field(name string) (mapping.Field, bool, error) {
	if name == "" {
		return mapping.Field{}, false, invalid("", "field is required")
	}
	if name == IDField {
		return mapping.NewField(document.Keyword), true, nil
	}
	f, ok := c.Mapping.Field(name)
	if !ok {
		if c.Strict {
			return f, false, invalid(name, "no such field in the mapping")
		}
		return f, false, nil
	}
	if !f.Index && !f.DocValues {
		return f, false, invalid(name, "cannot search a field that is neither indexed nor has doc values (index: false, doc_values: false)")
	}
	return f, true, nil
}

func (c Compiler) match(m *sluicev1.MatchQuery) (search.Query, error) {
	f, ok, err := c.field(m.GetField())
	if !ok {
		return matchNone(err)
	}
	if f.Type != document.Text {
		// A keyword or numeric field is matched by its whole value.
		q, err := termQuery(m.Field, f, []*sluicev1.FieldValue{{Kind: &sluicev1.FieldValue_StringValue{StringValue: m.GetQuery()}}})
		if err != nil {
			return nil, err
		}
		return boosted(q, m.GetBoost(), m.Field)
	}
	toks, err := analyze(m.Field, f, m.GetQuery())
	if err != nil {
		return nil, err
	}
	terms := make([][]byte, 0, len(toks))
	seen := make(map[string]bool, len(toks))
	for _, t := range toks {
		// A repeated word is one clause, as Lucene's QueryBuilder.
		if !seen[string(t.Term)] {
			seen[string(t.Term)] = true
			terms = append(terms, t.Term)
		}
	}
	// Each term beyond the first is a clause of the rewritten query.
	if err := c.count(max(0, len(terms)-1)); err != nil {
		return nil, err
	}
	op := search.OperatorOr
	if m.GetOperator() == sluicev1.MatchOperator_MATCH_OPERATOR_AND {
		op = search.OperatorAnd
	}
	msm := 0
	if s := m.GetMinimumShouldMatch(); s != "" {
		if op == search.OperatorAnd {
			return nil, invalid(m.Field, "minimum_should_match needs operator OR")
		}
		if msm, err = MinimumShouldMatch(s, len(terms)); err != nil {
			return nil, invalid(m.Field, "%v", err)
		}
	}
	return boosted(search.MatchQuery(m.Field, terms, op, msm), m.GetBoost(), m.Field)
}

func (c Compiler) phrase(p *sluicev1.PhraseQuery) (search.Query, error) {
	f, ok, err := c.field(p.GetField())
	if !ok {
		return matchNone(err)
	}
	if p.GetSlop() < 0 {
		return nil, invalid(p.Field, "slop must be >= 0, got %d", p.GetSlop())
	}
	if f.Type != document.Text {
		if f.Type == document.Keyword {
			q, err := termQuery(p.Field, f, []*sluicev1.FieldValue{{Kind: &sluicev1.FieldValue_StringValue{StringValue: p.GetQuery()}}})
			if err != nil {
				return nil, err
			}
			return boosted(q, p.GetBoost(), p.Field)
		}
		return nil, invalid(p.Field, "phrase queries need a text or keyword field, not [%s]", f.Type)
	}
	toks, err := analyze(p.Field, f, p.GetQuery())
	if err != nil {
		return nil, err
	}
	if len(toks) == 0 {
		return &search.MatchNoneQuery{}, nil
	}
	pq := &search.PhraseQuery{Field: p.Field, Slop: int(p.GetSlop()),
		Terms: make([][]byte, len(toks)), Positions: make([]int, len(toks))}
	for i, t := range toks {
		pq.Terms[i] = t.Term
		pq.Positions[i] = int(t.Position - toks[0].Position)
	}
	return boosted(pq, p.GetBoost(), p.Field)
}

func (c Compiler) term(t *sluicev1.TermQuery) (search.Query, error) {
	f, ok, err := c.field(t.GetField())
	if !ok {
		return matchNone(err)
	}
	q, err := termQuery(t.Field, f, []*sluicev1.FieldValue{t.GetValue()})
	if err != nil {
		return nil, err
	}
	return boosted(q, t.GetBoost(), t.Field)
}

// convertAll converts every value with conv.
func convertAll[T any](field string, f mapping.Field, values []*sluicev1.FieldValue,
	conv func(string, mapping.Field, *sluicev1.FieldValue) (T, error)) ([]T, error) {
	out := make([]T, len(values))
	for i, v := range values {
		var err error
		if out[i], err = conv(field, f, v); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// termQuery matches docs whose field holds one of values: through the
// inverted index when the field is indexed, else (index: false,
// doc_values: true) through its doc values, with a constant score.
func termQuery(field string, f mapping.Field, values []*sluicev1.FieldValue) (search.Query, error) {
	if !f.Index && f.Type.Numeric() {
		nums, err := convertAll(field, f, values, Value)
		if err != nil {
			return nil, err
		}
		return &search.NumericDocValuesSetQuery{Field: field, Values: nums}, nil
	}
	terms, err := convertAll(field, f, values, Term)
	if err != nil {
		return nil, err
	}
	if !f.Index {
		return &search.SortedDocValuesSetQuery{Field: field, Terms: terms}, nil
	}
	if len(terms) == 1 {
		return &search.TermQuery{Field: field, Term: terms[0]}, nil
	}
	return &search.TermsQuery{Field: field, Terms: terms}, nil
}

func (c Compiler) terms(t *sluicev1.TermsQuery) (search.Query, error) {
	f, ok, err := c.field(t.GetField())
	if !ok {
		return matchNone(err)
	}
	if len(t.GetValues()) > MaxTerms {
		return nil, invalid(t.Field, "%d terms exceed the limit of %d", len(t.GetValues()), MaxTerms)
	}
	if !f.Index {
		q, err := termQuery(t.Field, f, t.GetValues())
		if err != nil {
			return nil, err
		}
		return boosted(q, t.GetBoost(), t.Field)
	}
	terms := make([][]byte, len(t.GetValues()))
	for i, v := range t.GetValues() {
		if terms[i], err = Term(t.Field, f, v); err != nil {
			return nil, err
		}
	}
	return boosted(&search.TermsQuery{Field: t.Field, Terms: terms}, t.GetBoost(), t.Field)
}

func (c Compiler) boolean(b *sluicev1.BoolQuery, depth int) (search.Query, error) {
	n := len(b.GetMust()) + len(b.GetShould()) + len(b.GetMustNot()) + len(b.GetFilter())
	if n > MaxClauses {
		return nil, invalid("", "the query has more than %d clauses (queries, and the terms match queries analyse to)", MaxClauses)
	}
	var (
		out search.BooleanQuery
		err error
	)
	for _, part := range []struct {
		in  []*sluicev1.Query
		out *[]search.Query
	}{{b.GetMust(), &out.Must}, {b.GetShould(), &out.Should}, {b.GetMustNot(), &out.MustNot}, {b.GetFilter(), &out.Filter}} {
		for _, sub := range part.in {
			q, err := c.compile(sub, depth+1)
			if err != nil {
				return nil, err
			}
			*part.out = append(*part.out, q)
		}
	}
	if s := b.GetMinimumShouldMatch(); s != "" {
		if out.MinimumShouldMatch, err = MinimumShouldMatch(s, len(out.Should)); err != nil {
			return nil, invalid("minimum_should_match", "%v", err)
		}
	}
	if n == 0 {
		// An empty bool matches everything, as Elasticsearch.
		return boosted(&search.MatchAllQuery{}, b.GetBoost(), "")
	}
	return boosted(&out, b.GetBoost(), "")
}

func (c Compiler) rangeQuery(r *sluicev1.RangeQuery) (search.Query, error) {
	f, ok, err := c.field(r.GetField())
	if !ok {
		return matchNone(err)
	}
	if r.Gt != nil && r.Gte != nil || r.Lt != nil && r.Lte != nil {
		return nil, invalid(r.Field, "a range takes at most one lower bound (gt or gte) and one upper bound (lt or lte)")
	}
	lowerV, inclL := r.Gte, true
	if r.Gt != nil {
		lowerV, inclL = r.Gt, false
	}
	upperV, inclU := r.Lte, true
	if r.Lt != nil {
		upperV, inclU = r.Lt, false
	}
	q := &search.RangeQuery{Field: r.Field}
	switch {
	case f.Type.Numeric():
		lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
		if lowerV != nil {
			if lo, inclL, err = bound(r.Field, f, lowerV, inclL, true); err != nil {
				return nil, err
			}
		}
		if upperV != nil {
			if hi, inclU, err = bound(r.Field, f, upperV, inclU, false); err != nil {
				return nil, err
			}
		}
		if !f.Index {
			// Doc values hold the bounds inclusive: step exclusive ones in.
			if lowerV != nil && !inclL {
				if lo == math.MaxInt64 {
					return &search.MatchNoneQuery{}, nil
				}
				lo++
			}
			if upperV != nil && !inclU {
				if hi == math.MinInt64 {
					return &search.MatchNoneQuery{}, nil
				}
				hi--
			}
			return boosted(&search.ConstantScoreQuery{Query: &search.NumericDocValuesRangeQuery{Field: r.Field, Lower: lo, Upper: hi}}, r.GetBoost(), r.Field)
		}
		q = search.NewLongRange(r.Field, lo, hi, inclL || lowerV == nil, inclU || upperV == nil)
	default: // keyword, text: byte order of the terms
		if lowerV != nil {
			if q.Lower, err = Term(r.Field, f, lowerV); err != nil {
				return nil, err
			}
		}
		if upperV != nil {
			if q.Upper, err = Term(r.Field, f, upperV); err != nil {
				return nil, err
			}
		}
		q.IncludeLower, q.IncludeUpper = inclL, inclU
		if !f.Index {
			dq := &search.SortedDocValuesRangeQuery{Field: r.Field, Lower: q.Lower, Upper: q.Upper, IncludeLower: inclL, IncludeUpper: inclU}
			return boosted(&search.ConstantScoreQuery{Query: dq}, r.GetBoost(), r.Field)
		}
	}
	return boosted(&search.ConstantScoreQuery{Query: q}, r.GetBoost(), r.Field)
}

// bound converts a numeric range bound to the field's int64 form. A
// fractional bound on a long or date field is rounded inward and made
// inclusive (gt 4.5 is gte 5), so no integer is wrongly in or out.
func bound(field string, f mapping.Field, v *sluicev1.FieldValue, incl, lower bool) (int64, bool, error) {
	if d, ok := v.Kind.(*sluicev1.FieldValue_DoubleValue); ok && (f.Type == document.Long || f.Type == document.Date) {
		x := d.DoubleValue
		if math.IsNaN(x) {
			return 0, false, invalid(field, "range bound is NaN")
		}
		if x != math.Trunc(x) {
			if lower {
				x = math.Ceil(x)
			} else {
				x = math.Floor(x)
			}
			incl = true
		}
		if x >= math.MaxInt64 || x < math.MinInt64 {
			return 0, false, invalid(field, "range bound %v is out of range for [%s]", d.DoubleValue, f.Type)
		}
		return int64(x), incl, nil
	}
	n, err := Value(field, f, v)
	return n, incl, err
}

func matchNone(err error) (search.Query, error) {
	if err != nil {
		return nil, err
	}
	return &search.MatchNoneQuery{}, nil
}

// Term converts v to the indexed term of field f: the bytes of a keyword or
// text term, or the sortable 8-byte encoding of a numeric value.
func Term(field string, f mapping.Field, v *sluicev1.FieldValue) ([]byte, error) {
	if v == nil || v.Kind == nil {
		return nil, invalid(field, "a value is required")
	}
	if f.Type == document.Keyword || f.Type == document.Text {
		switch k := v.Kind.(type) {
		case *sluicev1.FieldValue_StringValue:
			return []byte(k.StringValue), nil
		case *sluicev1.FieldValue_LongValue:
			return strconv.AppendInt(nil, k.LongValue, 10), nil
		case *sluicev1.FieldValue_DoubleValue:
			return strconv.AppendFloat(nil, k.DoubleValue, 'g', -1, 64), nil
		case *sluicev1.FieldValue_BoolValue:
			return strconv.AppendBool(nil, k.BoolValue), nil
		}
	}
	n, err := Value(field, f, v)
	if err != nil {
		return nil, err
	}
	return document.EncodeSortable(nil, n), nil
}

// Value converts v to the int64 a numeric field (long, double as sortable
// bits, date as epoch millis, boolean as 0/1) holds.
func Value(field string, f mapping.Field, v *sluicev1.FieldValue) (int64, error) {
	if v == nil || v.Kind == nil {
		return 0, invalid(field, "a value is required")
	}
	bad := func(reason string) error {
		return invalid(field, "cannot use %s as a [%s] value: %s", describe(v), f.Type, reason)
	}
	switch f.Type {
	case document.Long:
		switch k := v.Kind.(type) {
		case *sluicev1.FieldValue_LongValue:
			return k.LongValue, nil
		case *sluicev1.FieldValue_DoubleValue:
			x := k.DoubleValue
			if x != math.Trunc(x) || x >= math.MaxInt64 || x < math.MinInt64 {
				return 0, bad("not an integer in range")
			}
			return int64(x), nil
		case *sluicev1.FieldValue_StringValue:
			s := strings.TrimSpace(k.StringValue)
			if n, err := strconv.ParseInt(s, 10, 64); err == nil {
				return n, nil
			}
			x, err := strconv.ParseFloat(s, 64)
			if err != nil || x != math.Trunc(x) || x >= math.MaxInt64 || x < math.MinInt64 {
				return 0, bad("not an integer")
			}
			return int64(x), nil
		}
		return 0, bad("not a number")
	case document.Double:
		var x float64
		switch k := v.Kind.(type) {
		case *sluicev1.FieldValue_LongValue:
			x = float64(k.LongValue)
		case *sluicev1.FieldValue_DoubleValue:
			x = k.DoubleValue
		case *sluicev1.FieldValue_StringValue:
			var err error
			if x, err = strconv.ParseFloat(strings.TrimSpace(k.StringValue), 64); err != nil {
				return 0, bad("not a number")
			}
		default:
			return 0, bad("not a number")
		}
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return 0, bad("not a finite number")
		}
		return document.SortableFloat64(x), nil
	case document.Date:
		switch k := v.Kind.(type) {
		case *sluicev1.FieldValue_LongValue:
			return k.LongValue, nil
		case *sluicev1.FieldValue_DoubleValue:
			if k.DoubleValue != math.Trunc(k.DoubleValue) {
				return 0, bad("epoch milliseconds must be an integer")
			}
			return int64(k.DoubleValue), nil
		case *sluicev1.FieldValue_StringValue:
			ms, err := ParseDate(k.StringValue)
			if err != nil {
				return 0, bad(err.Error())
			}
			return ms, nil
		}
		return 0, bad("not a date")
	case document.Boolean:
		switch k := v.Kind.(type) {
		case *sluicev1.FieldValue_BoolValue:
			return b2i(k.BoolValue), nil
		case *sluicev1.FieldValue_StringValue:
			switch k.StringValue {
			case "true":
				return 1, nil
			case "false", "":
				return 0, nil
			}
		}
		return 0, bad("not true or false")
	}
	return 0, bad("not a numeric field")
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func describe(v *sluicev1.FieldValue) string {
	switch k := v.Kind.(type) {
	case *sluicev1.FieldValue_StringValue:
		return strconv.Quote(k.StringValue)
	case *sluicev1.FieldValue_LongValue:
		return strconv.FormatInt(k.LongValue, 10)
	case *sluicev1.FieldValue_DoubleValue:
		return strconv.FormatFloat(k.DoubleValue, 'g', -1, 64)
	case *sluicev1.FieldValue_BoolValue:
		return strconv.FormatBool(k.BoolValue)
	}
	return "nothing"
}

// MinimumShouldMatch resolves an Elasticsearch minimum_should_match spec
// ("2", "-1", "75%", "-25%") against n optional clauses, clamped to [0, n].
func MinimumShouldMatch(spec string, n int) (int, error) {
	s := strings.TrimSpace(spec)
	pct := strings.HasSuffix(s, "%")
	s = strings.TrimSuffix(s, "%")
	v, err := strconv.Atoi(s)
	if err != nil || s == "" {
		return 0, fmt.Errorf("minimum_should_match %q is not an integer or a percentage", spec)
	}
	var m int
	switch {
	case pct && (v > 100 || v < -100):
		return 0, fmt.Errorf("minimum_should_match %q is more than 100%%", spec)
	case pct && v >= 0:
		m = n * v / 100
	case pct:
		m = n - n*(-v)/100
	case v >= 0:
		m = v
	default:
		m = n + v
	}
	return max(0, min(m, n)), nil
}

// analyzers pools Analyzers by name: they are not safe for concurrent use
// and some (standard) carry segmentation state worth reusing.
var analyzers sync.Map // name -> *sync.Pool

func analyze(field string, f mapping.Field, text string) ([]document.Token, error) {
	name := f.Analyzer
	if name == "" {
		name = "standard"
	}
	p, _ := analyzers.LoadOrStore(name, &sync.Pool{})
	pool := p.(*sync.Pool)
	a, _ := pool.Get().(analysis.Analyzer)
	if a == nil {
		var err error
		if a, err = analysis.New(name); err != nil {
			return nil, invalid(field, "%v", err)
		}
	}
	var b analysis.Buffer
	a.Analyze(&b, []byte(text), 0)
	pool.Put(a)
	return b.Tokens, nil
}

// IDField is the document id's pseudo-field: term, terms and range take it
// as a keyword.
const IDField = index.IDField
