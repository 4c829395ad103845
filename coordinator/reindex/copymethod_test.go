package reindex

import (
	"testing"

	"github.com/sluice-search/sluice/cluster/routing"
	statev1 "github.com/sluice-search/sluice/proto/sluice/state/v1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// TestSegmentIneligibleQueries: the planner reads a query as the nodes do
// (package segmentcopy): one with no kind selects every document, so it
// does not stop a segment copy; a term query does.
func TestSegmentIneligibleQueries(t *testing.T) {
	plan := &statev1.ReindexPlan{Mode: sluicev1.ReindexMode_REINDEX_MODE_LOCAL, Colocatable: true}
	src := routing.Params{Shards: 2, RoutingShards: 2}
	term := &sluicev1.Query{Kind: &sluicev1.Query_Term{Term: &sluicev1.TermQuery{Field: "tag"}}}
	for _, tc := range []struct {
		name  string
		query *sluicev1.Query
		want  string
	}{
		{"none", nil, ""},
		{"no kind", &sluicev1.Query{}, ""},
		{"term", term, "a query selects the documents"},
	} {
		req := &sluicev1.ReindexRequest{Source: &sluicev1.ReindexSource{Index: "a", Query: tc.query}, Dest: &sluicev1.ReindexDestination{Index: "b"}}
		if got := segmentIneligible(req, plan, src, nil, nil); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
