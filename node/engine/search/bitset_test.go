package search

import (
	"context"
	"math/rand/v2"
	"testing"
)

// leafBuilders are both kinds of leaf: in-memory and written by the codec.
var leafBuilders = []struct {
	name  string
	build leafBuilder
}{{"mem", memBuilder}, {"codec", codecBuilder}}

// TestMatchingDocsMatchOracle: the bitsets are exactly the live docs the
// oracle matches, for random queries of every kind, on both leaf kinds.
func TestMatchingDocsMatchOracle(t *testing.T) {
	for _, b := range leafBuilders {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			for s := range numSeeds() {
				seed := uint64(s) + 1
				r := rand.New(rand.NewPCG(seed, 11))
				c := buildCorpus(t, r, b.build, 100+r.IntN(700), 300, true)
				for range 40 {
					q := genQuery(r, c.oracle, 2)
					bits, err := c.searcher.MatchingDocs(ctx, q)
					if err != nil {
						t.Fatalf("seed %d: %v: %v", seed, q, err)
					}
					res := c.oracle.eval(q, 1)
					for i, l := range c.searcher.Leaves() {
						for d := range l.Reader.MaxDoc() {
							doc := l.DocBase + d
							if want := res[doc].match && !c.oracle.deleted[doc]; bits[i].Get(d) != want {
								t.Fatalf("seed %d: %v: doc %d selected %v, oracle %v", seed, q, doc, bits[i].Get(d), want)
							}
						}
					}
				}
			}
		})
	}
}
