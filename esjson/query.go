package esjson

import (
	"errors"
	"fmt"
	"math"
	"strconv"

	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// ErrInvalidQuery is the Kind of every query DSL error.
var ErrInvalidQuery = errors.New("invalid query")

// maxQueryDepth bounds bool nesting, as Elasticsearch's
// indices.query.bool.max_nested_depth (default 30) does.
const maxQueryDepth = 30

// queryNames are the query types Sluice supports, for messages.
const queryNames = "bool, ids, match, match_all, match_phrase, range, term, terms"

var queryDoc = doc{ErrInvalidQuery}

// ParseQuery reads a query in the Elasticsearch query DSL, such as
// {"bool": {"filter": {"term": {"status": "published"}}}}. Empty input is a
// nil query (match all). Every problem is an *Error of Kind
// ErrInvalidQuery naming its path.
func ParseQuery(data []byte) (*sluicev1.Query, error) {
	v, err := queryDoc.decode(data)
	if v == nil {
		return nil, err
	}
	return parseQuery("", v, 0)
}

// parseQuery reads {"<type>": <body>}.
func parseQuery(path string, v *value, depth int) (*sluicev1.Query, error) {
	if depth > maxQueryDepth {
		return nil, queryDoc.errorf(path, "the query nests deeper than %d bool queries (Elasticsearch's indices.query.bool.max_nested_depth)", maxQueryDepth)
	}
	switch {
	case v.kind != kObject:
		return nil, queryDoc.errorf(path, "query malformed, must start with start_object, got %s", v.typeName())
	case len(v.members) == 0:
		return nil, queryDoc.errorf(path, "query malformed, empty clause found")
	case len(v.members) > 1:
		return nil, queryDoc.errorf(join(path, v.members[1].key), "[%s] malformed query, expected [END_OBJECT] but found [FIELD_NAME]", v.members[0].key)
	}
	name, body := v.members[0].key, v.members[0].val
	path = join(path, name)
	var parse func(path string, body *value) (*sluicev1.Query, error)
	switch name {
	case "match_all":
		parse = parseMatchAll
	case "match":
		parse = parseMatch
	case "match_phrase":
		parse = parsePhrase
	case "term":
		parse = parseTerm
	case "terms":
		parse = parseTerms
	case "range":
		parse = parseRange
	case "ids":
		parse = parseIDs
	case "bool":
		parse = func(path string, body *value) (*sluicev1.Query, error) { return parseBool(path, body, depth) }
	default:
		return nil, queryDoc.errorf(path, "unknown query [%s] (Sluice supports %s)", name, queryNames)
	}
	if body.kind != kObject {
		return nil, queryDoc.errorf(path, "[%s] query malformed, no start_object after query name", name)
	}
	return parse(path, body)
}

func parseMatchAll(path string, v *value) (*sluicev1.Query, error) {
	q := &sluicev1.MatchAllQuery{}
	err := queryDoc.params(path, v, unknownField("match_all"), map[string]setter{"boost": boostParam(&q.Boost)})
	return &sluicev1.Query{Kind: &sluicev1.Query_MatchAll{MatchAll: q}}, err
}

func parseIDs(path string, v *value) (*sluicev1.Query, error) {
	q := &sluicev1.IdsQuery{}
	err := queryDoc.params(path, v, unknownField("ids"), map[string]setter{
		"values": func(path string, v *value) error {
			if v.kind != kArray {
				return queryDoc.errorf(path, "[ids] values must be an array, got %s", v.typeName())
			}
			for i, e := range v.elems {
				s, ok := e.scalarText()
				if !ok || e.kind == kBool {
					return queryDoc.errorf(index(path, i), "[ids] values must be strings, got %s", e.typeName())
				}
				q.Values = append(q.Values, s)
			}
			return nil
		},
		"boost": boostParam(&q.Boost),
	})
	return &sluicev1.Query{Kind: &sluicev1.Query_Ids{Ids: q}}, err
}

// How Elasticsearch words an unknown parameter of a query: "unknown
// field" for the queries it parses declaratively (bool, ids, match_all),
// "query does not support" for the others.
func unknownField(query string) func(string) string {
	return func(key string) string { return fmt.Sprintf("[%s] unknown field [%s]", query, key) }
}

func notSupported(query string) func(string) string {
	return func(key string) string { return fmt.Sprintf("[%s] query does not support [%s]", query, key) }
}

// fieldBody reads the {"<field>": <body>} of a single-field query.
func fieldBody(path, query string, v *value) (field string, body *value, err error) {
	switch {
	case len(v.members) == 0:
		return "", nil, queryDoc.errorf(path, "[%s] query requires a field", query)
	case len(v.members) > 1:
		return "", nil, queryDoc.errorf(join(path, v.members[1].key), "[%s] query doesn't support multiple fields, found [%s] and [%s]",
			query, v.members[0].key, v.members[1].key)
	case v.members[0].key == "":
		return "", nil, queryDoc.errorf(path, "[%s] field name is empty", query)
	}
	return v.members[0].key, v.members[0].val, nil
}

// textParam reads the text of a match or match_phrase; numbers and
// booleans are taken as their text, as Elasticsearch does.
func textParam(query string, dst *string) setter {
	return func(path string, v *value) error {
		s, ok := v.scalarText()
		if !ok {
			return queryDoc.errorf(path, "[%s] query text must be a string, number or boolean, got %s", query, v.typeName())
		}
		*dst = s
		return nil
	}
}

func parseMatch(path string, v *value) (*sluicev1.Query, error) {
	q := &sluicev1.MatchQuery{}
	err := parseText(path, "match", v, &q.Field, &q.Query, map[string]setter{
		"operator": func(path string, v *value) error {
			switch v.lowerOneOf("and", "or") {
			case "or":
				q.Operator = sluicev1.MatchOperator_MATCH_OPERATOR_OR
			case "and":
				q.Operator = sluicev1.MatchOperator_MATCH_OPERATOR_AND
			default:
				return queryDoc.errorf(path, "[match] operator must be \"and\" or \"or\", got %s", describe(v))
			}
			return nil
		},
		"minimum_should_match": msmParam(&q.MinimumShouldMatch),
		"boost":                boostParam(&q.Boost),
	})
	return &sluicev1.Query{Kind: &sluicev1.Query_Match{Match: q}}, err
}

func parsePhrase(path string, v *value) (*sluicev1.Query, error) {
	q := &sluicev1.PhraseQuery{}
	err := parseText(path, "match_phrase", v, &q.Field, &q.Query, map[string]setter{
		"slop": func(path string, v *value) error {
			n, ok := v.int(32)
			if !ok || n < 0 {
				return queryDoc.errorf(path, "[match_phrase] slop must be an integer from 0 to %d, got %s", math.MaxInt32, describe(v))
			}
			q.Slop = int32(n)
			return nil
		},
		"boost": boostParam(&q.Boost),
	})
	return &sluicev1.Query{Kind: &sluicev1.Query_Phrase{Phrase: q}}, err
}

// parseText reads the field and text of a match or match_phrase query, in
// the short form ({"<field>": "text"}) or the long one, whose parameters
// besides "query" are more.
func parseText(path, query string, v *value, field, text *string, more map[string]setter) error {
	f, body, err := fieldBody(path, query, v)
	if err != nil {
		return err
	}
	*field = f
	path = join(path, f)
	if body.kind != kObject {
		return textParam(query, text)(path, body)
	}
	hasQuery := false
	more["query"] = func(path string, v *value) error {
		hasQuery = true
		return textParam(query, text)(path, v)
	}
	if err := queryDoc.params(path, body, notSupported(query), more); err != nil {
		return err
	}
	if !hasQuery {
		return queryDoc.errorf(path, "[%s] requires query value", query)
	}
	return nil
}

func parseTerm(path string, v *value) (*sluicev1.Query, error) {
	field, body, err := fieldBody(path, "term", v)
	if err != nil {
		return nil, err
	}
	q := &sluicev1.TermQuery{Field: field}
	out := &sluicev1.Query{Kind: &sluicev1.Query_Term{Term: q}}
	path = join(path, field)
	if body.kind == kArray {
		return nil, queryDoc.errorf(path, "[term] query does not support array of values (use a terms query)")
	}
	if body.kind != kObject {
		q.Value, err = fieldValue(path, "term", body)
		return out, err
	}
	err = queryDoc.params(path, body, notSupported("term"), map[string]setter{
		"value": func(path string, v *value) (err error) {
			q.Value, err = fieldValue(path, "term", v)
			return err
		},
		"boost": boostParam(&q.Boost),
	})
	if err == nil && q.Value == nil {
		err = queryDoc.errorf(path, "[term] requires a value")
	}
	return out, err
}

func parseTerms(path string, v *value) (*sluicev1.Query, error) {
	q := &sluicev1.TermsQuery{}
	for _, m := range v.members {
		mpath := join(path, m.key)
		switch {
		case m.key == "boost" && m.val.kind != kArray: // a field may be named boost
			if err := boostParam(&q.Boost)(mpath, m.val); err != nil {
				return nil, err
			}
			continue
		case m.val.kind == kObject:
			return nil, queryDoc.errorf(mpath, "[terms] query does not support a terms lookup")
		case m.val.kind != kArray:
			return nil, queryDoc.errorf(mpath, "[terms] query does not support [%s]: the values of a field must be an array, got %s", m.key, m.val.typeName())
		case q.Field != "" || q.Values != nil:
			return nil, queryDoc.errorf(mpath, "[terms] query does not support multiple fields, found [%s] and [%s]", q.Field, m.key)
		case m.key == "":
			return nil, queryDoc.errorf(path, "[terms] field name is empty")
		}
		q.Field = m.key
		q.Values = []*sluicev1.FieldValue{}
		for i, e := range m.val.elems {
			fv, err := fieldValue(index(mpath, i), "terms", e)
			if err != nil {
				return nil, err
			}
			q.Values = append(q.Values, fv)
		}
	}
	if q.Values == nil {
		return nil, queryDoc.errorf(path, "[terms] query requires a field with an array of values")
	}
	return &sluicev1.Query{Kind: &sluicev1.Query_Terms{Terms: q}}, nil
}

func parseRange(path string, v *value) (*sluicev1.Query, error) {
	field, body, err := fieldBody(path, "range", v)
	if err != nil {
		return nil, err
	}
	q := &sluicev1.RangeQuery{Field: field}
	path = join(path, field)
	if body.kind != kObject {
		return nil, queryDoc.errorf(path, "[range] query malformed, the bounds of [%s] must be an object, got %s", field, body.typeName())
	}
	bound := func(dst **sluicev1.FieldValue) setter {
		return func(path string, v *value) (err error) {
			if v.kind == kNull { // unbounded, as in Elasticsearch
				*dst = nil
				return nil
			}
			*dst, err = fieldValue(path, "range", v)
			return err
		}
	}
	err = queryDoc.params(path, body, notSupported("range"), map[string]setter{
		"gt": bound(&q.Gt), "gte": bound(&q.Gte), "lt": bound(&q.Lt), "lte": bound(&q.Lte),
		"boost": boostParam(&q.Boost),
	})
	return &sluicev1.Query{Kind: &sluicev1.Query_Range{Range: q}}, err
}

func parseBool(path string, v *value, depth int) (*sluicev1.Query, error) {
	q := &sluicev1.BoolQuery{}
	clauses := func(dst *[]*sluicev1.Query) setter {
		return func(path string, v *value) error {
			if v.kind != kArray { // one clause without a list
				c, err := parseQuery(path, v, depth+1)
				*dst = append(*dst, c)
				return err
			}
			for i, e := range v.elems {
				c, err := parseQuery(index(path, i), e, depth+1)
				if err != nil {
					return err
				}
				*dst = append(*dst, c)
			}
			return nil
		}
	}
	err := queryDoc.params(path, v, unknownField("bool"), map[string]setter{
		"must":                 clauses(&q.Must),
		"should":               clauses(&q.Should),
		"must_not":             clauses(&q.MustNot),
		"filter":               clauses(&q.Filter),
		"minimum_should_match": msmParam(&q.MinimumShouldMatch),
		"boost":                boostParam(&q.Boost),
	})
	return &sluicev1.Query{Kind: &sluicev1.Query_Bool{Bool: q}}, err
}

// fieldValue reads a term, terms or range value: strings stay strings,
// integral numbers are longs and other numbers doubles; the cluster
// converts them to the field's type.
func fieldValue(path, query string, v *value) (*sluicev1.FieldValue, error) {
	switch v.kind {
	case kString:
		return &sluicev1.FieldValue{Kind: &sluicev1.FieldValue_StringValue{StringValue: v.text}}, nil
	case kBool:
		return &sluicev1.FieldValue{Kind: &sluicev1.FieldValue_BoolValue{BoolValue: v.b}}, nil
	case kNumber:
		if n, err := strconv.ParseInt(v.text, 10, 64); err == nil {
			return &sluicev1.FieldValue{Kind: &sluicev1.FieldValue_LongValue{LongValue: n}}, nil
		}
		f, err := strconv.ParseFloat(v.text, 64)
		if err != nil {
			return nil, queryDoc.errorf(path, "[%s] number %s is out of range", query, v.text)
		}
		return &sluicev1.FieldValue{Kind: &sluicev1.FieldValue_DoubleValue{DoubleValue: f}}, nil
	case kNull:
		return nil, queryDoc.errorf(path, "[%s] value cannot be null", query)
	}
	return nil, queryDoc.errorf(path, "[%s] value must be a string, number or boolean, got %s", query, v.typeName())
}

// boostParam reads a boost: a finite float, or a numeric string.
func boostParam(dst *float32) setter {
	return func(path string, v *value) error {
		f, ok := v.float(32)
		if !ok || math.IsInf(f, 0) || math.IsNaN(f) {
			return queryDoc.errorf(path, "[boost] must be a number, got %s", describe(v))
		}
		*dst = float32(f)
		return nil
	}
}

// msmParam reads minimum_should_match: an integer or a string ("75%").
func msmParam(dst *string) setter {
	return func(path string, v *value) error {
		_, isInt := v.int(64)
		switch {
		case v.kind == kString:
			*dst = v.text
		case v.kind == kNumber && isInt:
			*dst = v.text
		default:
			return queryDoc.errorf(path, "[minimum_should_match] must be an integer or a string, got %s", describe(v))
		}
		return nil
	}
}

// describe shows a bad value in a message: scalars as written, containers
// by type.
func describe(v *value) string {
	switch v.kind {
	case kString:
		return strconv.Quote(v.text)
	case kNumber:
		return v.text
	case kBool:
		return strconv.FormatBool(v.b)
	}
	return v.typeName()
}

// MarshalQuery writes q in the Elasticsearch query DSL, in the short forms
// where they say everything; ParseQuery reads it back to an equal message.
// A nil query is {"match_all": {}}. What the DSL cannot say (a query of no
// kind, a query without its field, a number that is not finite) is an
// error.
func MarshalQuery(q *sluicev1.Query) ([]byte, error) {
	if q == nil {
		return []byte(`{"match_all":{}}`), nil
	}
	var w queryWriter
	v := w.query(q)
	if w.err != nil {
		return nil, w.err
	}
	return marshal(v), nil
}

// queryWriter builds the JSON of a query; the first problem sticks in err.
type queryWriter struct{ err error }

func (w *queryWriter) fail(format string, args ...any) {
	if w.err == nil {
		w.err = fmt.Errorf("%w: %s", ErrInvalidQuery, fmt.Sprintf(format, args...))
	}
}

func (w *queryWriter) query(q *sluicev1.Query) obj {
	switch k := q.GetKind().(type) {
	case *sluicev1.Query_MatchAll:
		return obj{{"match_all", w.boost(obj{}, k.MatchAll.GetBoost())}}
	case *sluicev1.Query_Match:
		m := k.Match
		long := obj{{"query", m.GetQuery()}}
		switch m.GetOperator() {
		case sluicev1.MatchOperator_MATCH_OPERATOR_UNSPECIFIED:
		case sluicev1.MatchOperator_MATCH_OPERATOR_AND:
			long = append(long, kv{"operator", "and"})
		case sluicev1.MatchOperator_MATCH_OPERATOR_OR:
			long = append(long, kv{"operator", "or"})
		default:
			w.fail("[match] operator %v", m.GetOperator())
		}
		if msm := m.GetMinimumShouldMatch(); msm != "" {
			long = append(long, kv{"minimum_should_match", msm})
		}
		return w.field("match", m.GetField(), m.GetQuery(), w.boost(long, m.GetBoost()))
	case *sluicev1.Query_Phrase:
		p := k.Phrase
		long := obj{{"query", p.GetQuery()}}
		if p.GetSlop() != 0 {
			long = append(long, kv{"slop", number(strconv.Itoa(int(p.GetSlop())))})
		}
		return w.field("match_phrase", p.GetField(), p.GetQuery(), w.boost(long, p.GetBoost()))
	case *sluicev1.Query_Term:
		t := k.Term
		v := w.value(t.GetValue())
		return w.field("term", t.GetField(), v, w.boost(obj{{"value", v}}, t.GetBoost()))
	case *sluicev1.Query_Terms:
		t := k.Terms
		values := make([]any, len(t.GetValues()))
		for i, fv := range t.GetValues() {
			values[i] = w.value(fv)
		}
		if t.GetField() == "boost" && t.GetBoost() != 0 {
			w.fail("a [terms] query on a field named [boost] cannot carry a boost")
		}
		w.named("terms", t.GetField())
		return obj{{"terms", w.boost(obj{{t.GetField(), values}}, t.GetBoost())}}
	case *sluicev1.Query_Range:
		r := k.Range
		var bounds obj
		for _, b := range []struct {
			name string
			v    *sluicev1.FieldValue
		}{{"gt", r.GetGt()}, {"gte", r.GetGte()}, {"lt", r.GetLt()}, {"lte", r.GetLte()}} {
			if b.v != nil {
				bounds = append(bounds, kv{b.name, w.value(b.v)})
			}
		}
		w.named("range", r.GetField())
		return obj{{"range", obj{{r.GetField(), w.boost(bounds, r.GetBoost())}}}}
	case *sluicev1.Query_Bool:
		b := k.Bool
		out := obj{}
		for _, c := range []struct {
			name    string
			clauses []*sluicev1.Query
		}{{"must", b.GetMust()}, {"filter", b.GetFilter()}, {"should", b.GetShould()}, {"must_not", b.GetMustNot()}} {
			if len(c.clauses) == 0 {
				continue
			}
			list := make([]any, len(c.clauses))
			for i, q := range c.clauses {
				list[i] = w.query(q)
			}
			out = append(out, kv{c.name, list})
		}
		if msm := b.GetMinimumShouldMatch(); msm != "" {
			out = append(out, kv{"minimum_should_match", msm})
		}
		return obj{{"bool", w.boost(out, b.GetBoost())}}
	case *sluicev1.Query_Ids:
		values := make([]any, len(k.Ids.GetValues()))
		for i, id := range k.Ids.GetValues() {
			values[i] = id
		}
		return obj{{"ids", w.boost(obj{{"values", values}}, k.Ids.GetBoost())}}
	}
	w.fail("a query of no kind")
	return obj{}
}

// field writes {"<query>": {"<field>": short}} when the long form says no
// more than its "query" or "value", else {"<query>": {"<field>": long}}.
func (w *queryWriter) field(query, field string, short any, long obj) obj {
	w.named(query, field)
	if len(long) == 1 {
		return obj{{query, obj{{field, short}}}}
	}
	return obj{{query, obj{{field, long}}}}
}

func (w *queryWriter) named(query, field string) {
	if field == "" {
		w.fail("a [%s] query without a field", query)
	}
}

func (w *queryWriter) boost(o obj, boost float32) obj {
	switch {
	case math.IsInf(float64(boost), 0) || math.IsNaN(float64(boost)):
		w.fail("boost %v is not a finite number", boost)
	case boost != 0 || math.Signbit(float64(boost)): // -0 too, to read back exactly
		o = append(o, kv{"boost", float32Number(boost)})
	}
	return o
}

// value writes a field value so that fieldValue reads it back the same.
func (w *queryWriter) value(fv *sluicev1.FieldValue) any {
	switch k := fv.GetKind().(type) {
	case *sluicev1.FieldValue_StringValue:
		return k.StringValue
	case *sluicev1.FieldValue_BoolValue:
		return k.BoolValue
	case *sluicev1.FieldValue_LongValue:
		return number(strconv.FormatInt(k.LongValue, 10))
	case *sluicev1.FieldValue_DoubleValue:
		if n, ok := doubleNumber(k.DoubleValue); ok {
			return n
		}
		w.fail("value %v is not a finite number", k.DoubleValue)
		return number("0")
	}
	w.fail("a field value of no kind")
	return number("0")
}
