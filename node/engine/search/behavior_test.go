package search

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/sluice-search/sluice/node/engine/document"
	"github.com/sluice-search/sluice/node/engine/index"
)

// textDocs makes n docs whose body is the given words.
func textDocs(bodies ...string) []document.Document {
	docs := make([]document.Document, len(bodies))
	for i, b := range bodies {
		docs[i].ID = fmt.Appendf(nil, "%d", i)
		f := document.Field{Name: "body", Type: document.Text}
		pos := int32(0)
		for _, w := range splitWords(b) {
			f.Tokens = append(f.Tokens, document.Token{Term: []byte(w), Position: pos})
			pos++
		}
		f.Length = pos
		docs[i].Fields = []document.Field{f}
	}
	return docs
}

func splitWords(s string) []string {
	var out []string
	start := -1
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ' ' {
			if start >= 0 {
				out = append(out, s[start:i])
			}
			start = -1
		} else if start < 0 {
			start = i
		}
	}
	return out
}

// TestBM25Reference checks BM25 against the textbook formula (Lucene's
// form, without (k1+1)) over a grid of frequencies, lengths and stats.
func TestBM25Reference(t *testing.T) {
	tests := []struct {
		df, n  int64
		sumTTF int64
		boost  float32
	}{
		{1, 1, 10, 1}, {1, 1000, 12345, 1}, {999, 1000, 5000, 2.5}, {50, 60, 60, 0.5},
	}
	for _, tc := range tests {
		avgdl := float64(tc.sumTTF) / float64(tc.n)
		var c normCache
		c.fill(avgFieldLength(tc.sumTTF, tc.n))
		sim := bm25{weight: tc.boost * idf(tc.df, tc.n), cache: &c}
		wantIDF := math.Log(1 + (float64(tc.n-tc.df)+0.5)/(float64(tc.df)+0.5))
		for _, freq := range []int{1, 2, 3, 10, 1000} {
			for _, length := range []int{0, 1, 5, 23, 24, 100, 1000, 100000} {
				norm := index.EncodeNorm(length)
				dl := float64(index.DecodeNorm(norm))
				want := float64(tc.boost) * wantIDF * float64(freq) / (float64(freq) + 1.2*(0.25+0.75*dl/avgdl))
				got := float64(sim.score(float32(freq), norm))
				if math.Abs(got-want) > 1e-5*max(1, want) {
					t.Errorf("df=%d n=%d freq=%d len=%d: got %v want %v", tc.df, tc.n, freq, length, got, want)
				}
				if got > float64(sim.maxScore()) {
					t.Errorf("score %v above the term's bound %v", got, sim.maxScore())
				}
			}
		}
	}
}

// TestTotalHitsAtThreshold: counts are exact up to and including the
// threshold, lower bounds beyond, on every collection path.
func TestTotalHitsAtThreshold(t *testing.T) {
	bodies := make([]string, 300)
	for i := range bodies {
		bodies[i] = "a b"
		if i%3 == 0 {
			bodies[i] = "a a b c"
		}
	}
	docs := textDocs(bodies...)
	s := NewSearcher([]Leaf{{Reader: newMemLeaf(docs[:120])}, {Reader: newMemLeaf(docs[120:]), DocBase: 120}})
	ctx := context.Background()
	queries := []Query{
		&TermQuery{Field: "body", Term: []byte("a")},
		&BooleanQuery{Should: []Query{&TermQuery{Field: "body", Term: []byte("a")}, &TermQuery{Field: "body", Term: []byte("c")}}},
		&BooleanQuery{Must: []Query{&TermQuery{Field: "body", Term: []byte("a")}, &TermQuery{Field: "body", Term: []byte("b")}}},
		&BooleanQuery{Filter: []Query{&TermQuery{Field: "body", Term: []byte("b")}}},
	}
	reqs := []struct {
		name string
		req  Request
	}{
		{"top-k", Request{Size: 5}},
		{"count", Request{}},
		{"doc order", Request{Size: 5, Sort: []SortField{{Type: SortByDoc}}}},
	}
	for _, q := range queries {
		for _, r := range reqs {
			for _, tc := range []struct {
				threshold int
				total     int64
				rel       Relation
			}{{300, 300, RelationEqual}, {1000, 300, RelationEqual}, {299, 299, RelationGreaterThanOrEqual}, {10, 10, RelationGreaterThanOrEqual}} {
				req := r.req
				req.TotalHitsThreshold = tc.threshold
				td, err := s.Search(ctx, q, req)
				if err != nil {
					t.Fatal(err)
				}
				// An exact count is always allowed (counts known per
				// leaf); a lower bound counts at least the threshold.
				exact := td.Relation == RelationEqual && td.TotalHits == 300
				bound := tc.rel != RelationEqual && td.Relation == tc.rel && td.TotalHits >= tc.total && td.TotalHits <= 300
				if !exact && !bound {
					t.Errorf("%v %s threshold %d: %d %v, want %d %v", q, r.name, tc.threshold, td.TotalHits, td.Relation, tc.total, tc.rel)
				}
			}
		}
	}
}

