package search

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestMaxScoreWindowsMatchExhaustive runs disjunctions over leaves several
// times MaxScore's inner window (innerWindow doc ids), so the window loops
// cross inner windows, visit several essential clauses (the bitset path),
// a single essential term (the direct path) or a single non-term clause,
// with and without deleted docs. The exhaustive result is checked against
// the oracle and every pruned one must be bit-identical to it.
func TestMaxScoreWindowsMatchExhaustive(t *testing.T) {
	for _, b := range []struct {
		name  string
		build leafBuilder
	}{{"mem", memBuilder}, {"codec", codecBuilder}} {
		t.Run(b.name, func(t *testing.T) {
			skipped := 0
			for s := 0; s < max(1, numSeeds()/4); s++ {
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
					k := []int{1, 10, 100}[r.IntN(3)]
					skipped += checkPruned(t, fmt.Sprintf("seed %d", seed), c, q, k, 1000)
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
