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

// TestQueryContextRecycles checks that a search's terms enums, impacts
// enums and term scorers are recycled by the next search on the same
// Searcher (index.ImpactsReuser for the impacts), read their new term
// correctly, that a Searcher's contexts never serve another Searcher, and
// that a recycling cycle allocates nothing.
func TestQueryContextRecycles(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	s := NewSearcher([]Leaf{{Reader: codecBuilder(t, genDocs(r, 600, 40, 0))}})
	other := NewSearcher([]Leaf{{Reader: codecBuilder(t, genDocs(r, 300, 40, 0))}})
	terms := s.leaves[0].Reader.Terms("body")
	// Not from the pool: sync.Pool drops items at random under -race.
	qc := &queryContext{s: s, fields: map[string]*fieldStats{}}
	bytes := map[string][]byte{"w1": []byte("w1"), "w2": []byte("w2"), "w3": []byte("w3")}
	cycle := func(term string) (index.TermsEnum, index.ImpactsEnum, *termScorer) {
		qc.terms.release()
		qc.impacts.release()
		qc.scorers.release()
		te := qc.termsEnum(0, "body", terms)
		if !te.SeekExact(bytes[term]) {
			t.Fatalf("%s missing", term)
		}
		return te, qc.impactsEnum(0, "body", te, index.PostingsFreqs), qc.termScorer(0, "body")
	}
	te1, ie1, sc1 := cycle("w1")
	sc1.blockEnd = 7
	for _, term := range []string{"w2", "w3"} {
		te, ie, sc := cycle(term)
		if te != te1 || ie != ie1 || sc != sc1 {
			t.Fatalf("%s: new objects, not the spare ones", term)
		}
		if sc.blockEnd != 0 {
			t.Fatalf("%s: a recycled scorer keeps its last search's state", term)
		}
		want := terms.Iterator()
		want.SeekExact([]byte(term))
		wp := want.Postings(nil, index.PostingsFreqs)
		for d := wp.NextDoc(); ; d = wp.NextDoc() {
			if g := ie.NextDoc(); g != d || d != noMoreDocs && ie.Freq() != wp.Freq() {
				t.Fatalf("%s: recycled enum at doc %d, want %d", term, g, d)
			}
			if d == noMoreDocs {
				break
			}
		}
	}
	// Two enums of one leaf and field in one search are distinct.
	if te := qc.termsEnum(0, "body", terms); te == te1 {
		t.Fatal("one terms enum handed out twice in a search")
	}
	for range 20 {
		qc := newQueryContext(s)
		qc.release()
		if got := newQueryContext(other); got.s != other {
			t.Fatal("a context of another searcher was handed out")
		}
	}
	if raceEnabled {
		return // the race detector allocates
	}
	cycle("w1")
	if n := testing.AllocsPerRun(50, func() { cycle("w2") }); n != 0 {
		t.Fatalf("%v allocations per recycled search", n)
	}
}
