package search

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/sluice-search/sluice/node/engine/analysis"
	"github.com/sluice-search/sluice/node/engine/codec"
	"github.com/sluice-search/sluice/node/engine/document"
	"github.com/sluice-search/sluice/node/engine/dwpt"
	"github.com/sluice-search/sluice/node/engine/index"
	"github.com/sluice-search/sluice/node/engine/store"
)

// Benchmarks run on real codec segments (mmap'd from a temp dir) built once
// per process from the enwiki corpus (SLUICE_CORPUS, default the shared
// copy; SLUICE_BENCH_DOCS docs, default 400,000), or from synthetic Zipf
// docs when the corpus is absent. Fields: title and body (text), len (long:
// body bytes).

// benchSegmentDocs gives two segments for the whole corpus, as the peers'
// bulk-loaded Lucene index has.
const benchSegmentDocs = 210_000

var (
	benchOnce     sync.Once
	benchSearcher *Searcher
	benchErr      error
)

func benchIndex(b *testing.B) *Searcher {
	benchOnce.Do(func() { benchSearcher, benchErr = buildBenchIndex(b) })
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchSearcher
}

func buildBenchIndex(b *testing.B) (*Searcher, error) {
	n := 400_000
	if v, err := strconv.Atoi(os.Getenv("SLUICE_BENCH_DOCS")); err == nil && v > 0 {
		n = v
	}
	dirPath, err := os.MkdirTemp("", "search-bench")
	if err != nil {
		return nil, err
	}
	// The segments are mmap'd; the temp dir goes when the process exits.
	dir, err := store.NewFSDirectory(dirPath)
	if err != nil {
		return nil, err
	}
	c := codec.New(codec.Options{})
	an := analysis.NewStandard()
	var buf analysis.Buffer
	var leaves []Leaf
	var seg *dwpt.DWPT
	segDocs := 0
	flush := func() error {
		info := &index.SegmentInfo{Name: fmt.Sprintf("_%d", len(leaves)), MaxDoc: segDocs}
		if err := c.WriteSegment(context.Background(), dir, info, seg, store.IOContext{}); err != nil {
			return err
		}
		seg.Release()
		r, err := c.OpenSegment(dir, info)
		if err != nil {
			return err
		}
		base := 0
		if len(leaves) > 0 {
			last := leaves[len(leaves)-1]
			base = last.DocBase + last.Reader.MaxDoc()
		}
		leaves = append(leaves, Leaf{Reader: r, DocBase: base})
		seg, segDocs = nil, 0
		return nil
	}
	var doc document.Document
	add := func(id, title, body []byte) error {
		if seg == nil {
			seg = dwpt.New(dwpt.NewAllocator(0))
		}
		doc.Reset()
		doc.ID = append(doc.ID, id...)
		buf.Reset()
		for _, f := range []struct {
			name string
			text []byte
		}{{"title", title}, {"body", body}} {
			start := len(buf.Tokens)
			an.Analyze(&buf, f.text, 0)
			toks := buf.Tokens[start:]
			if len(toks) > 0 {
				doc.Fields = append(doc.Fields, document.Field{Name: f.name, Type: document.Text, Tokens: toks, Length: int32(len(toks))})
			}
		}
		doc.Fields = append(doc.Fields, document.Field{Name: "len", Type: document.Long,
			Tokens:   []document.Token{{Term: document.EncodeSortable(nil, int64(len(body)))}},
			Numerics: []int64{int64(len(body))}})
		if _, err := seg.AddDocument(&doc); err != nil {
			return err
		}
		if segDocs++; segDocs == benchSegmentDocs {
			return flush()
		}
		return nil
	}
	path := os.Getenv("SLUICE_CORPUS")
	if path == "" {
		path = "/work/shared/corpus/enwiki-1k.jsonl.zst"
	}
	if f, err := os.Open(path); err == nil {
		defer f.Close()
		zr, err := zstd.NewReader(f)
		if err != nil {
			return nil, err
		}
		defer zr.Close()
		sc := bufio.NewScanner(zr)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		var rec struct{ ID, Title, Body string }
		for i := 0; i < n && sc.Scan(); i++ {
			if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
				return nil, fmt.Errorf("corpus line %d: %w", i+1, err)
			}
			if err := add([]byte(rec.ID), []byte(rec.Title), []byte(rec.Body)); err != nil {
				return nil, err
			}
		}
		if err := sc.Err(); err != nil {
			return nil, err
		}
	} else {
		b.Logf("corpus %s unavailable (%v): synthetic Zipf docs", path, err)
		r := rand.New(rand.NewPCG(1, 2))
		zipf := rand.NewZipf(r, 1.07, 2, 200_000)
		var body []byte
		for i := 0; i < n; i++ {
			body = body[:0]
			for j := 0; j < 150; j++ {
				body = fmt.Appendf(body, "w%d ", zipf.Uint64())
			}
			if err := add(fmt.Appendf(nil, "%d", i), body[:20], body); err != nil {
				return nil, err
			}
		}
	}
	if segDocs > 0 {
		if err := flush(); err != nil {
			return nil, err
		}
	}
	return NewSearcher(leaves), nil
}

