package search

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/sluice-search/sluice/node/engine/codec"
	"github.com/sluice-search/sluice/node/engine/document"
	"github.com/sluice-search/sluice/node/engine/index"
	"github.com/sluice-search/sluice/node/engine/store"
)

var segCounter atomic.Int64

func codecBuilder(t testing.TB, docs []document.Document) index.LeafReader {
	src := dwptBuilder(t, docs)
	dir := store.NewRAMDirectory()
	c := codec.New(codec.Options{})
	info := &index.SegmentInfo{Name: fmt.Sprintf("_%d", segCounter.Add(1)), MaxDoc: len(docs)}
	if err := c.WriteSegment(context.Background(), dir, info, src, store.IOContext{}); err != nil {
		t.Fatalf("write segment: %v", err)
	}
	seg, err := c.OpenSegment(dir, info)
	if err != nil {
		t.Fatalf("open segment: %v", err)
	}
	t.Cleanup(func() { seg.Close() })
	return seg
}

func TestQueriesMatchOracleCodec(t *testing.T) { testQueriesMatchOracle(t, codecBuilder) }
func TestSortSearchAfterCodec(t *testing.T)    { testSortSearchAfter(t, codecBuilder) }

// TestPruningMatchesExhaustiveCodec runs block-max pruning on the codec's
// real skip data and impacts.
func TestPruningMatchesExhaustiveCodec(t *testing.T) {
	testPruningMatchesExhaustive(t, codecBuilder)
}