// TestDeletedDocsNeverReturned deletes every doc holding a term: no path
// may return or count them.
func TestDeletedDocsNeverReturned(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	docs := genDocs(r, 2000, 50, 0)
	leaf := newMemLeaf(docs)
	live := index.NewFixedBitSetAllSet(len(docs))
	o := &oracleIndex{docs: docs}
	term := []byte("w2")
	for d := range docs {
		if o.hasTerm(d, "body", term) {
			live.Clear(d)
		}
	}
	s := NewSearcher([]Leaf{{Reader: leaf, Live: live}})
	ctx := context.Background()
	for _, q := range []Query{
		&TermQuery{Field: "body", Term: term},
		&PhraseQuery{Field: "body", Terms: [][]byte{term, term}, Slop: 2},
		&ConstantScoreQuery{Query: &TermQuery{Field: "body", Term: term}},
	} {
		for _, req := range []Request{{Size: 10}, {}, {Size: 10, Sort: []SortField{{Type: SortByDoc}}}, {Size: 10, TotalHitsThreshold: 1}} {
			td, err := s.Search(ctx, q, req)
			if err != nil {
				t.Fatal(err)
			}
			if td.TotalHits != 0 || len(td.Hits) != 0 {
				t.Errorf("%v %+v: %d hits %v", q, req, td.TotalHits, td.Hits)
			}
		}
	}
	n, err := s.Count(ctx, &MatchAllQuery{})
	if err != nil || n != int64(live.Cardinality()) {
		t.Fatalf("match_all count %d, live %d (%v)", n, live.Cardinality(), err)
	}
}

func TestInvalidRequests(t *testing.T) {
	s := NewSearcher([]Leaf{{Reader: newMemLeaf(textDocs("a b c"))}})
	tests := []struct {
		name string
		q    Query
		req  Request
	}{
		{"negative boost", &BoostQuery{Query: &MatchAllQuery{}, Boost: -1}, Request{Size: 1}},
		{"NaN boost", &BoostQuery{Query: &MatchAllQuery{}, Boost: float32(math.NaN())}, Request{Size: 1}},
		{"negative msm", &BooleanQuery{Should: []Query{&MatchAllQuery{}}, MinimumShouldMatch: -1}, Request{Size: 1}},
		{"phrase positions", &PhraseQuery{Field: "body", Terms: [][]byte{[]byte("a"), []byte("b")}, Positions: []int{0}}, Request{Size: 1}},
		{"phrase positions decrease", &PhraseQuery{Field: "body", Terms: [][]byte{[]byte("a"), []byte("b")}, Positions: []int{1, 0}}, Request{Size: 1}},
		{"negative slop", &PhraseQuery{Field: "body", Terms: [][]byte{[]byte("a"), []byte("b")}, Slop: -1}, Request{Size: 1}},
		{"negative size", &MatchAllQuery{}, Request{Size: -1}},
		{"search_after arity", &MatchAllQuery{}, Request{Size: 1, Sort: []SortField{{Type: SortByDoc}}, SearchAfter: []SortValue{{}, {}}}},
		{"sort without field", &MatchAllQuery{}, Request{Size: 1, Sort: []SortField{{Type: SortByNumeric}}}},
	}
	for _, tc := range tests {
		if _, err := s.Search(context.Background(), tc.q, tc.req); !errors.Is(err, ErrInvalidQuery) {
			t.Errorf("%s: err = %v, want ErrInvalidQuery", tc.name, err)
		}
	}
}

