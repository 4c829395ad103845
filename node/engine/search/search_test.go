package search

import (
	"context"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/sluice-search/sluice/node/engine/document"
	"github.com/sluice-search/sluice/node/engine/index"
)

var seedsFlag = flag.Int("search.seeds", 0, "random seeds per randomized test (default 12, 3 with -race)")

func numSeeds() int {
	switch {
	case *seedsFlag > 0:
		return *seedsFlag
	case raceEnabled:
		return 3
	}
	return 12
}

// leafBuilder turns documents into a LeafReader: the in-memory test model,
// or a real segment.
type leafBuilder func(t testing.TB, docs []document.Document) index.LeafReader

func memBuilder(t testing.TB, docs []document.Document) index.LeafReader { return newMemLeaf(docs) }

type corpus struct {
	oracle   *oracleIndex
	searcher *Searcher
}

// buildCorpus splits n random docs into leaves, deleting some.
func buildCorpus(t testing.TB, r *rand.Rand, build leafBuilder, n, vocab int, deletes bool) *corpus {
	docs := genDocs(r, n, vocab, 0)
	o := &oracleIndex{docs: docs, deleted: make([]bool, n)}
	var leaves []Leaf
	for base := 0; base < n; {
		size := n - base
		if size > 50 && r.IntN(2) == 0 {
			size = 1 + r.IntN(size-1)
		}
		leaves = append(leaves, buildLeaf(t, r, build, o, base, size, deletes && r.IntN(2) == 0))
		base += size
	}
	return &corpus{oracle: o, searcher: NewSearcher(leaves)}
}

// buildLeaf builds the leaf of o.docs[base:base+size]; with deletes about
// one doc in eight is deleted, in its live docs and in the oracle.
func buildLeaf(t testing.TB, r *rand.Rand, build leafBuilder, o *oracleIndex, base, size int, deletes bool) Leaf {
	leaf := Leaf{Reader: build(t, o.docs[base:base+size]), DocBase: base}
	if deletes {
		leaf.Live = index.NewFixedBitSetAllSet(size)
		for d := 0; d < size; d++ {
			if r.IntN(8) == 0 {
				leaf.Live.Clear(d)
				o.deleted[base+d] = true
			}
		}
	}
	return leaf
}

func word(r *rand.Rand, hot int) []byte {
	// Mostly frequent words, sometimes rare or absent ones.
	switch r.IntN(10) {
	case 0:
		return fmt.Appendf(nil, "w%d", 2+r.IntN(400))
	case 1:
		return []byte("absent")
	}
	return fmt.Appendf(nil, "w%d", 2+r.IntN(hot))
}

