package esjson

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/sluice-search/sluice/node/engine/mapping"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

func str(s string) *sluicev1.FieldValue {
	return &sluicev1.FieldValue{Kind: &sluicev1.FieldValue_StringValue{StringValue: s}}
}
func long(n int64) *sluicev1.FieldValue {
	return &sluicev1.FieldValue{Kind: &sluicev1.FieldValue_LongValue{LongValue: n}}
}
func termQ(f string, v *sluicev1.FieldValue) *sluicev1.Query {
	return &sluicev1.Query{Kind: &sluicev1.Query_Term{Term: &sluicev1.TermQuery{Field: f, Value: v}}}
}

func TestQuery(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want *sluicev1.Query
	}{
		{"empty is match all", ``, nil},
		{"match_all", `{"match_all": {}}`, &sluicev1.Query{Kind: &sluicev1.Query_MatchAll{MatchAll: &sluicev1.MatchAllQuery{}}}},
		{"term short bool", `{"term": {"published": true}}`,
			termQ("published", &sluicev1.FieldValue{Kind: &sluicev1.FieldValue_BoolValue{BoolValue: true}})},
		{"term long form", `{"term": {"sku": {"value": "A-1", "boost": 2}}}`,
			&sluicev1.Query{Kind: &sluicev1.Query_Term{Term: &sluicev1.TermQuery{Field: "sku", Value: str("A-1"), Boost: 2}}}},
		{"term integral number is long", `{"term": {"stock": 42}}`, termQ("stock", long(42))},
		{"term fraction is double", `{"term": {"price": 1.5}}`,
			termQ("price", &sluicev1.FieldValue{Kind: &sluicev1.FieldValue_DoubleValue{DoubleValue: 1.5}})},
		{"match short", `{"match": {"title": "red shoes"}}`,
			&sluicev1.Query{Kind: &sluicev1.Query_Match{Match: &sluicev1.MatchQuery{Field: "title", Query: "red shoes"}}}},
		{"match long", `{"match": {"title": {"query": "red shoes", "operator": "and", "minimum_should_match": 1}}}`,
			&sluicev1.Query{Kind: &sluicev1.Query_Match{Match: &sluicev1.MatchQuery{Field: "title", Query: "red shoes",
				Operator: sluicev1.MatchOperator_MATCH_OPERATOR_AND, MinimumShouldMatch: "1"}}}},
		{"match_phrase", `{"match_phrase": {"title": {"query": "red shoes", "slop": 2}}}`,
			&sluicev1.Query{Kind: &sluicev1.Query_Phrase{Phrase: &sluicev1.PhraseQuery{Field: "title", Query: "red shoes", Slop: 2}}}},
		{"terms", `{"terms": {"sku": ["a", 7], "boost": 3}}`,
			&sluicev1.Query{Kind: &sluicev1.Query_Terms{Terms: &sluicev1.TermsQuery{Field: "sku", Values: []*sluicev1.FieldValue{str("a"), long(7)}, Boost: 3}}}},
		{"range", `{"range": {"updated_at": {"gte": "2024-01-01", "lt": 1700000000000}}}`,
			&sluicev1.Query{Kind: &sluicev1.Query_Range{Range: &sluicev1.RangeQuery{Field: "updated_at", Gte: str("2024-01-01"), Lt: long(1700000000000)}}}},
		{"ids", `{"ids": {"values": ["1", "2"]}}`,
			&sluicev1.Query{Kind: &sluicev1.Query_Ids{Ids: &sluicev1.IdsQuery{Values: []string{"1", "2"}}}}},
		{"bool with single clause and lists", `{"bool": {"filter": {"term": {"a": "x"}}, "must_not": [{"term": {"b": 1}}], "minimum_should_match": "75%"}}`,
			&sluicev1.Query{Kind: &sluicev1.Query_Bool{Bool: &sluicev1.BoolQuery{
				Filter: []*sluicev1.Query{termQ("a", str("x"))}, MustNot: []*sluicev1.Query{termQ("b", long(1))}, MinimumShouldMatch: "75%"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Query([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, protocmp.Transform()); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

func TestQueryErrors(t *testing.T) {
	tests := []struct {
		name, in, wantPath string
	}{
		{"not an object", `[1]`, "query: must be an object"},
		{"two kinds", `{"term": {"a": 1}, "match": {"b": "x"}}`, "query: must have exactly one key"},
		{"unknown kind", `{"fuzzy": {"a": "x"}}`, "query.fuzzy: unknown query type"},
		{"unknown param", `{"match": {"title": {"query": "x", "fuzziness": 2}}}`, "query.match.title: unknown parameter [fuzziness]"},
		{"bad operator", `{"match": {"title": {"query": "x", "operator": "xor"}}}`, "query.match.title.operator"},
		{"null value", `{"term": {"a": null}}`, "query.term.a: must be a string, number or boolean, got null"},
		{"term without value", `{"term": {"a": {"boost": 1}}}`, "query.term.a: value is required"},
		{"terms not list", `{"terms": {"a": "x"}}`, "query.terms.a: must be an array"},
		{"terms two fields", `{"terms": {"a": ["x"], "b": ["y"]}}`, "names two fields"},
		{"nested error path", `{"bool": {"must": [{"match_all": {}}, {"term": {"a": [1]}}]}}`, "query.bool.must[1].term.a"},
		{"negative slop", `{"match_phrase": {"t": {"query": "x", "slop": -1}}}`, "query.match_phrase.t.slop"},
		{"trailing data", `{"match_all": {}} {}`, "trailing data"},
		{"too deep", strings.Repeat(`{"bool": {"must": `, 40) + `{"match_all": {}}` + strings.Repeat(`}}`, 40), "nested deeper than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Query([]byte(tt.in))
			if !errors.Is(err, ErrInvalidQuery) {
				t.Fatalf("err = %v, want ErrInvalidQuery", err)
			}
			if !strings.Contains(err.Error(), tt.wantPath) {
				t.Errorf("err = %v, want it to contain %q", err, tt.wantPath)
			}
		})
	}
}

func TestMapping(t *testing.T) {
	got, err := Mapping([]byte(`{"dynamic": "strict", "properties": {"title": {"type": "text"}, "user": {"properties": {"name": {"type": "keyword"}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got.GetDynamic() != sluicev1.DynamicMapping_DYNAMIC_MAPPING_STRICT {
		t.Errorf("dynamic = %v", got.GetDynamic())
	}
	for name, typ := range map[string]sluicev1.FieldType{"title": sluicev1.FieldType_FIELD_TYPE_TEXT, "user.name": sluicev1.FieldType_FIELD_TYPE_KEYWORD} {
		if got.GetProperties()[name].GetType() != typ {
			t.Errorf("%s: type %v, want %v", name, got.GetProperties()[name].GetType(), typ)
		}
	}
	if m, err := Mapping(nil); m != nil || err != nil {
		t.Errorf("Mapping(nil) = %v, %v; want nil, nil", m, err)
	}
	if _, err := Mapping([]byte(`{"properties": {"a": {"type": "geo_point"}}}`)); !errors.Is(err, mapping.ErrInvalidMapping) {
		t.Errorf("unknown type: err = %v, want ErrInvalidMapping", err)
	}
}

// FuzzQuery checks that no input panics and that what parses is a valid
// message that survives a protobuf round trip.
func FuzzQuery(f *testing.F) {
	for _, s := range []string{`{"match_all": {}}`, `{"bool": {"must": [{"term": {"a": 1}}], "should": {"match": {"t": "x"}}}}`,
		`{"range": {"d": {"gte": "2024-01-01", "lt": 2.5}}}`, `{"terms": {"a": ["x", true]}}`, `{"ids": {"values": ["1"]}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		q, err := Query(data)
		if err != nil {
			if !errors.Is(err, ErrInvalidQuery) {
				t.Fatalf("error %v does not wrap ErrInvalidQuery", err)
			}
			return
		}
		b, err := proto.Marshal(q)
		if err != nil {
			t.Fatal(err)
		}
		var back sluicev1.Query
		if err := proto.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
	})
}
