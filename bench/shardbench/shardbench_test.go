package shardbench

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-search/sluice/bench/corpus"
)

// TestSmoke runs both experiments on a small generated corpus: it checks
// they work and their outputs are consistent, not how fast anything is.
func TestSmoke(t *testing.T) {
	docs := corpus.Generate(3000, 1)
	term := strings.Fields(docs[0].Body)[0]
	out := t.TempDir()
	res, err := Run(context.Background(), Options{
		Config:     Config{Docs: docs, CorpusDesc: "generated", RAMBufferMB: 1},
		Threads:    []int{1, 2},
		SourceRuns: []int{1},
		NRT:        NRTConfig{Duration: 2 * time.Second, RateMB: 2, Term: term},
		Query: QueryConfig{WarmupRounds: 2, Rounds: 3, Terms: []QueryTerm{
			{"freq", term}, {"freq", strings.Fields(docs[1].Body)[1]}, {"rare", "zzznotaword"}}},
		Out: out,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Index) != 3 {
		t.Fatalf("%d index runs", len(res.Index))
	}
	for _, ir := range res.Index {
		if ir.NumDocs != len(docs) || ir.DocsPerSec <= 0 || ir.IndexMB <= 0 || ir.Flushes == 0 {
			t.Errorf("implausible index result %+v", ir)
		}
	}
	if full, peer := res.Index[2], res.Index[0]; full.IndexMB <= peer.IndexMB {
		t.Errorf("storing whole sources (%.2f MB) should take more room than id+title (%.2f MB)", full.IndexMB, peer.IndexMB)
	}
	if len(res.NRT) != 2 || res.NRT[0].Throttle != "off" || res.NRT[1].Throttle != "auto" {
		t.Fatalf("want NRT runs with merge throttle off then auto, got %d", len(res.NRT))
	}
	for _, n := range res.NRT {
		// One reopen at least: at load 20 a flush took 2.9 s of the 2 s run.
		if n.Reopen.Count < 1 || n.Updates == 0 || n.QPS <= 0 || n.TermHits == 0 || !n.MergeYield {
			t.Fatalf("implausible NRT result %+v", n)
		}
		for _, ps := range n.PerSecond {
			if phases := ps.SwapMs + ps.FlushMs + ps.ApplyMs; phases > ps.ReopenMs+0.01 || ps.ForeignCPU < 0 {
				t.Errorf("implausible second %+v: phases sum to %.2f ms", ps, phases)
			}
		}
	}
	if len(res.Query) != 3 {
		t.Fatalf("query classes: %+v", res.Query)
	}
	wantSamples := map[string]int{"freq": 2 * 3, "rare": 3, "or2": 3}
	for _, q := range res.Query {
		// The rare term is in no document; the others are common.
		if q.Samples != wantSamples[q.Class] || (q.Class == "rare") != (q.Hits == 0) || q.P50us <= 0 {
			t.Errorf("implausible query class %+v", q)
		}
	}
	for _, f := range []string{"shard.json", "index-docs-per-s.png", "nrt-reopen.png", "nrt-qps.png"} {
		if st, err := os.Stat(filepath.Join(out, f)); err != nil || st.Size() == 0 {
			t.Errorf("missing output %s: %v", f, err)
		}
	}
}

func TestSlowTracer(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		var out []time.Duration
		for _, x := range v {
			out = append(out, time.Duration(x)*time.Millisecond)
		}
		return out
	}
	tests := []struct {
		name string
		all  []time.Duration // the last one is the reopen observed
		want bool
	}{
		{"more than twice the median", ms(10, 10, 10, 10, 10, 25), true},
		{"under twice the median", ms(10, 10, 10, 10, 10, 19), false},
		{"too few reopens yet", ms(10, 10, 50), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			s, err := newSlowTracer(dir, "x")
			if err != nil {
				t.Fatal(err)
			}
			defer s.stop()
			if err := s.observe(tt.all[len(tt.all)-1], tt.all); err != nil {
				t.Fatal(err)
			}
			files, _ := filepath.Glob(filepath.Join(dir, "*.trace"))
			if got := len(files) == 1; got != tt.want {
				t.Fatalf("traces %v, want one: %v", files, tt.want)
			}
		})
	}
}

// TestUpdatesSmoke runs experiment 3 briefly on a generated corpus: every
// run updates at about its rate, reopens, searches, and in-place updates
// leave no segments to flush where re-indexing does.
func TestUpdatesSmoke(t *testing.T) {
	docs := corpus.Generate(2000, 1)
	out := t.TempDir()
	res, err := RunUpdates(context.Background(), Config{Docs: docs, CorpusDesc: "generated", RAMBufferMB: 16, Dir: t.TempDir()},
		UpdatesConfig{Rates: []int{50}, Duration: 1500 * time.Millisecond, Reopen: 250 * time.Millisecond, Term: strings.Fields(docs[0].Body)[0]},
		func(string, ...any) {})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Runs) != 3 || res.Runs[0].Mode != "none" {
		t.Fatalf("runs: %+v", res.Runs)
	}
	for _, r := range res.Runs {
		if r.QPS <= 0 || r.Reopen.Count < 3 {
			t.Errorf("implausible run %+v", r)
		}
		if r.Mode != "none" && (r.Updates < 25 || r.PerUpdateUs <= 0 || r.QPSRatio <= 0) {
			t.Errorf("implausible run %+v", r)
		}
	}
	if dv, ri := res.Runs[1], res.Runs[2]; dv.Engine["flushes"] != 0 || ri.Engine["flushes"] == 0 || dv.Engine["doc_values_updates_bytes"] == 0 {
		t.Errorf("in place: %v; re-index: %v", dv.Engine, ri.Engine)
	}
	if err := WriteUpdates(out, res); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"updates.json", "updates-reopen.png"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
}
