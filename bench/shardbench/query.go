package shardbench

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/sluice-search/sluice/bench/report"
	"github.com/sluice-search/sluice/node/engine/search"
)

// QueryTerm is one query term of a class ("freq" or "rare"), as in the
// peers' terms.tsv.
type QueryTerm struct {
	Class string
	Term  string
}

// LoadTerms reads the peers' terms file (class<TAB>term[<TAB>df], '#'
// comments).
func LoadTerms(path string) ([]QueryTerm, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var terms []QueryTerm
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fs := strings.Split(line, "\t")
		if len(fs) < 2 {
			return nil, fmt.Errorf("%s: bad line %q", path, line)
		}
		terms = append(terms, QueryTerm{Class: fs[0], Term: fs[1]})
	}
	return terms, sc.Err()
}

// QueryConfig configures the query experiment.
type QueryConfig struct {
	Terms        []QueryTerm
	WarmupRounds int // default 200, as the peers
	Rounds       int // default 200
}

// QueryClass is the latency of one query class.
type QueryClass struct {
	Class   string  `json:"class"`
	Samples int     `json:"samples"`
	P50us   float64 `json:"p50_us"`
	P99us   float64 `json:"p99_us"`
	Hits    int64   `json:"top10_hits"`
}

// RunQueries opens the committed index in dir and runs, single-threaded,
// each term as a body TermQuery top-10 (classes "freq" and "rare") and
// consecutive pairs of frequent terms as 2-term OR queries ("or2").
func RunQueries(ctx context.Context, cfg Config, qc QueryConfig, dir string) ([]QueryClass, error) {
	if qc.WarmupRounds <= 0 {
		qc.WarmupRounds = 200
	}
	if qc.Rounds <= 0 {
		qc.Rounds = 200
	}
	m, err := newMapping()
	if err != nil {
		return nil, err
	}
	e, err := openEngine(ctx, m, dir, cfg.RAMBufferMB)
	if err != nil {
		return nil, err
	}
	defer e.Close(context.Background())
	if _, err := e.Refresh(ctx); err != nil {
		return nil, err
	}
	r := e.Acquire()
	defer r.Release()
	s := search.NewSearcher(r.Leaves())

	type query struct {
		class string
		q     search.Query
	}
	var qs []query
	var freq [][]byte
	for _, t := range qc.Terms {
		qs = append(qs, query{t.Class, &search.TermQuery{Field: "body", Term: []byte(t.Term)}})
		if t.Class == "freq" {
			freq = append(freq, []byte(t.Term))
		}
	}
	for i := 0; i+1 < len(freq); i += 2 {
		qs = append(qs, query{"or2", search.MatchQuery("body", [][]byte{freq[i], freq[i+1]}, search.OperatorOr, 0)})
	}
	lat := map[string][]time.Duration{}
	hits := map[string]int64{}
	// Lucene's harness counts exactly up to 1,000 hits before pruning.
	req := search.Request{Size: 10, TotalHitsThreshold: 1000}
	for round := 0; round < qc.WarmupRounds+qc.Rounds; round++ {
		for _, q := range qs {
			t0 := time.Now()
			td, err := s.Search(ctx, q.q, req)
			took := time.Since(t0)
			if err != nil {
				return nil, fmt.Errorf("query %s: %w", q.q, err)
			}
			if round >= qc.WarmupRounds {
				lat[q.class] = append(lat[q.class], took)
				hits[q.class] += int64(len(td.Hits))
			}
		}
	}
	var out []QueryClass
	for _, class := range []string{"freq", "rare", "or2"} {
		l := lat[class]
		if len(l) == 0 {
			continue
		}
		sum := report.Summarize(l)
		out = append(out, QueryClass{Class: class, Samples: sum.Count, P50us: sum.P50 * 1000, P99us: sum.P99 * 1000, Hits: hits[class]})
	}
	return out, nil
}