// genQuery makes a random query tree of every supported type.
func genQuery(r *rand.Rand, o *oracleIndex, depth int) Query {
	field := textFields[r.IntN(2)]
	k := r.IntN(12)
	if depth <= 0 && k >= 9 {
		k = r.IntN(9)
	}
	switch k {
	case 0, 1:
		return &TermQuery{Field: field, Term: word(r, 20)}
	case 2:
		n := 2 + r.IntN(3)
		terms := make([][]byte, n)
		for i := range terms {
			terms[i] = word(r, 30)
		}
		op := Operator(r.IntN(2))
		return MatchQuery(field, terms, op, r.IntN(3))
	case 3:
		return genPhrase(r, o)
	case 4:
		n := 1 + r.IntN(4)
		var terms [][]byte
		for i := 0; i < n; i++ {
			terms = append(terms, fmt.Appendf(nil, "t%02d", r.IntN(17)))
		}
		return &TermsQuery{Field: "tag", Terms: terms}
	case 5:
		lo, hi := int64(r.IntN(120)-60), int64(r.IntN(120)-60)
		if r.IntN(4) == 0 {
			// Many terms: the bitset path.
			lo, hi = -50, 50
		}
		q := NewLongRange("num", lo, hi, r.IntN(2) == 0, r.IntN(2) == 0)
		if r.IntN(5) == 0 {
			q.Lower = nil
		}
		return q
	case 6:
		q := &RangeQuery{Field: "tag", Lower: fmt.Appendf(nil, "t%02d", r.IntN(15)), Upper: fmt.Appendf(nil, "t%02d", r.IntN(15)), IncludeLower: r.IntN(2) == 0, IncludeUpper: r.IntN(2) == 0}
		if r.IntN(4) == 0 {
			q.Upper = nil
		}
		return q
	case 7:
		var ids [][]byte
		for i := 0; i < 1+r.IntN(30); i++ {
			ids = append(ids, fmt.Appendf(nil, "id%05d", r.IntN(len(o.docs)+5)))
		}
		return IDsQuery(ids)
	case 8:
		return &MatchAllQuery{}
	case 9:
		return &BoostQuery{Query: genQuery(r, o, depth-1), Boost: float32(r.IntN(5)) / 2}
	case 10:
		return &ConstantScoreQuery{Query: genQuery(r, o, depth-1)}
	}
	q := &BooleanQuery{}
	for i, n := 0, 1+r.IntN(4); i < n; i++ {
		c := genQuery(r, o, depth-1)
		switch r.IntN(6) {
		case 0, 1:
			q.Must = append(q.Must, c)
		case 2, 3:
			q.Should = append(q.Should, c)
		case 4:
			q.MustNot = append(q.MustNot, c)
		default:
			q.Filter = append(q.Filter, c)
		}
	}
	if r.IntN(3) == 0 {
		q.MinimumShouldMatch = r.IntN(3)
	}
	return q
}

// genPhrase takes consecutive tokens of a random doc, so phrases match.
func genPhrase(r *rand.Rand, o *oracleIndex) Query {
	for tries := 0; tries < 20; tries++ {
		d := r.IntN(len(o.docs))
		f := o.field(d, "body")
		if f == nil || len(f.Tokens) < 3 {
			continue
		}
		n := 2 + r.IntN(2)
		start := r.IntN(len(f.Tokens) - n + 1)
		q := &PhraseQuery{Field: "body"}
		for i := 0; i < n; i++ {
			q.Terms = append(q.Terms, f.Tokens[start+i].Term)
		}
		if r.IntN(4) == 0 {
			// Repeated terms ("a b a"): sloppy matching keeps them apart.
			q.Terms[n-1] = q.Terms[0]
		}
		if r.IntN(3) == 0 {
			q.Slop = 1 + r.IntN(3)
			if r.IntN(2) == 0 {
				q.Terms[0], q.Terms[1] = q.Terms[1], q.Terms[0]
			}
		}
		return q
	}
	return &PhraseQuery{Field: "body", Terms: [][]byte{[]byte("w2"), []byte("w3")}}
}

// scoreTol is the allowed float32-vs-float64 difference.
func scoreTol(s float64) float64 { return 1e-4 * max(1, math.Abs(s)) }

// checkTopDocs verifies a top-k-by-score result against the oracle.
func checkTopDocs(t *testing.T, ctx string, c *corpus, q Query, k int, td *TopDocs, exactCount bool) {
	t.Helper()
	res := c.oracle.eval(q, 1)
	var matched []int
	for d, r := range res {
		if r.match && !c.oracle.deleted[d] {
			matched = append(matched, d)
		}
	}
	if exactCount && (td.TotalHits != int64(len(matched)) || td.Relation != RelationEqual) {
		t.Fatalf("%s: %v: total hits %d %v, oracle %d", ctx, q, td.TotalHits, td.Relation, len(matched))
	}
	if len(td.Hits) != min(k, len(matched)) {
		t.Fatalf("%s: %v: %d hits, want %d", ctx, q, len(td.Hits), min(k, len(matched)))
	}
	in := map[int]bool{}
	for i, h := range td.Hits {
		r := res[h.Doc]
		if !r.match || c.oracle.deleted[h.Doc] {
			t.Fatalf("%s: %v: hit %d (doc %d) does not match (deleted=%v)", ctx, q, i, h.Doc, c.oracle.deleted[h.Doc])
		}
		if r.exactScore && math.Abs(float64(h.Score)-r.score) > scoreTol(r.score) {
			t.Fatalf("%s: %v: doc %d score %v, oracle %v", ctx, q, h.Doc, h.Score, r.score)
		}
		if i > 0 {
			p := td.Hits[i-1]
			if p.Score < h.Score || p.Score == h.Score && p.Doc >= h.Doc {
				t.Fatalf("%s: %v: hits out of order at %d: %+v then %+v", ctx, q, i, p, h)
			}
		}
		in[h.Doc] = true
	}
	if len(td.Hits) == k && k > 0 {
		last := td.Hits[k-1]
		for _, d := range matched {
			if r := res[d]; !in[d] && r.exactScore && res[last.Doc].exactScore && r.score > float64(last.Score)+scoreTol(r.score) {
				t.Fatalf("%s: %v: doc %d (oracle %v) missing from top-%d (last %v)", ctx, q, d, r.score, k, last.Score)
			}
		}
	}
}

