package querydsl_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/sluice-search/sluice/node/engine"
	"github.com/sluice-search/sluice/node/engine/document"
	"github.com/sluice-search/sluice/node/engine/index"
	"github.com/sluice-search/sluice/node/engine/mapping"
	"github.com/sluice-search/sluice/node/engine/search"
	"github.com/sluice-search/sluice/node/shard"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
	"github.com/sluice-search/sluice/querydsl"
	"google.golang.org/protobuf/proto"
)

func testMapping(t testing.TB) *mapping.Mapping { return testMappingOf(t, false) }

// testMappingOf is the test mapping; with docValuesOnly its keyword and
// numeric fields are index: false, doc_values: true, searched through
// their columns.
func testMappingOf(t testing.TB, docValuesOnly bool) *mapping.Mapping {
	t.Helper()
	field := func(tp document.FieldType) mapping.Field {
		f := mapping.NewField(tp)
		if docValuesOnly && tp != document.Text {
			f.Index = false
		}
		return f
	}
	m, err := mapping.New(mapping.DynamicStrict, map[string]mapping.Field{
		"title": field(document.Text),
		"tag":   field(document.Keyword),
		"n":     field(document.Long),
		"price": field(document.Double),
		"day":   field(document.Date),
		"ok":    field(document.Boolean),
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

var docs = []string{
	`{"title":"The quick brown fox","tag":"a","n":1,"price":1.5,"day":"2024-01-01","ok":true}`,
	`{"title":"quick brown dogs","tag":"b","n":2,"price":2.5,"day":"2024-02-01","ok":false}`,
	`{"title":"the lazy dog sleeps","tag":"c","n":3,"price":-3.25,"day":"2024-03-01T10:00:00Z","ok":true}`,
	`{"title":"fox and dog","tag":"a","n":42,"price":100,"day":1700000000000}`,
	`{"title":"brown","n":-7}`,
}

// openSearcherOf indexes docs into a real shard of mapping m and returns a
// searcher over its refreshed reader.
func openSearcherOf(t *testing.T, m *mapping.Mapping) (*search.Searcher, *engine.Reader) {
	t.Helper()
	ctx := context.Background()
	h, err := shard.NewHost(shard.HostOptions{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.CloseAll(ctx) })
	s, err := h.Open(ctx, shard.Meta{ID: shard.ID{IndexUUID: "u", Shard: 0}, Index: "i", Mapping: m})
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range docs {
		if _, err := s.IndexDoc(ctx, fmt.Appendf(nil, "%d", i), []byte(d), false); err != nil {
			t.Fatalf("doc %d: %v", i, err)
		}
	}
	if err := s.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	r := s.Acquire()
	t.Cleanup(r.Release)
	return search.NewSearcher(r.Leaves()), r
}

func ids(t *testing.T, s *search.Searcher, r *engine.Reader, q search.Query) []string {
	t.Helper()
	td, err := s.Search(context.Background(), q, search.Request{Size: 100})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, h := range td.Hits {
		leaf := 0
		for i, l := range r.Leaves() {
			if h.Doc >= l.DocBase {
				leaf = i
			}
		}
		var sd index.StoredDoc
		if err := r.Document(leaf, h.Doc-r.Leaves()[leaf].DocBase, &sd); err != nil {
			t.Fatal(err)
		}
		out = append(out, string(sd.ID))
	}
	slices.Sort(out)
	return out
}

func str(s string) *sluicev1.FieldValue {
	return &sluicev1.FieldValue{Kind: &sluicev1.FieldValue_StringValue{StringValue: s}}
}
func long(n int64) *sluicev1.FieldValue {
	return &sluicev1.FieldValue{Kind: &sluicev1.FieldValue_LongValue{LongValue: n}}
}
func dbl(f float64) *sluicev1.FieldValue {
	return &sluicev1.FieldValue{Kind: &sluicev1.FieldValue_DoubleValue{DoubleValue: f}}
}
func match(field, text string) *sluicev1.Query {
	return &sluicev1.Query{Kind: &sluicev1.Query_Match{Match: &sluicev1.MatchQuery{Field: field, Query: text}}}
}
func term(field string, v *sluicev1.FieldValue) *sluicev1.Query {
	return &sluicev1.Query{Kind: &sluicev1.Query_Term{Term: &sluicev1.TermQuery{Field: field, Value: v}}}
}
func rng(field string, r *sluicev1.RangeQuery) *sluicev1.Query {
	r.Field = field
	return &sluicev1.Query{Kind: &sluicev1.Query_Range{Range: r}}
}
func boolQ(b *sluicev1.BoolQuery) *sluicev1.Query {
	return &sluicev1.Query{Kind: &sluicev1.Query_Bool{Bool: b}}
}

// TestCompileOverRealShard runs every query on indexed fields and again
// with the keyword and numeric fields doc-value-only (index: false): the
// column queries must match exactly what the term queries do.
func TestCompileOverRealShard(t *testing.T) {
	for _, dvOnly := range []bool{false, true} {
		t.Run(fmt.Sprintf("doc_values_only=%t", dvOnly), func(t *testing.T) {
			m := testMappingOf(t, dvOnly)
			s, r := openSearcherOf(t, m)
			compileOverShard(t, s, r, querydsl.Compiler{Mapping: m, Strict: true})
		})
	}
}

func compileOverShard(t *testing.T, s *search.Searcher, r *engine.Reader, c querydsl.Compiler) {
	for _, tc := range []struct {
		name string
		q    *sluicev1.Query
		want []string
	}{
		{"nil matches all", nil, []string{"0", "1", "2", "3", "4"}},
		{"match analyzes", match("title", "QUICK Fox"), []string{"0", "1", "3"}},
		{"match and", &sluicev1.Query{Kind: &sluicev1.Query_Match{Match: &sluicev1.MatchQuery{Field: "title", Query: "quick fox", Operator: sluicev1.MatchOperator_MATCH_OPERATOR_AND}}}, []string{"0"}},
		{"match msm 2", &sluicev1.Query{Kind: &sluicev1.Query_Match{Match: &sluicev1.MatchQuery{Field: "title", Query: "quick brown fox", MinimumShouldMatch: "2"}}}, []string{"0", "1"}},
		{"match msm 67%", &sluicev1.Query{Kind: &sluicev1.Query_Match{Match: &sluicev1.MatchQuery{Field: "title", Query: "quick brown fox", MinimumShouldMatch: "67%"}}}, []string{"0", "1"}},
		{"match on keyword is a term", match("tag", "a"), []string{"0", "3"}},
		{"match on long", match("n", "42"), []string{"3"}},
		{"term keyword", term("tag", str("b")), []string{"1"}},
		{"term long from string", term("n", str("42")), []string{"3"}},
		{"term long from double", term("n", dbl(2)), []string{"1"}},
		{"term negative long", term("n", long(-7)), []string{"4"}},
		{"term double", term("price", dbl(-3.25)), []string{"2"}},
		{"term double from long", term("price", long(100)), []string{"3"}},
		{"term bool", term("ok", &sluicev1.FieldValue{Kind: &sluicev1.FieldValue_BoolValue{BoolValue: true}}), []string{"0", "2"}},
		{"term date string", term("day", str("2024-02-01")), []string{"1"}},
		{"term _id", term("_id", str("4")), []string{"4"}},
		{"terms", &sluicev1.Query{Kind: &sluicev1.Query_Terms{Terms: &sluicev1.TermsQuery{Field: "n", Values: []*sluicev1.FieldValue{long(1), str("3"), long(99)}}}}, []string{"0", "2"}},
		{"range long", rng("n", &sluicev1.RangeQuery{Gte: long(1), Lt: long(3)}), []string{"0", "1"}},
		{"range long negative open", rng("n", &sluicev1.RangeQuery{Lte: long(1)}), []string{"0", "4"}},
		{"range long fractional", rng("n", &sluicev1.RangeQuery{Gt: dbl(1.5), Lte: dbl(3.9)}), []string{"1", "2"}},
		{"range double", rng("price", &sluicev1.RangeQuery{Gt: dbl(-4), Lt: dbl(2)}), []string{"0", "2"}},
		{"range date", rng("day", &sluicev1.RangeQuery{Gte: str("2024-01-15"), Lt: str("2024-03-01T10:00:00Z")}), []string{"1"}},
		{"range keyword", rng("tag", &sluicev1.RangeQuery{Gt: str("a")}), []string{"1", "2"}},
		{"phrase", &sluicev1.Query{Kind: &sluicev1.Query_Phrase{Phrase: &sluicev1.PhraseQuery{Field: "title", Query: "Quick Brown"}}}, []string{"0", "1"}},
		{"phrase slop", &sluicev1.Query{Kind: &sluicev1.Query_Phrase{Phrase: &sluicev1.PhraseQuery{Field: "title", Query: "quick fox", Slop: 1}}}, []string{"0"}},
		{"ids", &sluicev1.Query{Kind: &sluicev1.Query_Ids{Ids: &sluicev1.IdsQuery{Values: []string{"1", "3", "nope"}}}}, []string{"1", "3"}},
		{"bool must filter must_not", boolQ(&sluicev1.BoolQuery{
			Must:    []*sluicev1.Query{match("title", "dog dogs")},
			Filter:  []*sluicev1.Query{rng("n", &sluicev1.RangeQuery{Gte: long(2)})},
			MustNot: []*sluicev1.Query{term("tag", str("c"))}}), []string{"1", "3"}},
		{"bool should msm", boolQ(&sluicev1.BoolQuery{
			Should:             []*sluicev1.Query{term("tag", str("a")), match("title", "fox"), term("ok", str("true"))},
			MinimumShouldMatch: "2"}), []string{"0", "3"}},
		{"bool only must_not", boolQ(&sluicev1.BoolQuery{MustNot: []*sluicev1.Query{term("tag", str("a"))}}), []string{"1", "2", "4"}},
		{"empty bool", boolQ(&sluicev1.BoolQuery{}), []string{"0", "1", "2", "3", "4"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, err := c.Compile(tc.q)
			if err != nil {
				t.Fatal(err)
			}
			if got := ids(t, s, r, q); !slices.Equal(got, tc.want) {
				t.Fatalf("%v: got %v, want %v", q, got, tc.want)
			}
		})
	}
}

func TestCompileErrorsNameTheField(t *testing.T) {
	c := querydsl.Compiler{Mapping: testMapping(t), Strict: true}
	for _, tc := range []struct {
		name, field string
		q           *sluicev1.Query
	}{
		{"unknown field", "nope", match("nope", "x")},
		{"long from text", "n", term("n", str("forty"))},
		{"long from fraction", "n", term("n", dbl(1.5))},
		{"bad date", "day", term("day", str("yesterday"))},
		{"bad bool", "ok", term("ok", str("yes"))},
		{"double NaN string", "price", term("price", str("x"))},
		{"phrase on long", "n", &sluicev1.Query{Kind: &sluicev1.Query_Phrase{Phrase: &sluicev1.PhraseQuery{Field: "n", Query: "1"}}}},
		{"bad msm", "title", &sluicev1.Query{Kind: &sluicev1.Query_Match{Match: &sluicev1.MatchQuery{Field: "title", Query: "a b", MinimumShouldMatch: "lots"}}}},
		{"two lower bounds", "n", rng("n", &sluicev1.RangeQuery{Gt: long(1), Gte: long(2)})},
		{"negative boost", "title", &sluicev1.Query{Kind: &sluicev1.Query_Match{Match: &sluicev1.MatchQuery{Field: "title", Query: "a", Boost: -1}}}},
		{"missing value", "tag", term("tag", nil)},
		{"nested error", "n", boolQ(&sluicev1.BoolQuery{Filter: []*sluicev1.Query{term("n", str("x"))}})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.Compile(tc.q)
			var e *querydsl.Error
			if !errors.As(err, &e) || !errors.Is(err, querydsl.ErrInvalid) {
				t.Fatalf("err = %v, want *querydsl.Error", err)
			}
			if e.Field != tc.field {
				t.Fatalf("error %q names field %q, want %q", err, e.Field, tc.field)
			}
		})
	}
	// A lenient compiler (a shard) matches nothing for unknown fields.
	q, err := querydsl.Compiler{Mapping: testMapping(t)}.Compile(match("nope", "x"))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := q.(*search.MatchNoneQuery); !ok {
		t.Fatalf("lenient unknown field compiled to %v", q)
	}
}

func TestMinimumShouldMatch(t *testing.T) {
	for _, tc := range []struct {
		spec string
		n    int
		want int
	}{
		{"2", 3, 2}, {"5", 3, 3}, {"0", 3, 0}, {"-1", 3, 2}, {"-5", 3, 0},
		{"75%", 4, 3}, {"75%", 3, 2}, {"100%", 3, 3}, {"-25%", 4, 3}, {"-25%", 3, 3}, {" 50% ", 4, 2},
	} {
		got, err := querydsl.MinimumShouldMatch(tc.spec, tc.n)
		if err != nil || got != tc.want {
			t.Errorf("MinimumShouldMatch(%q, %d) = %d, %v; want %d", tc.spec, tc.n, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "x", "%", "150%", "1.5"} {
		if _, err := querydsl.MinimumShouldMatch(bad, 3); err == nil {
			t.Errorf("MinimumShouldMatch(%q) accepted", bad)
		}
	}
}

func TestMappingProtoRoundTrip(t *testing.T) {
	m := testMapping(t)
	pm := querydsl.MappingToProto(m)
	back, err := querydsl.MappingFromProto(pm)
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(querydsl.MappingToProto(back), pm) {
		t.Fatalf("round trip changed the mapping:\n%v\n%v", pm, querydsl.MappingToProto(back))
	}
	if _, err := querydsl.MappingFromProto(&sluicev1.Mapping{Properties: map[string]*sluicev1.FieldMapping{"x": {}}}); !errors.Is(err, mapping.ErrInvalidMapping) {
		t.Fatalf("unspecified type: err %v", err)
	}
}

func TestSortValuesRoundTrip(t *testing.T) {
	m := testMapping(t)
	keys, err := querydsl.Sort(m, []*sluicev1.SortField{{Field: "_score"}, {Field: "price", Order: sluicev1.SortOrder_SORT_ORDER_DESC}, {Field: "tag"}, {Field: "n"}})
	if err != nil {
		t.Fatal(err)
	}
	types := querydsl.FieldTypes(m, keys)
	vals := []search.SortValue{{Float: 1.5}, {Int: document.SortableFloat64(-2.5)}, {Bytes: []byte("k")}, {Missing: true}}
	for i, v := range vals {
		pv := querydsl.SortValueToProto(keys[i], types[i], v)
		back, err := querydsl.SortValueFromProto(keys[i], types[i], pv)
		if err != nil {
			t.Fatal(err)
		}
		if back.Missing != v.Missing || back.Int != v.Int || back.Float != v.Float || string(back.Bytes) != string(v.Bytes) {
			t.Errorf("key %d: %+v -> %v -> %+v", i, v, pv, back)
		}
	}
	if pv := querydsl.SortValueToProto(keys[1], types[1], vals[1]); pv.GetDoubleValue() != -2.5 {
		t.Errorf("double sort value in proto = %v, want -2.5", pv)
	}
	if _, err := querydsl.Sort(m, []*sluicev1.SortField{{Field: "title"}}); !errors.Is(err, querydsl.ErrInvalid) {
		t.Errorf("sort by text: err %v", err)
	}
}

func FuzzMinimumShouldMatch(f *testing.F) {
	for _, s := range []string{"2", "-1", "75%", "-25%", "100%", "x"} {
		f.Add(s, 4)
	}
	f.Fuzz(func(t *testing.T, spec string, n int) {
		n = max(0, n%1000)
		if got, err := querydsl.MinimumShouldMatch(spec, n); err == nil && (got < 0 || got > n) {
			t.Fatalf("MinimumShouldMatch(%q, %d) = %d outside [0, n]", spec, n, got)
		}
	})
}

func TestSameMapping(t *testing.T) {
	parse := func(pm *sluicev1.Mapping) *mapping.Mapping {
		t.Helper()
		m, err := querydsl.MappingFromProto(pm)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	text := sluicev1.FieldType_FIELD_TYPE_TEXT
	yes := true
	implicit := parse(&sluicev1.Mapping{Properties: map[string]*sluicev1.FieldMapping{"a": {Type: text}, "b": {Type: text}}})
	explicit := parse(&sluicev1.Mapping{Properties: map[string]*sluicev1.FieldMapping{"b": {Type: text, Index: &yes}, "a": {Type: text}}})
	other := parse(&sluicev1.Mapping{Properties: map[string]*sluicev1.FieldMapping{"a": {Type: text}, "b": {Type: sluicev1.FieldType_FIELD_TYPE_KEYWORD}}})
	for _, tc := range []struct {
		name string
		a, b *mapping.Mapping
		want bool
	}{
		{"defaults spelled out, fields reordered", implicit, explicit, true},
		{"a field's type differs", implicit, other, false},
		{"one nil", implicit, nil, false},
		{"both nil", nil, nil, true},
	} {
		if got := querydsl.SameMapping(tc.a, tc.b); got != tc.want {
			t.Errorf("%s: SameMapping = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// nest wraps q in n bool queries.
func nest(q *sluicev1.Query, n int) *sluicev1.Query {
	for range n {
		q = boolQ(&sluicev1.BoolQuery{Must: []*sluicev1.Query{q}})
	}
	return q
}

// TestQueryLimits: Elasticsearch's query limits, with the boundary on
// each side: nesting (max_nested_depth 30), clauses of the whole query
// (max_clause_count 4096, match terms included) and terms of one terms or
// ids query (max_terms_count 65,536).
func TestQueryLimits(t *testing.T) {
	c := querydsl.Compiler{Mapping: testMapping(t), Strict: true}
	leaf := term("tag", str("a"))
	flat := func(n int) *sluicev1.Query {
		b := &sluicev1.BoolQuery{}
		for range n {
			b.Should = append(b.Should, leaf)
		}
		return boolQ(b)
	}
	words := func(n int) string {
		var b []byte
		for i := range n {
			b = fmt.Appendf(b, "w%d ", i)
		}
		return string(b)
	}
	values := func(n int) []*sluicev1.FieldValue {
		out := make([]*sluicev1.FieldValue, n)
		for i := range out {
			out[i] = str(fmt.Sprint(i))
		}
		return out
	}
	ids := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprint(i)
		}
		return out
	}
	// Two bools of 2,100 clauses: each within the limit, together past it.
	wide := boolQ(&sluicev1.BoolQuery{Must: []*sluicev1.Query{flat(2100), flat(2100)}})
	for _, tc := range []struct {
		name string
		q    *sluicev1.Query
		want string // "" compiles
	}{
		{"30 levels", nest(leaf, 30), ""},
		{"31 levels", nest(leaf, 31), "deeper than 30"},
		{"5,000 levels", nest(leaf, 5000), "deeper than 30"},
		{"4,095 clauses", flat(4095), ""},
		{"4,096 clauses", flat(4096), "more than 4096 clauses"},
		{"clauses over the whole tree", wide, "more than 4096 clauses"},
		{"a match of 4,000 terms", match("title", words(4000)), ""},
		{"a match of 5,000 terms", match("title", words(5000)), "more than 4096 clauses"},
		{"65,536 terms", &sluicev1.Query{Kind: &sluicev1.Query_Terms{Terms: &sluicev1.TermsQuery{Field: "tag", Values: values(65536)}}}, ""},
		{"65,537 terms", &sluicev1.Query{Kind: &sluicev1.Query_Terms{Terms: &sluicev1.TermsQuery{Field: "tag", Values: values(65537)}}}, "exceed the limit of 65536"},
		{"65,537 ids", &sluicev1.Query{Kind: &sluicev1.Query_Ids{Ids: &sluicev1.IdsQuery{Values: ids(65537)}}}, "exceed the limit of 65536"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.Compile(tc.q)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, querydsl.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// FuzzCompile: whatever protobuf bytes decode to a Query, compiling it
// either works or fails with a *querydsl.Error — never a panic or another
// error — and queries past the limits never compile.
func FuzzCompile(f *testing.F) {
	for _, q := range []*sluicev1.Query{
		match("title", "quick brown"), term("n", long(3)), rng("n", &sluicev1.RangeQuery{Gt: long(1), Lte: dbl(9.5)}),
		boolQ(&sluicev1.BoolQuery{Must: []*sluicev1.Query{match("title", "fox")}, Should: []*sluicev1.Query{term("tag", str("a"))}, MinimumShouldMatch: "1"}),
		&sluicev1.Query{Kind: &sluicev1.Query_Phrase{Phrase: &sluicev1.PhraseQuery{Field: "title", Query: "brown fox", Slop: 1}}},
		&sluicev1.Query{Kind: &sluicev1.Query_Ids{Ids: &sluicev1.IdsQuery{Values: []string{"1", "2"}}}},
		nest(term("ok", str("true")), 29),
	} {
		b, err := proto.Marshal(q)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, true)
		f.Add(b, false)
	}
	m := testMapping(f)
	f.Fuzz(func(t *testing.T, b []byte, strict bool) {
		var q sluicev1.Query
		if proto.Unmarshal(b, &q) != nil {
			return
		}
		_, err := querydsl.Compiler{Mapping: m, Strict: strict}.Compile(&q)
		if err == nil {
			if d := depth(&q); d > querydsl.MaxDepth {
				t.Fatalf("compiled a query %d deep", d)
			}
			return
		}
		var e *querydsl.Error
		if !errors.As(err, &e) {
			t.Fatalf("error is not a *querydsl.Error: %v", err)
		}
	})
}

// depth is how deep queries nest in bool queries.
func depth(q *sluicev1.Query) int {
	b := q.GetBool()
	if b == nil {
		return 0
	}
	d := 0
	for _, part := range [][]*sluicev1.Query{b.GetMust(), b.GetShould(), b.GetMustNot(), b.GetFilter()} {
		for _, sub := range part {
			d = max(d, 1+depth(sub))
		}
	}
	return d
}
