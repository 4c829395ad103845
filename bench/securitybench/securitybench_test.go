package securitybench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-search/sluice/bench/benchtest"
	"github.com/sluice-search/sluice/bench/corpus"
)

// TestSmoke runs two short rounds on a small generated corpus against a
// plaintext and a secure multi-process cluster: every round of both is
// measured, alternated, the secure reconnects resume their TLS sessions,
// and the outputs are written. It checks the experiment works, not how
// fast anything is.
func TestSmoke(t *testing.T) {
	bin, ctx := benchtest.Smoke(t, 3*time.Minute)
	out := t.TempDir()
	res, err := Run(ctx, Options{Binary: bin, Docs: corpus.Generate(300, 5), CorpusDesc: "generated", Nodes: 1, Shards: 1,
		Rounds: 2, Chunk: 100, Searches: 20, Reconnects: 5, Out: out, Log: benchtest.Log(t)})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rounds) != 4 {
		t.Fatalf("rounds: %+v", res.Rounds)
	}
	for _, r := range res.Rounds {
		if r.Docs != 300 || r.DocsPerSec <= 0 || r.SearchP50Ms <= 0 {
			t.Errorf("round %+v", r)
		}
	}
	// Alternated: the second round starts with the secure cluster.
	if got := []string{res.Rounds[0].Mode, res.Rounds[1].Mode, res.Rounds[2].Mode, res.Rounds[3].Mode}; strings.Join(got, ",") != "plaintext,secure,secure,plaintext" {
		t.Errorf("rounds not alternated: %v", got)
	}
	if res.BulkPlain <= 0 || res.BulkSecure <= 0 || res.Bulk.Min > res.Bulk.Max || res.Search.Target != TargetSearchOverhead {
		t.Errorf("summary %+v", res)
	}
	if len(res.Reconnects) != 2 || res.Reconnects[0].Resumed != 0 || res.Reconnects[1].Mode != Secure ||
		res.Reconnects[1].Resumed < res.Reconnects[1].Latency.Count-1 {
		t.Errorf("reconnects %+v: a plaintext one resumed nothing, every secure one but the first resumed", res.Reconnects)
	}
	for _, f := range []string{"security.json", "security-bulk.png", "security-search.png"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
}