func TestQueriesMatchOracle(t *testing.T) { testQueriesMatchOracle(t, memBuilder) }

func testQueriesMatchOracle(t *testing.T, build leafBuilder) {
	ctx := context.Background()
	for s := 0; s < numSeeds(); s++ {
		seed := uint64(s) + 1
		r := rand.New(rand.NewPCG(seed, 7))
		c := buildCorpus(t, r, build, 100+r.IntN(700), 300, true)
		for i := 0; i < 60; i++ {
			q := genQuery(r, c.oracle, 2)
			k := []int{1, 3, 10, 50, 2000}[r.IntN(5)]
			td, err := c.searcher.Search(ctx, q, Request{Size: k, TotalHitsThreshold: math.MaxInt})
			if err != nil {
				t.Fatalf("seed %d: %v: %v", seed, q, err)
			}
			checkTopDocs(t, fmt.Sprintf("seed %d", seed), c, q, k, td, true)
			n, err := c.searcher.Count(ctx, q)
			if err != nil || n != td.TotalHits {
				t.Fatalf("seed %d: %v: Count %d %v, search %d", seed, q, n, err, td.TotalHits)
			}
			// Count-only at the default threshold: exact or a true bound.
			cd, err := c.searcher.Search(ctx, q, Request{TotalHitsThreshold: 20})
			if err != nil {
				t.Fatal(err)
			}
			if cd.Relation == RelationEqual && cd.TotalHits != n || cd.Relation != RelationEqual && (cd.TotalHits > n || cd.TotalHits < 20) {
				t.Fatalf("seed %d: %v: count-only %d %v, exact %d", seed, q, cd.TotalHits, cd.Relation, n)
			}
		}
	}
}

// genPruningQuery makes the queries pruning applies to: terms,
// disjunctions and conjunctions of frequent terms, with nested clauses.
func genPruningQuery(r *rand.Rand, o *oracleIndex) Query {
	field := textFields[r.IntN(2)]
	switch r.IntN(8) {
	case 6, 7:
		// match + filters: MaxScore with a filter (a term, a range that
		// may verify by doc values, or both).
		or := &BooleanQuery{}
		for i, n := 0, 2+r.IntN(3); i < n; i++ {
			or.Should = append(or.Should, &TermQuery{Field: "body", Term: word(r, 40)})
		}
		q := &BooleanQuery{Must: []Query{or}}
		if r.IntN(2) == 0 {
			q.Filter = append(q.Filter, &ConstantScoreQuery{Query: NewLongRange("num", int64(-r.IntN(50)), int64(r.IntN(50)), true, true)})
		}
		if len(q.Filter) == 0 || r.IntN(2) == 0 {
			q.Filter = append(q.Filter, &TermQuery{Field: "body", Term: word(r, 10)})
		}
		return q
	case 0:
		return &TermQuery{Field: "body", Term: word(r, 8)}
	case 1, 2:
		n := 2 + r.IntN(4)
		q := &BooleanQuery{}
		for i := 0; i < n; i++ {
			var c Query = &TermQuery{Field: field, Term: word(r, 40)}
			if r.IntN(4) == 0 {
				c = &BoostQuery{Query: c, Boost: 0.5 + float32(r.IntN(4))}
			}
			if r.IntN(6) == 0 {
				c = genPhrase(r, o)
			}
			q.Should = append(q.Should, c)
		}
		return q
	case 3:
		return MatchQuery("body", [][]byte{word(r, 6), word(r, 10)}, OperatorAnd, 0)
	case 4:
		return &BooleanQuery{Must: []Query{&TermQuery{Field: "body", Term: word(r, 5)}}, Should: []Query{&TermQuery{Field: "body", Term: word(r, 20)}, &TermQuery{Field: "title", Term: word(r, 20)}}}
	}
	return &BooleanQuery{Should: []Query{&TermQuery{Field: "body", Term: word(r, 5)}, &TermQuery{Field: "body", Term: word(r, 50)}}, MustNot: []Query{&TermQuery{Field: "title", Term: word(r, 5)}}}
}

