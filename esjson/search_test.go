package esjson

import (
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

func TestParseSearch(t *testing.T) {
	no := false
	testParse(t, []jsonCase[*Search]{
		{"empty", ``, &Search{Request: &sluicev1.SearchRequest{}}, ""},
		{"every part", `{"query":{"term":{"tag":"a"}},"from":10,"size":"5","sort":[{"year":"desc"},"_shard_doc"],
			"search_after":[2024,"x",1.5,null,true],"pit":{"id":"p1","keep_alive":"1m"},"track_total_hits":true,
			"timeout":"2s","_source":false,"track_scores":false}`,
			&Search{Request: &sluicev1.SearchRequest{
				Query: term("tag", str("a")), From: 10, Size: proto.Int32(5),
				Sort: []*sluicev1.SortField{{Field: "year", Order: sluicev1.SortOrder_SORT_ORDER_DESC}, {Field: "_shard_doc"}},
				SearchAfter: &sluicev1.SearchAfter{Values: []*sluicev1.SortValue{
					{Kind: &sluicev1.SortValue_LongValue{LongValue: 2024}}, {Kind: &sluicev1.SortValue_KeywordValue{KeywordValue: []byte("x")}},
					{Kind: &sluicev1.SortValue_DoubleValue{DoubleValue: 1.5}}, {}, {Kind: &sluicev1.SortValue_LongValue{LongValue: 1}}}},
				Pit:            &sluicev1.PointInTime{Id: "p1", KeepAlive: durationpb.New(time.Minute)},
				TrackTotalHits: -1, Timeout: durationpb.New(2 * time.Second), FetchSource: &no,
			}}, ""},
		{"no total", `{"track_total_hits":false}`, &Search{Request: &sluicev1.SearchRequest{}, NoTotal: true}, ""},
		{"total up to", `{"track_total_hits":100}`, &Search{Request: &sluicev1.SearchRequest{TrackTotalHits: 100}}, ""},
		{"slice", `{"slice":{"id":1,"max":3},"sort":"_doc"}`, &Search{Request: &sluicev1.SearchRequest{Sort: []*sluicev1.SortField{{Field: "_doc"}}},
			Slice: &sluicev1.Slice{Id: 1, Max: 3}}, ""},
		{"source includes", `{"_source":["a","b.*"]}`, &Search{Request: &sluicev1.SearchRequest{}, SourceIncludes: []string{"a", "b.*"}}, ""},
		{"source object", `{"_source":{"includes":"a","excludes":["a.b"]}}`, &Search{Request: &sluicev1.SearchRequest{},
			SourceIncludes: []string{"a"}, SourceExcludes: []string{"a.b"}}, ""},
		{"source true", `{"_source":true}`, &Search{Request: &sluicev1.SearchRequest{}}, ""},
		{"docvalue fields", `{"docvalue_fields":["price",{"field":"stock"}]}`, &Search{Request: &sluicev1.SearchRequest{DocvalueFields: []string{"price", "stock"}}}, ""},
	}, ParseSearch)
}

func TestParseSearchErrors(t *testing.T) {
	testErrors(t, []errorCase{
		{"aggs", `{"aggs":{"a":{"terms":{"field":"x"}}}}`, "aggs", "[aggs] is not supported by Sluice: aggregations are not supported"},
		{"unknown key", `{"quer":{}}`, "quer", "Unknown key for a search request body [quer]"},
		{"negative size", `{"size":-1}`, "size", "[size] must be a non-negative integer"},
		{"pit without id", `{"pit":{"keep_alive":"1m"}}`, "pit", "[pit] requires an id"},
		{"bad keep alive", `{"pit":{"id":"x","keep_alive":"soon"}}`, "pit.keep_alive", "as a time value"},
		{"slice field", `{"slice":{"field":"date","id":0,"max":2}}`, "slice.field", "slices divide documents by _id"},
		{"slice out of range", `{"slice":{"id":2,"max":2}}`, "slice", "id must be in [0, max)"},
		{"track scores", `{"track_scores":true}`, "track_scores", "have no score"},
		{"search_after object", `{"search_after":[{}]}`, "search_after[0]", "values must be strings"},
		{"not an object", `[1]`, "", "a search request body must be an object"},
		{"source number", `{"_source":1}`, "_source", "patterns must be a string or an array"},
		{"docvalue fields not a list", `{"docvalue_fields":"price"}`, "docvalue_fields", "must be an array of field names"},
		{"docvalue fields wildcard", `{"docvalue_fields":["pri*"]}`, "docvalue_fields[0]", "wildcards are not supported"},
		{"docvalue fields format", `{"docvalue_fields":[{"field":"d","format":"epoch_millis"}]}`, "docvalue_fields[0].format", "format is not supported"},
		{"docvalue fields number", `{"docvalue_fields":[1]}`, "docvalue_fields[0]", "entries must be field names"},
	}, ParseSearch, ErrInvalidSearch)
	// Query and sort keep their kinds, with the body's paths.
	testErrors(t, []errorCase{{"query", `{"query":{"bool":{"mus":{}}}}`, "query.bool.mus", "[bool] unknown field [mus]"}}, ParseSearch, ErrInvalidQuery)
	testErrors(t, []errorCase{{"sort", `{"sort":[{"a":"up"}]}`, "sort[0].a", "Unknown SortOrder"}}, ParseSearch, ErrInvalidSort)
}

func TestParseCount(t *testing.T) {
	testParse(t, []jsonCase[*sluicev1.Query]{
		{"empty", ``, nil, ""},
		{"query", `{"query":{"term":{"a":1}}}`, term("a", long(1)), ""},
	}, ParseCount)
	testErrors(t, []errorCase{{"size", `{"size":1}`, "size", "a count takes a query only"}}, ParseCount, ErrInvalidSearch)
}

func TestMarshalSortValues(t *testing.T) {
	vs := []*sluicev1.SortValue{
		{Kind: &sluicev1.SortValue_Score{Score: 1.25}}, {Kind: &sluicev1.SortValue_LongValue{LongValue: -3}},
		{Kind: &sluicev1.SortValue_DoubleValue{DoubleValue: 2}}, {Kind: &sluicev1.SortValue_KeywordValue{KeywordValue: []byte(`a"b`)}}, {},
	}
	out, err := MarshalSortValues(vs)
	if err != nil {
		t.Fatal(err)
	}
	if want := `[1.25,-3,2.0,"a\"b",null]`; string(out) != want {
		t.Fatalf("got %s, want %s", out, want)
	}
	// search_after reads them back as what the cluster converts: the
	// score as a double, the rest as they were.
	s, err := ParseSearch([]byte(`{"search_after":` + string(out) + `}`))
	if err != nil {
		t.Fatal(err)
	}
	vs[0] = &sluicev1.SortValue{Kind: &sluicev1.SortValue_DoubleValue{DoubleValue: 1.25}}
	if !proto.Equal(s.Request.SearchAfter, &sluicev1.SearchAfter{Values: vs}) {
		t.Fatalf("read back %v", s.Request.SearchAfter)
	}
	if _, err := MarshalSortValues([]*sluicev1.SortValue{{Kind: &sluicev1.SortValue_KeywordValue{KeywordValue: []byte{0xff}}}}); err == nil {
		t.Fatal("a keyword that is not UTF-8 was written")
	}
}

func TestMarshalSettings(t *testing.T) {
	s := &sluicev1.IndexSettings{NumberOfShards: 3, NumberOfRoutingShards: 6, RefreshInterval: durationpb.New(30 * time.Second),
		TranslogDurability: sluicev1.TranslogDurability_TRANSLOG_DURABILITY_ASYNC, MergeMaxMbPerSec: 20.5}
	out := MarshalSettings(s)
	want := `{"index":{"number_of_shards":"3","number_of_routing_shards":"6","number_of_replicas":"0","refresh_interval":"30s","translog":{"durability":"async"},"merge_max_mb_per_sec":"20.5"}}`
	if string(out) != want {
		t.Fatalf("got  %s\nwant %s", out, want)
	}
	back, err := ParseSettings(out)
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(back, s) {
		t.Fatalf("read back %v", back)
	}
}
