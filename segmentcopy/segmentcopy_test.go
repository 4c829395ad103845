package segmentcopy

import (
	"testing"

	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

func TestRefusal(t *testing.T) {
	term := &sluicev1.Query{Kind: &sluicev1.Query_Term{Term: &sluicev1.TermQuery{Field: "tag"}}}
	matchAll := &sluicev1.Query{Kind: &sluicev1.Query_MatchAll{MatchAll: &sluicev1.MatchAllQuery{}}}
	ok := Request{KeepsRouting: true}
	with := func(f func(*Request)) Request { r := ok; f(&r); return r }
	for _, tc := range []struct {
		name string
		req  Request
		want string
	}{
		{"whole shard", ok, ""},
		{"match_all", with(func(r *Request) { r.Query = matchAll }), ""},
		// The drift this package ended: a query with no kind selects every
		// document on the node, so it does not stop a segment copy.
		{"query without a kind", with(func(r *Request) { r.Query = &sluicev1.Query{} }), ""},
		{"term query", with(func(r *Request) { r.Query = term }), "a query selects the documents"},
		{"routing", Request{}, "dest.routing is not keep"},
		{"sub-sliced", with(func(r *Request) { r.SubSliced = true }), "slices subdivide the source shards"},
		{"max_docs", with(func(r *Request) { r.MaxDocs = 1 }), "max_docs limits the documents"},
		{"throttled", with(func(r *Request) { r.RequestsPerSecond = 10 }), "requests_per_second throttles the copy"},
	} {
		if got := tc.req.Refusal(); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
