package search

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func genSort(r *rand.Rand) []SortField {
	if r.IntN(4) == 0 {
		return []SortField{{Type: SortByDoc}} // scans: the heap-free path
	}
	var sort []SortField
	for i, n := 0, 1+r.IntN(3); i < n; i++ {
		f := SortField{Desc: r.IntN(2) == 0, MissingFirst: r.IntN(3) == 0}
		switch r.IntN(5) {
		case 0, 1:
			f.Type, f.Field = SortByNumeric, "num"
		case 2:
			f.Type, f.Field = SortByKeyword, "tag"
		case 3:
			f.Type, f.Desc = SortByScore, true
		default:
			f.Type = SortByDoc
		}
		sort = append(sort, f)
	}
	return sort
}

// expectedValues computes a doc's sort values from the raw document.
func (c *corpus) expectedValues(sort []SortField, d int, scores map[int]float32) []SortValue {
	vals := make([]SortValue, len(sort))
	for i, f := range sort {
		v := &vals[i]
		switch f.Type {
		case SortByScore:
			v.Float = scores[d]
		case SortByDoc:
			v.Int = int64(d)
		case SortByNumeric:
			fl := c.oracle.field(d, f.Field)
			if fl == nil {
				v.Missing = true
			} else {
				v.Int = slices.Min(fl.Numerics)
			}
		case SortByKeyword:
			fl := c.oracle.field(d, f.Field)
			if fl == nil {
				v.Missing = true
			} else {
				v.Bytes = slices.MinFunc(fl.Keywords, bytes.Compare)
			}
		}
	}
	return vals
}

func TestSortSearchAfterPagesEverythingOnce(t *testing.T) {
	testSortSearchAfter(t, memBuilder)
}

func testSortSearchAfter(t *testing.T, build leafBuilder) {
	ctx := context.Background()
	paged := 0
	for s := 0; s < numSeeds(); s++ {
		seed := uint64(s) + 5000
		r := rand.New(rand.NewPCG(seed, 13))
		c := buildCorpus(t, r, build, 50+r.IntN(400), 100, true)
		for i := 0; i < 15; i++ {
			q := genQuery(r, c.oracle, 1)
			sort := genSort(r)
			// Engine scores per doc (the score key's values).
			all, err := c.searcher.Search(ctx, q, Request{Size: 10000, TotalHitsThreshold: math.MaxInt})
			if err != nil {
				t.Fatal(err)
			}
			scores := map[int]float32{}
			var want []int
			for _, h := range all.Hits {
				scores[h.Doc] = h.Score
				want = append(want, h.Doc)
			}
			slices.SortFunc(want, func(a, b int) int {
				if c := CompareSortValues(sort, c.expectedValues(sort, a, scores), c.expectedValues(sort, b, scores)); c != 0 {
					return c
				}
				return a - b
			})
			page := 1 + r.IntN(25)
			req := Request{Size: page, Sort: sort, SearchAfterDoc: -1, TotalHitsThreshold: math.MaxInt}
			var got []int
			for n := 0; ; n++ {
				td, err := c.searcher.Search(ctx, q, req)
				if err != nil {
					t.Fatalf("seed %d: %v: %v", seed, q, err)
				}
				if td.TotalHits != all.TotalHits || td.Relation != RelationEqual {
					t.Fatalf("seed %d: %v sort %+v: page total %d, want %d", seed, q, sort, td.TotalHits, all.TotalHits)
				}
				for _, h := range td.Hits {
					if ev := c.expectedValues(sort, h.Doc, scores); CompareSortValues(sort, ev, h.SortValues) != 0 || fmt.Sprint(ev) != fmt.Sprint(h.SortValues) {
						t.Fatalf("seed %d: %v doc %d sort values %v, want %v", seed, q, h.Doc, h.SortValues, ev)
					}
					got = append(got, h.Doc)
				}
				if len(td.Hits) < page {
					break
				}
				last := td.Hits[len(td.Hits)-1]
				req.SearchAfter, req.SearchAfterDoc = last.SortValues, last.Doc
				if n > len(want)+1 {
					t.Fatalf("seed %d: paging does not end", seed)
				}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("seed %d: %v sort %+v page %d:\ngot  %v\nwant %v", seed, q, sort, page, got, want)
			}
			paged += len(got)
		}
	}
	if paged < 100*numSeeds() {
		t.Fatalf("only %d hits paged: the test is not exercising search_after", paged)
	}
}

// TestSortByDocEarlyTermination: sorted by _doc the searcher stops after k
// hits past the threshold and says the count is a lower bound.
func TestSortByDocEarlyTermination(t *testing.T) {
	r := rand.New(rand.NewPCG(42, 1))
	c := buildCorpus(t, r, memBuilder, 3000, 50, false)
	ctx := context.Background()
	q := &MatchAllQuery{}
	sort := []SortField{{Type: SortByDoc}}
	td, err := c.searcher.Search(ctx, q, Request{Size: 5, Sort: sort, TotalHitsThreshold: 100})
	if err != nil {
		t.Fatal(err)
	}
	if td.Relation != RelationGreaterThanOrEqual || td.TotalHits != 100 {
		t.Fatalf("total %d %v, want 100 gte", td.TotalHits, td.Relation)
	}
	for i, h := range td.Hits {
		if h.Doc != i {
			t.Fatalf("hit %d is doc %d", i, h.Doc)
		}
	}
	// search_after far into the index: still the next docs.
	td, err = c.searcher.Search(ctx, q, Request{Size: 3, Sort: sort, SearchAfter: []SortValue{{Int: 2500}}, SearchAfterDoc: -1, TotalHitsThreshold: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(td.Hits) != 3 || td.Hits[0].Doc != 2501 || td.Hits[2].Doc != 2503 {
		t.Fatalf("after 2500: %+v", td.Hits)
	}
	exact, err := c.searcher.Search(ctx, q, Request{Size: 3, Sort: sort, TotalHitsThreshold: math.MaxInt})
	if err != nil || exact.TotalHits != 3000 || exact.Relation != RelationEqual {
		t.Fatalf("exact count %d %v %v", exact.TotalHits, exact.Relation, err)
	}
}