// TestPhraseFrequencies checks exact and sloppy phrase frequencies on
// hand-made positions (Lucene's sloppy weights 1/(1+distance)).
func TestPhraseFrequencies(t *testing.T) {
	tests := []struct {
		pos   [][]int // per term, already minus the phrase offset (its index)
		slop  int
		exact int
		want  float32
		group []int // repeat groups
	}{
		{[][]int{{0, 5, 9}, {0, 4, 9}}, 0, 2, 2, nil},
		{[][]int{{0}, {1}}, 0, 0, 0, nil},
		{[][]int{{0}, {1}}, 1, 0, 0.5, nil},
		{[][]int{{3}, {0}}, 2, 0, 0, nil},
		{[][]int{{3}, {0}}, 3, 0, 0.25, nil},
		{[][]int{{0, 10}, {0, 12}, {1, 11}}, 2, 0, 0.5 + 1.0/3, nil},
		// "a a"~1 over a doc with one "a" at 5: both terms would sit on
		// position 5, so no match.
		{[][]int{{5}, {4}}, 1, 0, 0, []int{0, 0}},
		// "a a"~1 over "a x a" (0, 2): a@0, a@2 is distance 1.
		{[][]int{{0, 2}, {-1, 1}}, 1, 0, 0.5, []int{0, 0}},
		// Same doc, exact adjacency "a a" at 3,4 plus the lone 0: one
		// exact match (1) and a@0,a@3 is too far for slop 1.
		{[][]int{{0, 3, 4}, {-1, 2, 3}}, 1, 0, 1, []int{0, 0}},
	}
	for i, tc := range tests {
		if tc.slop == 0 {
			if got := exactPhraseFreq(tc.pos); got != tc.exact {
				t.Errorf("case %d: exact freq %d want %d", i, got, tc.exact)
			}
			continue
		}
		offs := make([]int, len(tc.pos))
		for j := range offs {
			offs[j] = j
		}
		m := sloppyMatcher{pos: tc.pos, cur: make([]int, len(tc.pos)), offs: offs, group: tc.group}
		if got := m.freq(tc.slop); math.Abs(float64(got-tc.want)) > 1e-6 {
			t.Errorf("case %d: sloppy freq %v want %v", i, got, tc.want)
		}
	}
}

// TestConcurrentSearches: one Searcher serves many goroutines (pooled
// state must not leak between searches).
func TestConcurrentSearches(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	c := buildCorpus(t, r, memBuilder, 1000, 80, true)
	ctx := context.Background()
	var qs []Query
	var want []*TopDocs
	for i := 0; i < 20; i++ {
		q := genQuery(r, c.oracle, 2)
		td, err := c.searcher.Search(ctx, q, Request{Size: 10})
		if err != nil {
			t.Fatal(err)
		}
		qs, want = append(qs, q), append(want, td)
	}
	errc := make(chan error, 4)
	for g := 0; g < 4; g++ {
		go func() {
			for round := 0; round < 20; round++ {
				for i, q := range qs {
					td, err := c.searcher.Search(ctx, q, Request{Size: 10})
					if err != nil {
						errc <- err
						return
					}
					if td.TotalHits != want[i].TotalHits || !equalHits(td.Hits, want[i].Hits) {
						errc <- fmt.Errorf("%v: concurrent result differs", q)
						return
					}
				}
			}
			errc <- nil
		}()
	}
	for g := 0; g < 4; g++ {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
}

// TestSloppyPhrasesMatchOracle hammers phrases over a tiny vocabulary, so
// terms repeat in phrases and docs, against the oracle's exhaustive
// definition (one position per term, repeats on distinct positions).
func TestSloppyPhrasesMatchOracle(t *testing.T) {
	ctx := context.Background()
	var matched, sloppyRepeats int64
	for seed := uint64(1); seed <= uint64(numSeeds()); seed++ {
		r := rand.New(rand.NewPCG(seed, 77))
		c := buildCorpus(t, r, memBuilder, 300, 6, false)
		for i := 0; i < 40; i++ {
			q := &PhraseQuery{Field: "body", Slop: r.IntN(4)}
			for j, n := 0, 2+r.IntN(3); j < n; j++ {
				q.Terms = append(q.Terms, fmt.Appendf(nil, "w%d", 2+r.IntN(4)))
			}
			td, err := c.searcher.Search(ctx, q, Request{Size: 1000, TotalHitsThreshold: math.MaxInt})
			if err != nil {
				t.Fatal(err)
			}
			checkTopDocs(t, fmt.Sprintf("seed %d", seed), c, q, 1000, td, true)
			matched += td.TotalHits
			if q.Slop > 0 && groupRepeats(q.Terms) != nil {
				sloppyRepeats += td.TotalHits
			}
		}
	}
	if matched == 0 || sloppyRepeats == 0 {
		t.Fatalf("phrases matched %d docs, sloppy ones with repeats %d: nothing exercised", matched, sloppyRepeats)
	}
}

// usesDocValues reports whether a scorer tree verifies a range by doc
// values.
func usesDocValues(s scorer) bool {
	switch s := s.(type) {
	case *dvRangeScorer:
		return true
	case *rescoredScorer:
		return usesDocValues(s.scorer)
	case *conjunctionScorer:
		for _, c := range s.all {
			if usesDocValues(c) {
				return true
			}
		}
	}
	return false
}

// TestRangeFilterVerifiesByDocValues: a wide range filtering a selective
// clause checks doc values per candidate instead of reading the range's
// postings — and matches exactly what the postings would, falling back to
// postings when a field is multi-valued.
func TestRangeFilterVerifiesByDocValues(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 21))
	docs := genDocs(r, 3000, 300, 0)
	// Make "num" multi-valued in the second half's leaf only.
	for d := 1500; d < 3000; d += 2 {
		for i := range docs[d].Fields {
			if f := &docs[d].Fields[i]; f.Name == "num" {
				v := f.Numerics[0] + 7
				f.Numerics = append(f.Numerics, v)
				f.Tokens = append(f.Tokens, document.Token{Term: document.EncodeSortable(nil, v)})
			}
		}
	}
	o := &oracleIndex{docs: docs, deleted: make([]bool, len(docs))}
	c := &corpus{oracle: o, searcher: NewSearcher([]Leaf{{Reader: newMemLeaf(docs[:1500])}, {Reader: newMemLeaf(docs[1500:]), DocBase: 1500}})}
	rare := &TermQuery{Field: "body", Term: []byte("w40")}
	tests := []struct {
		name    string
		filter  Query
		wantDV0 bool // leaf 0 (single-valued) uses doc values
	}{
		{"numeric", NewLongRange("num", -20, 20, true, false), true},
		{"numeric open", &RangeQuery{Field: "num", Upper: document.EncodeSortable(nil, 3), IncludeUpper: true}, true},
		{"numeric exclusive", NewLongRange("num", -5, 5, false, false), true},
		{"keyword", &RangeQuery{Field: "tag", Lower: []byte("t03"), Upper: []byte("t10"), IncludeLower: true}, true},
		{"keyword absent bounds", &RangeQuery{Field: "tag", Lower: []byte("t03x"), Upper: []byte("t10x")}, true},
		{"constant score", &ConstantScoreQuery{Query: NewLongRange("num", 0, 50, true, true)}, true},
	}
	ctx := context.Background()
	for _, tc := range tests {
		q := &BooleanQuery{Must: []Query{rare}, Filter: []Query{tc.filter}}
		td, err := c.searcher.Search(ctx, q, Request{Size: 100, TotalHitsThreshold: math.MaxInt})
		if err != nil {
			t.Fatal(err)
		}
		checkTopDocs(t, tc.name, c, q, 100, td, true)
		if td.TotalHits == 0 {
			t.Fatalf("%s: no hits, nothing checked", tc.name)
		}
		qc := newQueryContext(c.searcher)
		w, err := q.createWeight(qc, scoreMode{scores: true, topScores: true}, 1)
		if err != nil {
			t.Fatal(err)
		}
		for i := range c.searcher.leaves {
			s, err := w.scorer(&leafContext{ord: i, leaf: &c.searcher.leaves[i]})
			if err != nil || s == nil {
				t.Fatalf("%s: leaf %d scorer %v %v", tc.name, i, s, err)
			}
			// Leaf 1 has multi-valued nums: postings only.
			want := i == 0 && tc.wantDV0 || i == 1 && tc.name[:7] == "keyword"
			if got := usesDocValues(s); got != want {
				t.Errorf("%s: leaf %d uses doc values %v, want %v", tc.name, i, got, want)
			}
		}
		qc.release()
	}
}