// termNearDF returns a body term whose doc freq is closest to frac of all
// docs (a stand-in for luceneutil's High/Med term classes).
func termNearDF(s *Searcher, frac float64, skip ...string) []byte {
	total := 0
	for _, l := range s.leaves {
		total += l.Reader.MaxDoc()
	}
	want := frac * float64(total)
	leaf := s.leaves[0]
	scale := float64(total) / float64(leaf.Reader.MaxDoc())
	te := leaf.Reader.Terms("body").Iterator()
	var best []byte
	bestDist := math.Inf(1)
	for te.Next() {
		if len(te.Term()) < 3 || slices.Contains(skip, string(te.Term())) {
			continue
		}
		if d := math.Abs(float64(te.DocFreq())*scale - want); d < bestDist {
			bestDist, best = d, slices.Clone(te.Term())
		}
	}
	return best
}

type benchQueries struct {
	high, med []byte
	term      Query
	or2, and2 Query
	phrase    Query
}

var (
	benchQOnce sync.Once
	benchQ     benchQueries
)

func queries(s *Searcher) *benchQueries {
	benchQOnce.Do(func() {
		q := &benchQ
		q.high = termNearDF(s, 0.05)
		q.med = termNearDF(s, 0.01, string(q.high))
		q.term = &TermQuery{Field: "body", Term: q.high}
		q.or2 = MatchQuery("body", [][]byte{q.high, q.med}, OperatorOr, 0)
		q.and2 = MatchQuery("body", [][]byte{q.high, q.med}, OperatorAnd, 0)
		q.phrase = &PhraseQuery{Field: "body", Terms: [][]byte{[]byte("united"), []byte("states")}}
	})
	return &benchQ
}

func runBench(b *testing.B, q Query, req Request) {
	s := benchIndex(b)
	ctx := context.Background()
	td, err := s.Search(ctx, q, req)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(td.TotalHits), "hits")
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.Search(ctx, q, req); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkTermTop10(b *testing.B) {
	s := benchIndex(b)
	q := queries(s)
	b.Logf("term %q (high) / %q (med)", q.high, q.med)
	runBench(b, q.term, Request{Size: 10})
}

func BenchmarkOr2Top10(b *testing.B) { runBench(b, queries(benchIndex(b)).or2, Request{Size: 10}) }

func BenchmarkAnd2Top10(b *testing.B) { runBench(b, queries(benchIndex(b)).and2, Request{Size: 10}) }

func BenchmarkPhraseTop10(b *testing.B) {
	runBench(b, queries(benchIndex(b)).phrase, Request{Size: 10})
}

func BenchmarkTermSortedByNumericTop10(b *testing.B) {
	runBench(b, queries(benchIndex(b)).term, Request{Size: 10, Sort: []SortField{{Type: SortByNumeric, Field: "len", Desc: true}}})
}

func BenchmarkTermCount(b *testing.B) {
	runBench(b, queries(benchIndex(b)).or2, Request{})
}

// BenchmarkTermTop10Exhaustive scores every matching doc (exact counts),
// the baseline pruning is measured against.
func BenchmarkTermTop10Exhaustive(b *testing.B) {
	runBench(b, queries(benchIndex(b)).term, Request{Size: 10, TotalHitsThreshold: math.MaxInt})
}

func BenchmarkOr2Top10Exhaustive(b *testing.B) {
	runBench(b, queries(benchIndex(b)).or2, Request{Size: 10, TotalHitsThreshold: math.MaxInt})
}