// TestPruningMatchesExhaustive: with a low total-hits threshold the
// block-max paths skip docs, yet must return bit-identical top-k.
func TestPruningMatchesExhaustive(t *testing.T) { testPruningMatchesExhaustive(t, memBuilder) }

func testPruningMatchesExhaustive(t *testing.T, build leafBuilder) {
	skipped := 0 // searches where pruning skipped matching docs
	for s := 0; s < numSeeds(); s++ {
		seed := uint64(s) + 1000
		r := rand.New(rand.NewPCG(seed, 11))
		c := buildCorpus(t, r, build, 1500+r.IntN(2000), 200, r.IntN(2) == 0)
		for i := 0; i < 20; i++ {
			q := genPruningQuery(r, c.oracle)
			k := []int{1, 5, 10, 100}[r.IntN(4)]
			skipped += checkPruned(t, fmt.Sprintf("seed %d", seed), c, q, k, 200)
		}
	}
	t.Logf("pruning skipped docs in %d searches", skipped)
	if skipped == 0 {
		t.Fatal("no search skipped any doc: pruning is not exercised")
	}
}

// checkPruned checks q's exhaustive top-k against the oracle, then that
// searches at total-hits thresholds 1, k and maxThreshold return
// bit-identical hits and a true count; it returns how many of them
// skipped matching docs.
func checkPruned(t *testing.T, ctx string, c *corpus, q Query, k, maxThreshold int) (skipped int) {
	t.Helper()
	want, err := c.searcher.Search(context.Background(), q, Request{Size: k, TotalHitsThreshold: math.MaxInt})
	if err != nil {
		t.Fatal(err)
	}
	checkTopDocs(t, ctx, c, q, k, want, true)
	for _, th := range []int{1, k, maxThreshold} {
		got, err := c.searcher.Search(context.Background(), q, Request{Size: k, TotalHitsThreshold: th})
		if err != nil {
			t.Fatal(err)
		}
		if !equalHits(got.Hits, want.Hits) {
			t.Fatalf("%s: %v k=%d threshold=%d:\npruned     %v\nexhaustive %v", ctx, q, k, th, got.Hits, want.Hits)
		}
		if got.TotalHits < want.TotalHits {
			skipped++
		}
		switch {
		case got.Relation == RelationEqual && got.TotalHits != want.TotalHits,
			got.TotalHits > want.TotalHits,
			got.Relation != RelationEqual && got.TotalHits < int64(min(th, int(want.TotalHits))):
			t.Fatalf("%s: %v threshold=%d: total %d %v, exact %d", ctx, q, th, got.TotalHits, got.Relation, want.TotalHits)
		}
	}
	return skipped
}

func equalHits(a, b []Hit) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Doc != b[i].Doc || a[i].Score != b[i].Score {
			return false
		}
	}
	return true
}
