package recoverybench

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluice-search/sluice/bench/benchtest"
	"github.com/sluice-search/sluice/bench/corpus"
)

// TestSmoke runs the experiment on a small generated corpus against real
// processes: it checks every round copied and recovered the shard's files
// and the outputs are written, not how fast anything is.
func TestSmoke(t *testing.T) {
	bin, ctx := benchtest.Smoke(t, 3*time.Minute)
	out := t.TempDir()
	res, err := Execute(ctx, Options{Binary: bin, Docs: corpus.Generate(500, 3), CorpusDesc: "generated", SizeMB: 1, Rounds: 2, Out: out})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rounds) != 2 || res.Ratio <= 0 || res.ShardMB < 1 {
		t.Fatalf("result %+v", res)
	}
	for _, r := range res.Rounds {
		// Every file fetched again each round (the replica's files are
		// deleted in between): as many bytes as the plain copy.
		if r.RecoveryFiles == 0 || r.RecoveryMB < 0.9*r.CopyMB || r.RecoveryMB > 1.1*r.CopyMB {
			t.Errorf("round %+v: the copy and the recovery moved different files", r)
		}
	}
	for _, f := range []string{"recovery.json", "recovery-mb-per-s.png"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
}
