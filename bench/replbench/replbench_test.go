package replbench

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluice-search/sluice/bench/benchtest"
	"github.com/sluice-search/sluice/bench/corpus"
)

// TestSmoke runs the experiment on a small generated corpus against real
// processes: it checks every part measures something and the outputs are
// written, not how fast anything is.
func TestSmoke(t *testing.T) {
	bin, ctx := benchtest.Smoke(t, 3*time.Minute)
	out := t.TempDir()
	res, err := Execute(ctx, Options{Binary: bin, Docs: corpus.Generate(600, 2), CorpusDesc: "generated",
		Rounds: 1, LagDuration: 3 * time.Second, RateMB: 0.2, RefreshEvery: 300 * time.Millisecond, Out: out, Log: benchtest.Log(t)})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Throughput) != 2 || res.Ratio <= 0 {
		t.Errorf("throughput %+v, ratio %v", res.Throughput, res.Ratio)
	}
	if res.Lag == nil || res.Lag.Lag.Count < 3 || res.Lag.Updates == 0 {
		t.Errorf("lag %+v", res.Lag)
	}
	if f := res.Failover; f == nil || f.Seconds <= 0 || f.NewPrimaryNode == "" || f.NewPrimaryNode == f.KilledNode {
		t.Errorf("failover %+v", res.Failover)
	}
	for _, f := range []string{"replication.json", "replication-bulk-docs-per-s.png", "replication-lag.png"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
}
