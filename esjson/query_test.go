package esjson

import (
	"errors"
	"math"
	"strings"
	"testing"

	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

func str(s string) *sluicev1.FieldValue {
	return &sluicev1.FieldValue{Kind: &sluicev1.FieldValue_StringValue{StringValue: s}}
}

func long(n int64) *sluicev1.FieldValue {
	return &sluicev1.FieldValue{Kind: &sluicev1.FieldValue_LongValue{LongValue: n}}
}

func double(f float64) *sluicev1.FieldValue {
	return &sluicev1.FieldValue{Kind: &sluicev1.FieldValue_DoubleValue{DoubleValue: f}}
}

func boolean(b bool) *sluicev1.FieldValue {
	return &sluicev1.FieldValue{Kind: &sluicev1.FieldValue_BoolValue{BoolValue: b}}
}

func term(f string, v *sluicev1.FieldValue) *sluicev1.Query {
	return &sluicev1.Query{Kind: &sluicev1.Query_Term{Term: &sluicev1.TermQuery{Field: f, Value: v}}}
}

func match(q *sluicev1.MatchQuery) *sluicev1.Query {
	return &sluicev1.Query{Kind: &sluicev1.Query_Match{Match: q}}
}

func phrase(q *sluicev1.PhraseQuery) *sluicev1.Query {
	return &sluicev1.Query{Kind: &sluicev1.Query_Phrase{Phrase: q}}
}

func rangeQ(q *sluicev1.RangeQuery) *sluicev1.Query {
	return &sluicev1.Query{Kind: &sluicev1.Query_Range{Range: q}}
}

func boolQ(q *sluicev1.BoolQuery) *sluicev1.Query {
	return &sluicev1.Query{Kind: &sluicev1.Query_Bool{Bool: q}}
}

func matchAll(boost float32) *sluicev1.Query {
	return &sluicev1.Query{Kind: &sluicev1.Query_MatchAll{MatchAll: &sluicev1.MatchAllQuery{Boost: boost}}}
}

// queryCases are every query type in every form, with the JSON
// MarshalQuery writes for the message ("" when it is the input itself).
var queryCases = []jsonCase[*sluicev1.Query]{
	{"match_all", `{"match_all":{}}`, matchAll(0), ""},
	{"match_all boost", `{"match_all":{"boost":1.5}}`, matchAll(1.5), ""},

	{"match short", `{"match":{"title":"red shoes"}}`, match(&sluicev1.MatchQuery{Field: "title", Query: "red shoes"}), ""},
	{"match short number", `{"match":{"year":2000}}`, match(&sluicev1.MatchQuery{Field: "year", Query: "2000"}), `{"match":{"year":"2000"}}`},
	{"match short boolean", `{"match":{"ok":true}}`, match(&sluicev1.MatchQuery{Field: "ok", Query: "true"}), `{"match":{"ok":"true"}}`},
	{"match long query only", `{"match":{"title":{"query":"red"}}}`, match(&sluicev1.MatchQuery{Field: "title", Query: "red"}), `{"match":{"title":"red"}}`},
	{"match long", `{"match":{"title":{"query":"red shoes","operator":"and","minimum_should_match":"75%","boost":2}}}`,
		match(&sluicev1.MatchQuery{Field: "title", Query: "red shoes", Operator: sluicev1.MatchOperator_MATCH_OPERATOR_AND, MinimumShouldMatch: "75%", Boost: 2}), ""},
	{"match operator any case, msm integer", `{"match":{"title":{"query":"a b","operator":"OR","minimum_should_match":1}}}`,
		match(&sluicev1.MatchQuery{Field: "title", Query: "a b", Operator: sluicev1.MatchOperator_MATCH_OPERATOR_OR, MinimumShouldMatch: "1"}),
		`{"match":{"title":{"query":"a b","operator":"or","minimum_should_match":"1"}}}`},
	{"match boost as string", `{"match":{"t":{"query":"x","boost":"2.5"}}}`, match(&sluicev1.MatchQuery{Field: "t", Query: "x", Boost: 2.5}),
		`{"match":{"t":{"query":"x","boost":2.5}}}`},

	{"match_phrase short", `{"match_phrase":{"title":"red shoes"}}`, phrase(&sluicev1.PhraseQuery{Field: "title", Query: "red shoes"}), ""},
	{"match_phrase long", `{"match_phrase":{"title":{"query":"red shoes","slop":2,"boost":3}}}`,
		phrase(&sluicev1.PhraseQuery{Field: "title", Query: "red shoes", Slop: 2, Boost: 3}), ""},
	{"match_phrase slop as string", `{"match_phrase":{"t":{"query":"a b","slop":"1"}}}`, phrase(&sluicev1.PhraseQuery{Field: "t", Query: "a b", Slop: 1}),
		`{"match_phrase":{"t":{"query":"a b","slop":1}}}`},

	{"term short string", `{"term":{"status":"published"}}`, term("status", str("published")), ""},
	{"term short boolean", `{"term":{"published":true}}`, term("published", boolean(true)), ""},
	{"term integral number is long", `{"term":{"stock":42}}`, term("stock", long(42)), ""},
	{"term negative long", `{"term":{"delta":-7}}`, term("delta", long(-7)), ""},
	{"term fraction is double", `{"term":{"price":1.5}}`, term("price", double(1.5)), ""},
	{"term integral double keeps its fraction", `{"term":{"price":2.0}}`, term("price", double(2)), ""},
	{"term exponent is double", `{"term":{"price":1e3}}`, term("price", double(1000)), `{"term":{"price":1000.0}}`},
	{"term beyond long is double", `{"term":{"n":12345678901234567890}}`, term("n", double(12345678901234567890)), `{"term":{"n":1.2345678901234567e+19}}`},
	{"term long form", `{"term":{"sku":{"value":"A-1","boost":2}}}`,
		&sluicev1.Query{Kind: &sluicev1.Query_Term{Term: &sluicev1.TermQuery{Field: "sku", Value: str("A-1"), Boost: 2}}}, ""},
	{"term long form value only", `{"term":{"sku":{"value":"A-1"}}}`, term("sku", str("A-1")), `{"term":{"sku":"A-1"}}`},
	{"term dotted field", `{"term":{"user.id":"u1"}}`, term("user.id", str("u1")), ""},
	{"term html characters", `{"term":{"q":"<a&b>"}}`, term("q", str("<a&b>")), ""},

	{"terms", `{"terms":{"sku":["a",7,1.5,false]}}`,
		&sluicev1.Query{Kind: &sluicev1.Query_Terms{Terms: &sluicev1.TermsQuery{Field: "sku", Values: []*sluicev1.FieldValue{str("a"), long(7), double(1.5), boolean(false)}}}}, ""},
	{"terms boost before field", `{"terms":{"boost":3,"sku":["a"]}}`,
		&sluicev1.Query{Kind: &sluicev1.Query_Terms{Terms: &sluicev1.TermsQuery{Field: "sku", Values: []*sluicev1.FieldValue{str("a")}, Boost: 3}}},
		`{"terms":{"sku":["a"],"boost":3}}`},
	{"terms empty", `{"terms":{"sku":[]}}`, &sluicev1.Query{Kind: &sluicev1.Query_Terms{Terms: &sluicev1.TermsQuery{Field: "sku", Values: []*sluicev1.FieldValue{}}}}, ""},
	{"terms on a field named boost", `{"terms":{"boost":[1]}}`,
		&sluicev1.Query{Kind: &sluicev1.Query_Terms{Terms: &sluicev1.TermsQuery{Field: "boost", Values: []*sluicev1.FieldValue{long(1)}}}}, ""},

	{"range numbers", `{"range":{"price":{"gte":10,"lt":20.5}}}`, rangeQ(&sluicev1.RangeQuery{Field: "price", Gte: long(10), Lt: double(20.5)}), ""},
	{"range dates", `{"range":{"updated_at":{"gt":"2024-01-01","lte":"2024-12-31T23:59:59Z","boost":2}}}`,
		rangeQ(&sluicev1.RangeQuery{Field: "updated_at", Gt: str("2024-01-01"), Lte: str("2024-12-31T23:59:59Z"), Boost: 2}), ""},
	{"range epoch millis", `{"range":{"at":{"lt":1700000000000}}}`, rangeQ(&sluicev1.RangeQuery{Field: "at", Lt: long(1700000000000)}), ""},
	{"range keyword", `{"range":{"sku":{"gte":"a","lt":"m"}}}`, rangeQ(&sluicev1.RangeQuery{Field: "sku", Gte: str("a"), Lt: str("m")}), ""},
	{"range null bound is unbounded", `{"range":{"n":{"gte":null,"lt":5}}}`, rangeQ(&sluicev1.RangeQuery{Field: "n", Lt: long(5)}), `{"range":{"n":{"lt":5}}}`},
	{"range no bounds", `{"range":{"n":{}}}`, rangeQ(&sluicev1.RangeQuery{Field: "n"}), ""},

	{"ids", `{"ids":{"values":["1","2"]}}`, &sluicev1.Query{Kind: &sluicev1.Query_Ids{Ids: &sluicev1.IdsQuery{Values: []string{"1", "2"}}}}, ""},
	{"ids numbers and boost", `{"ids":{"values":[1,"b"],"boost":2}}`,
		&sluicev1.Query{Kind: &sluicev1.Query_Ids{Ids: &sluicev1.IdsQuery{Values: []string{"1", "b"}, Boost: 2}}}, `{"ids":{"values":["1","b"],"boost":2}}`},

	{"bool lists", `{"bool":{"must":[{"match":{"t":"x"}}],"filter":[{"term":{"a":"x"}}],"should":[{"term":{"b":1}},{"term":{"b":2}}],"must_not":[{"ids":{"values":["9"]}}],"minimum_should_match":"1","boost":2}}`,
		boolQ(&sluicev1.BoolQuery{
			Must:   []*sluicev1.Query{match(&sluicev1.MatchQuery{Field: "t", Query: "x"})},
			Filter: []*sluicev1.Query{term("a", str("x"))}, Should: []*sluicev1.Query{term("b", long(1)), term("b", long(2))},
			MustNot:            []*sluicev1.Query{{Kind: &sluicev1.Query_Ids{Ids: &sluicev1.IdsQuery{Values: []string{"9"}}}}},
			MinimumShouldMatch: "1", Boost: 2}), ""},
	{"bool single clauses and integer msm", `{"bool":{"filter":{"term":{"a":"x"}},"should":{"match_all":{}},"minimum_should_match":2}}`,
		boolQ(&sluicev1.BoolQuery{Filter: []*sluicev1.Query{term("a", str("x"))}, Should: []*sluicev1.Query{matchAll(0)}, MinimumShouldMatch: "2"}),
		`{"bool":{"filter":[{"term":{"a":"x"}}],"should":[{"match_all":{}}],"minimum_should_match":"2"}}`},
	{"bool empty", `{"bool":{}}`, boolQ(&sluicev1.BoolQuery{}), ""},
	{"bool nested", `{"bool":{"must":[{"bool":{"must_not":[{"term":{"a":1}}]}}]}}`,
		boolQ(&sluicev1.BoolQuery{Must: []*sluicev1.Query{boolQ(&sluicev1.BoolQuery{MustNot: []*sluicev1.Query{term("a", long(1))}})}}), ""},
	{"whitespace around", " \n{ \"match_all\" : { } }\n", matchAll(0), `{"match_all":{}}`},
}

func TestParseQuery(t *testing.T) {
	testParse(t, queryCases, ParseQuery)
	for _, empty := range []string{"", " \n"} {
		if q, err := ParseQuery([]byte(empty)); q != nil || err != nil {
			t.Errorf("ParseQuery(%q) = %v, %v; want nil, nil", empty, q, err)
		}
	}
}

func TestMarshalQuery(t *testing.T) {
	testMarshal(t, queryCases, ParseQuery, MarshalQuery)
	if out, err := MarshalQuery(nil); err != nil || string(out) != `{"match_all":{}}` {
		t.Errorf("MarshalQuery(nil) = %s, %v", out, err)
	}
}

func TestMarshalQueryErrors(t *testing.T) {
	nan := float32(math.NaN())
	tests := []struct {
		name string
		q    *sluicev1.Query
		want string
	}{
		{"no kind", &sluicev1.Query{}, "a query of no kind"},
		{"no kind in bool", boolQ(&sluicev1.BoolQuery{Should: []*sluicev1.Query{{}}}), "a query of no kind"},
		{"term without value", term("a", nil), "a field value of no kind"},
		{"term without field", term("", str("x")), "a [term] query without a field"},
		{"range without field", rangeQ(&sluicev1.RangeQuery{Gt: long(1)}), "a [range] query without a field"},
		{"NaN boost", matchAll(nan), "not a finite number"},
		{"infinite value", term("a", double(math.Inf(1))), "not a finite number"},
		{"unknown operator", match(&sluicev1.MatchQuery{Field: "a", Query: "x", Operator: 9}), "operator"},
		{"terms on boost with a boost", &sluicev1.Query{Kind: &sluicev1.Query_Terms{Terms: &sluicev1.TermsQuery{Field: "boost", Boost: 2}}}, "named [boost]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := MarshalQuery(tt.q)
			if !errors.Is(err, ErrInvalidQuery) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want ErrInvalidQuery containing %q", err, tt.want)
			}
		})
	}
}

