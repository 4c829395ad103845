package search

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/sluice-search/sluice/node/engine/index"
)

// TestMaxScoreWindowsMatchExhaustive runs disjunctions over leaves several
// times MaxScore's inner window (innerWindow doc ids), so the window loops
// cross inner windows, visit several essential clauses (the bitset path),
// a single essential term (the direct path) or a single non-term clause,
// with and without filters and deleted docs. The exhaustive result is checked against
// the oracle and every pruned one must be bit-identical to it.
func TestMaxScoreWindowsMatchExhaustive(t *testing.T) {
	for _, b := range leafBuilders {
		t.Run(b.name, func(t *testing.T) {
			skipped := 0
			for s := 0; s < max(1, numSeeds()/6); s++ {
				seed := uint64(s) + 5000
				r := rand.New(rand.NewPCG(seed, 13))
				c := buildLargeLeaves(t, r, b.build, 2*innerWindow+r.IntN(3*innerWindow), s%2 == 1)
				for i := 0; i < 12; i++ {
					q := &BooleanQuery{}
					for j, n := 0, 2+r.IntN(3); j < n; j++ {
						// Frequent and rare terms (single-block postings make
						// windows that span several inner windows), boosts so
						// that either clause can be the essential one, and
						// phrases as non-term clauses.
						var cl Query = &TermQuery{Field: "body", Term: word(r, []int{20, 200, 1500}[r.IntN(3)])}
						switch r.IntN(6) {
						case 0:
							cl = &BoostQuery{Query: cl, Boost: 0.25 + float32(r.IntN(8))}
						case 1:
							cl = genPhrase(r, c.oracle)
						}
						q.Should = append(q.Should, cl)
					}
					var query Query = q
					switch r.IntN(4) {
					case 0: // a filter verified by doc values
						query = &BooleanQuery{Must: []Query{q}, Filter: []Query{NewLongRange("num", int64(-r.IntN(50)), int64(r.IntN(50)), true, true)}}
					case 1: // a filter to leap-frog with
						query = &BooleanQuery{Must: []Query{q}, Filter: []Query{&TermQuery{Field: "body", Term: word(r, 10)}}}
					}
					k := []int{1, 10, 100}[r.IntN(3)]
					skipped += checkPruned(t, fmt.Sprintf("seed %d", seed), c, query, k, 1000)
				}
			}
			if skipped == 0 {
				t.Fatal("no search skipped any doc: pruning is not exercised")
			}
		})
	}
}

// buildLargeLeaves is buildCorpus with one or two leaves, each larger
// than an inner window.
func buildLargeLeaves(t testing.TB, r *rand.Rand, build leafBuilder, n int, deletes bool) *corpus {
	docs := genDocs(r, n, 3000, 0)
	o := &oracleIndex{docs: docs, deleted: make([]bool, n)}
	cut := []int{0, n}
	if r.IntN(2) == 0 {
		cut = []int{0, innerWindow + r.IntN(n-2*innerWindow+1), n}
	}
	var leaves []Leaf
	for i := 0; i+1 < len(cut); i++ {
		leaves = append(leaves, buildLeaf(t, r, build, o, cut[i], cut[i+1]-cut[i], deletes))
	}
	return &corpus{oracle: o, searcher: NewSearcher(leaves)}
}

// TestTermXThreshold checks termXThreshold's contract on random and edge
// inputs: every x up to the threshold fails the exact competitiveness
// check (what makes skipping by x exact), and the threshold is tight
// enough to skip nearly all that fail.
func TestTermXThreshold(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	type tc struct {
		w       float32
		rest    float64
		n       int
		minComp float32
	}
	cases := []tc{
		{w: 2.5, rest: 0, n: 1, minComp: 1},
		{w: 2.5, rest: 1.5, n: 2, minComp: 3.9},   // needs nearly the max
		{w: 2.5, rest: 1.5, n: 2, minComp: 4.1},   // nothing can compete
		{w: 2.5, rest: 3, n: 2, minComp: 2},       // everything may compete
		{w: 0, rest: 1, n: 2, minComp: 0.5},       // boost 0
		{w: 1e-30, rest: 0, n: 2, minComp: 1e-31}, // tiny scores
	}
	for range 2000 {
		w := float32(r.Float64()*8 + 0.01)
		cases = append(cases, tc{w: w, rest: r.Float64() * 6, n: 2 + r.IntN(4), minComp: nextUp(float32(r.Float64() * 10))})
	}
	tight := 0
	for _, c := range cases {
		fails := func(x float32) bool {
			return boundScore(float64(bm25Score(c.w, x))+c.rest, c.n) < c.minComp
		}
		xs := termXThreshold(c.w, c.rest, c.n, c.minComp)
		if xs > 0 && !math.IsInf(float64(xs), 1) && !fails(xs) {
			t.Fatalf("%+v: threshold %v does not fail", c, xs)
		}
		if math.IsInf(float64(xs), 1) && !fails(float32(math.Inf(1))) {
			t.Fatalf("%+v: skips everything, but the max competes", c)
		}
		// Any x below the threshold must fail (spot checks, and the
		// float32 just below it).
		for _, f := range []float32{0, 0.25, 0.5, 0.999} {
			if x := xs * f; x < xs && !fails(x) {
				t.Fatalf("%+v: x %v below threshold %v competes", c, x, xs)
			}
		}
		if xs > 0 && !math.IsInf(float64(xs), 1) && !fails(xs*1.001) {
			tight++
		}
	}
	if tight < len(cases)/4 {
		t.Fatalf("threshold tight in only %d of %d cases", tight, len(cases))
	}
}

// panickyLeaf's norms panic at the left-th lookup, to stop a search in
// the middle of a MaxScore window.
type panickyLeaf struct {
	index.LeafReader
	left *int
}

type panickyNorms struct {
	index.NormsReader
	left *int
}

func (l panickyLeaf) Norms(field string) index.NormsReader {
	return panickyNorms{l.LeafReader.Norms(field), l.left}
}

func (n panickyNorms) Norm(doc int) uint8 {
	if *n.left--; *n.left == 0 {
		panic("norms: injected failure")
	}
	return n.NormsReader.Norm(doc)
}

// TestMaxScoreScratchAfterPanic: a search that panics half-way through a
// bitset window leaves partial scores in its pooled window scratch; the
// next search must not add to them.
func TestMaxScoreScratchAfterPanic(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	leaf := newMemLeaf(genDocs(r, 3000, 50, 0))
	q := &BooleanQuery{Should: []Query{&TermQuery{Field: "body", Term: []byte("w2")}, &TermQuery{Field: "body", Term: []byte("w3")}}}
	req := Request{Size: 10, TotalHitsThreshold: math.MaxInt}
	s := NewSearcher([]Leaf{{Reader: leaf}})
	want, err := s.Search(context.Background(), q, req)
	if err != nil {
		t.Fatal(err)
	}
	left := 100
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the injected failure did not happen")
			}
		}()
		_, _ = NewSearcher([]Leaf{{Reader: panickyLeaf{leaf, &left}}}).Search(context.Background(), q, req)
	}()
	got, err := s.Search(context.Background(), q, req)
	if err != nil {
		t.Fatal(err)
	}
	if !equalHits(got.Hits, want.Hits) || got.TotalHits != want.TotalHits {
		t.Fatalf("after a panic: %v (%d hits), want %v (%d)", got.Hits, got.TotalHits, want.Hits, want.TotalHits)
	}
}
