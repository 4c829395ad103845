package search

import (
	"context"
	"fmt"
	"math/rand/v2"
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

// TestImpactsPoolRecycles checks that top-k term scorers' impacts enums are
// recycled across searches of one Searcher (index.ImpactsReuser), read
// their new term correctly, are not shared with a Searcher over other
// leaves, and that a get/release cycle allocates nothing.
func TestImpactsPoolRecycles(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	s := NewSearcher([]Leaf{{Reader: codecBuilder(t, genDocs(r, 600, 40, 0))}})
	other := NewSearcher([]Leaf{{Reader: codecBuilder(t, genDocs(r, 300, 40, 0))}})
	te := s.leaves[0].Reader.Terms("body").Iterator()
	var p impactsPool
	p.reset(s)
	if !te.SeekExact([]byte("w1")) {
		t.Fatal("w1 missing")
	}
	first := p.get(0, "body", te, index.PostingsFreqs)
	p.release()
	p.reset(s)
	for _, term := range []string{"w2", "w3"} {
		if !te.SeekExact([]byte(term)) {
			t.Fatalf("%s missing", term)
		}
		ie := p.get(0, "body", te, index.PostingsFreqs)
		if ie != first {
			t.Fatalf("%s: a new enum, not the spare one", term)
		}
		want := te.Postings(nil, index.PostingsFreqs)
		for d := want.NextDoc(); ; d = want.NextDoc() {
			if g := ie.NextDoc(); g != d || d != noMoreDocs && ie.Freq() != want.Freq() {
				t.Fatalf("%s: recycled enum at doc %d, want %d", term, g, d)
			}
			if d == noMoreDocs {
				break
			}
		}
		p.release()
		p.reset(s)
	}
	p.reset(other)
	ote := other.leaves[0].Reader.Terms("body").Iterator()
	ote.SeekExact([]byte("w1"))
	if p.get(0, "body", ote, index.PostingsFreqs) == first {
		t.Fatal("an enum of another searcher's leaf was reused")
	}
	p.release()
	if raceEnabled {
		return // the race detector allocates
	}
	if n := testing.AllocsPerRun(50, func() {
		p.reset(other)
		p.get(0, "body", ote, index.PostingsFreqs)
		p.release()
	}); n != 0 {
		t.Fatalf("%v allocations per recycled get", n)
	}
}