func TestParseQueryErrors(t *testing.T) {
	tests := []errorCase{
		{"not an object", `[1]`, "", "query malformed, must start with start_object, got an array"},
		{"empty object", `{}`, "", "query malformed, empty clause found"},
		{"two query types", `{"term":{"a":1},"match":{"b":"x"}}`, "match", "[term] malformed query, expected [END_OBJECT] but found [FIELD_NAME]"},
		{"unknown query", `{"fuzzy":{"a":"x"}}`, "fuzzy", "unknown query [fuzzy] (Sluice supports bool, ids, match"},
		{"body not an object", `{"term":"x"}`, "term", "[term] query malformed, no start_object after query name"},
		{"bool unknown field", `{"bool":{"mus":[]}}`, "bool.mus", "[bool] unknown field [mus]"},
		{"bool named query", `{"bool":{"_name":"q1"}}`, "bool._name", "[bool] unknown field [_name]"},
		{"match_all unknown field", `{"match_all":{"x":1}}`, "match_all.x", "[match_all] unknown field [x]"},
		{"match unknown parameter", `{"match":{"title":{"query":"x","fuzziness":2}}}`, "match.title.fuzziness", "[match] query does not support [fuzziness]"},
		{"match two fields", `{"match":{"a":"x","b":"y"}}`, "match.b", "[match] query doesn't support multiple fields, found [a] and [b]"},
		{"match no field", `{"match":{}}`, "match", "[match] query requires a field"},
		{"match empty field name", `{"match":{"":"x"}}`, "match", "[match] field name is empty"},
		{"match without query", `{"match":{"title":{"operator":"and"}}}`, "match.title", "[match] requires query value"},
		{"match bad operator", `{"match":{"title":{"query":"x","operator":"xor"}}}`, "match.title.operator", `operator must be "and" or "or", got "xor"`},
		{"match text object", `{"match":{"title":{"query":{}}}}`, "match.title.query", "must be a string, number or boolean, got an object"},
		{"match fractional msm", `{"match":{"t":{"query":"x","minimum_should_match":1.5}}}`, "match.t.minimum_should_match", "must be an integer or a string, got 1.5"},
		{"match_phrase negative slop", `{"match_phrase":{"t":{"query":"x","slop":-1}}}`, "match_phrase.t.slop", "slop must be an integer from 0"},
		{"match_phrase analyzer", `{"match_phrase":{"t":{"query":"x","analyzer":"standard"}}}`, "match_phrase.t.analyzer", "[match_phrase] query does not support [analyzer]"},
		{"term null", `{"term":{"a":null}}`, "term.a", "[term] value cannot be null"},
		{"term array", `{"term":{"a":[1]}}`, "term.a", "[term] query does not support array of values"},
		{"term without value", `{"term":{"a":{"boost":1}}}`, "term.a", "[term] requires a value"},
		{"term case_insensitive", `{"term":{"a":{"value":"x","case_insensitive":true}}}`, "term.a.case_insensitive", "[term] query does not support [case_insensitive]"},
		{"term top-level boost", `{"term":{"a":"x","boost":2}}`, "term.boost", "[term] query doesn't support multiple fields, found [a] and [boost]"},
		{"term value object", `{"term":{"a":{"value":{}}}}`, "term.a.value", "[term] value must be a string, number or boolean, got an object"},
		{"term huge number", `{"term":{"a":1e999}}`, "term.a", "[term] number 1e999 is out of range"},
		{"boost not a number", `{"term":{"a":{"value":1,"boost":"high"}}}`, "term.a.boost", `[boost] must be a number, got "high"`},
		{"terms not a list", `{"terms":{"a":"x"}}`, "terms.a", "[terms] query does not support [a]"},
		{"terms lookup", `{"terms":{"a":{"index":"i","id":"1","path":"p"}}}`, "terms.a", "terms lookup"},
		{"terms two fields", `{"terms":{"a":["x"],"b":["y"]}}`, "terms.b", "[terms] query does not support multiple fields, found [a] and [b]"},
		{"terms no field", `{"terms":{"boost":2}}`, "terms", "requires a field"},
		{"terms null value", `{"terms":{"a":["x",null]}}`, "terms.a[1]", "[terms] value cannot be null"},
		{"range not an object", `{"range":{"a":5}}`, "range.a", "the bounds of [a] must be an object, got a number"},
		{"range format", `{"range":{"a":{"gte":"01/2024","format":"MM/yyyy"}}}`, "range.a.format", "[range] query does not support [format]"},
		{"range from", `{"range":{"a":{"from":1}}}`, "range.a.from", "[range] query does not support [from]"},
		{"range two fields", `{"range":{"a":{},"b":{}}}`, "range.b", "[range] query doesn't support multiple fields"},
		{"ids not a list", `{"ids":{"values":"1"}}`, "ids.values", "[ids] values must be an array"},
		{"ids boolean", `{"ids":{"values":[true]}}`, "ids.values[0]", "[ids] values must be strings"},
		{"nested path", `{"bool":{"must":[{"match_all":{}},{"bool":{"filter":{"term":{"a":[1]}}}}]}}`, "bool.must[1].bool.filter.term.a", "array of values"},
		{"nested in a list", `{"bool":{"should":[{"bool":{"must_not":[{},{"x":1}]}}]}}`, "bool.should[0].bool.must_not[0]", "empty clause"},
		{"empty clause", `{"bool":{"must":{}}}`, "bool.must", "empty clause"},
		{"too deep", strings.Repeat(`{"bool":{"must":`, 32) + `{"match_all":{}}` + strings.Repeat(`}}`, 32),
			strings.TrimSuffix(strings.Repeat("bool.must.", 31), "."), "deeper than 30"},
		{"syntax", `{"match_all":{}`, "", "[1:15] invalid JSON: unexpected end of JSON input"},
		{"syntax with position", "{\n  \"term\": {\"a\": tru}}", "", "[2:20] invalid JSON: invalid character '}' in literal true"},
		{"trailing data", `{"match_all":{}} {}`, "", "[1:18] invalid JSON: invalid character '{' after top-level value"},
		{"duplicate key", `{"bool":{"must":[],"must":[]}}`, "", "duplicate field 'must'"},
		{"deep JSON", strings.Repeat("[", 300) + strings.Repeat("]", 300), "", "nested deeper than 256 levels"},
	}
	testErrors(t, tests, ParseQuery, ErrInvalidQuery)
}

func TestErrorMessage(t *testing.T) {
	_, err := ParseQuery([]byte(`{"bool":{"must":[{"bool":{"mus":{}}}]}}`))
	if got, want := err.Error(), "invalid query: bool.must[0].bool.mus: [bool] unknown field [mus]"; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	_, err = ParseQuery([]byte(`{}`))
	if got, want := err.Error(), "invalid query: query malformed, empty clause found"; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