// peerFreqTerms are the frequent terms of the peers' query benchmark
// (../shared/peers/terms.q), with a fallback for the synthetic corpus.
func peerFreqTerms(s *Searcher) [][]byte {
	var terms [][]byte
	if data, err := os.ReadFile("/work/shared/peers/terms.q"); err == nil {
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) == 2 && f[0] == "freq" {
				terms = append(terms, []byte(f[1]))
			}
		}
	}
	if len(terms) == 0 {
		terms = append(terms, queries(s).high)
	}
	return terms
}

// BenchmarkPeerFreqTermsTop10 is the peers' query experiment: TermQuery
// on body, top-10 by score, cycling over the 20 frequent terms, with
// Lucene's total-hits threshold (1,000); it reports the median latency.
func BenchmarkPeerFreqTermsTop10(b *testing.B) {
	benchPeerTerms(b, 1000)
}

// BenchmarkPeerFreqTermsTop10ES is the same with Elasticsearch's default
// threshold (10,000), what Sluice nodes run.
func BenchmarkPeerFreqTermsTop10ES(b *testing.B) {
	benchPeerTerms(b, DefaultTotalHitsThreshold)
}

func benchPeerTerms(b *testing.B, threshold int) {
	s := benchIndex(b)
	terms := peerFreqTerms(s)
	qs := make([]Query, len(terms))
	for i, t := range terms {
		qs[i] = &TermQuery{Field: "body", Term: t}
	}
	benchLatency(b, qs, Request{Size: 10, TotalHitsThreshold: threshold})
}

// benchLatency runs the queries round-robin and reports the median and
// p99 latency besides the mean.
func benchLatency(b *testing.B, qs []Query, req Request) {
	s := benchIndex(b)
	ctx := context.Background()
	lat := make([]time.Duration, 0, 1<<16)
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		start := time.Now()
		if _, err := s.Search(ctx, qs[i%len(qs)], req); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
		i++
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkPeerOr2Top10 is the 2-term OR class of `sluice bench shard`:
// consecutive pairs of the peers' frequent terms (1+2, 3+4, ...) as a
// match OR, top-10 at Lucene's threshold (1,000), cycling over the pairs;
// it reports the median and p99 latency, comparable with the Lucene
// harness's or2 class.
func BenchmarkPeerOr2Top10(b *testing.B) {
	s := benchIndex(b)
	terms := peerFreqTerms(s)
	if len(terms) < 2 {
		terms = [][]byte{queries(s).high, queries(s).med}
	}
	var qs []Query
	for i := 0; i+1 < len(terms); i += 2 {
		qs = append(qs, MatchQuery("body", [][]byte{terms[i], terms[i+1]}, OperatorOr, 0))
	}
	benchLatency(b, qs, Request{Size: 10, TotalHitsThreshold: 1000})
}

// BenchmarkTermFilteredByRangeTop10 is a match filtered by a wide numeric
// range (most docs): the range verifies candidates by doc values, so the
// cost follows the term, not the range's postings.
func BenchmarkTermFilteredByRangeTop10(b *testing.B) {
	q := queries(benchIndex(b))
	runBench(b, &BooleanQuery{Must: []Query{&TermQuery{Field: "body", Term: q.med}},
		Filter: []Query{NewLongRange("len", 500, 5000, true, true)}}, Request{Size: 10})
}

// BenchmarkOr2FilteredTop10 is Elasticsearch's common shape, a match (OR)
// with a range filter: MaxScore over the match, filter checked per
// candidate.
func BenchmarkOr2FilteredTop10(b *testing.B) {
	q := queries(benchIndex(b))
	runBench(b, &BooleanQuery{Must: []Query{q.or2},
		Filter: []Query{NewLongRange("len", 500, 5000, true, true)}}, Request{Size: 10})
}

// BenchmarkScanPage is one page of a point-in-time scan: match_all sorted
// by _doc, 1,000 hits after a search_after in the middle of the index.
func BenchmarkScanPage(b *testing.B) {
	s := benchIndex(b)
	mid := 0
	for _, l := range s.leaves {
		mid += l.Reader.MaxDoc()
	}
	runBench(b, &MatchAllQuery{}, Request{Size: 1000, Sort: []SortField{{Type: SortByDoc}},
		SearchAfter: []SortValue{{Int: int64(mid / 2)}}, SearchAfterDoc: -1, TotalHitsThreshold: 1})
}
