package search

import (
	"testing"

	"github.com/sluice-search/sluice/node/engine/document"
	"github.com/sluice-search/sluice/node/engine/dwpt"
	"github.com/sluice-search/sluice/node/engine/index"
)

// The oracle tests also run against real segments: the in-memory segment
// of the write path (dwpt) here, codec-written segments in
// codec_segment_test.go, so the searcher is checked against the readers it
// will really get.

func dwptBuilder(t testing.TB, docs []document.Document) index.LeafReader {
	d := dwpt.New(dwpt.NewAllocator(0))
	t.Cleanup(d.Release)
	for i := range docs {
		if _, err := d.AddDocument(&docs[i]); err != nil {
			t.Fatalf("add doc %d: %v", i, err)
		}
	}
	return d
}

func TestQueriesMatchOracleDWPT(t *testing.T) { testQueriesMatchOracle(t, dwptBuilder) }

func TestSortSearchAfterDWPT(t *testing.T) { testSortSearchAfter(t, dwptBuilder) }
