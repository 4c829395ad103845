package loadbench

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluice-search/sluice/bench/benchtest"
	"github.com/sluice-search/sluice/bench/corpus"
)

// TestSmoke offers one short level to a real `sluice dev` child process on
// a small generated corpus while indexing runs: every request is answered
// and recorded, the split into server time and send lag adds up, and the
// outputs are written. It checks the experiment works, not how fast.
func TestSmoke(t *testing.T) {
	bin, ctx := benchtest.Smoke(t, 2*time.Minute)
	logf, err := os.Create(filepath.Join(t.TempDir(), "dev.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	dev, err := StartDev(ctx, bin, t.TempDir(), logf)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Stop()

	out := t.TempDir()
	res, err := Run(ctx, Options{Addr: dev.Addr, Docs: corpus.Generate(400, 3), Shards: 2,
		Levels: []float64{100}, LevelDuration: 2 * time.Second, Warmup: -1, Baseline: true, Out: out})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Levels) != 1 {
		t.Fatalf("levels: %+v", res.Levels)
	}
	lv := res.Levels[0]
	if lv.Sent < 100 || lv.Errors != 0 || lv.Dropped != 0 || lv.Latency.Count != lv.Sent {
		t.Errorf("sent %d, errors %d, dropped %d, recorded %d", lv.Sent, lv.Errors, lv.Dropped, lv.Latency.Count)
	}
	if lv.Server.Count != lv.Sent || lv.DispatchLag.Count != lv.Sent || lv.Server.P50 <= 0 {
		t.Errorf("server time %+v, send lag %+v", lv.Server, lv.DispatchLag)
	}
	// The client's latency contains the coordinator's own time.
	if lv.Latency.P50 < lv.Server.P50 || lv.Latency.Max < lv.Server.Max {
		t.Errorf("latency %+v below the server's %+v", lv.Latency, lv.Server)
	}
	if b := lv.Baseline; b == nil || b.Count < 100 || b.P50 <= 0 {
		t.Errorf("no-op baseline %+v", b)
	}
	if lv.IndexedDocs <= 0 {
		t.Errorf("no background indexing during the level")
	}
	for _, f := range []string{"load.json", "load-latency.png"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
}