// flakyCtx is live for its first Err call (the per-leaf check) and
// cancelled afterwards, so only polling inside a leaf can notice.
type flakyCtx struct {
	context.Context
	calls int
}

func (c *flakyCtx) Err() error {
	if c.calls++; c.calls > 1 {
		return context.Canceled
	}
	return nil
}

// TestCancelInsideLeaf: a search over one large segment stops when its
// context ends, on every collection path.
func TestCancelInsideLeaf(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	docs := genDocs(r, 20000, 50, 0)
	s := NewSearcher([]Leaf{{Reader: newMemLeaf(docs)}})
	or := &BooleanQuery{Should: []Query{&TermQuery{Field: "body", Term: []byte("w2")}, &TermQuery{Field: "body", Term: []byte("w3")}}}
	for _, tc := range []struct {
		name string
		q    Query
		req  Request
	}{
		{"term top-k", &TermQuery{Field: "body", Term: []byte("w2")}, Request{Size: 10}},
		{"maxscore", or, Request{Size: 10}},
		{"generic", &MatchAllQuery{}, Request{Size: 10}},
		{"count", or, Request{TotalHitsThreshold: math.MaxInt}},
		{"sort", &MatchAllQuery{}, Request{Size: 10, Sort: []SortField{{Type: SortByNumeric, Field: "num"}}}},
	} {
		if _, err := s.Search(&flakyCtx{Context: context.Background()}, tc.q, tc.req); !errors.Is(err, context.Canceled) {
			t.Errorf("%s: err = %v, want context.Canceled", tc.name, err)
		}
	}
}
