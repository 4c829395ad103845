package reindexbench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-search/sluice/bench/benchtest"
	"github.com/sluice-search/sluice/bench/corpus"
)

// TestSmoke runs the experiment on a small generated corpus against real
// processes: it checks every strategy copies every document and the outputs
// are written, not how fast anything is.
func TestSmoke(t *testing.T) {
	bin, ctx := benchtest.Smoke(t, 3*time.Minute)
	out := t.TempDir()
	res, err := Execute(ctx, Options{Binary: bin, Docs: corpus.Generate(600, 2), CorpusDesc: "generated", Out: out})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Runs) != 6 || res.BulkDocsPerS <= 0 {
		t.Fatalf("result %+v", res)
	}
	for _, r := range res.Runs {
		if r.Docs != 600 || r.DocsPerSec <= 0 {
			t.Errorf("%s: %+v", r.Name, r)
		}
	}
	for _, r := range res.Runs[2:] {
		want := "REINDEX_COPY_METHOD_" + strings.ToUpper(r.Copy)
		if r.ModeChosen != "REINDEX_MODE_LOCAL" || r.CopyChosen != want {
			t.Errorf("%s: mode %s copy %s, want local %s", r.Name, r.ModeChosen, r.CopyChosen, want)
		}
	}
	for _, f := range []string{"reindex.json", "reindex-docs-per-s.png"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
}
