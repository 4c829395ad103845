package engine

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluice-search/sluice/node/engine/index"
)

// TestOpenIndexFileMissingFailsEngine: a file the index references that
// is gone from its directory (deleted or unmounted under the node) fails
// the engine as damage, so the shard fails and is reported, instead of
// each recovering copy asking for it again; a file the index does not
// reference is only not found.
func TestOpenIndexFileMissingFailsEngine(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	e := mustOpenDurable(t, dir, Options{DisableMerges: true})
	defer e.Close(ctx)
	applyOps(t, e, []engineOp{{id: "1", title: "one"}})
	cp := refreshCheckpoint(t, e)
	if _, err := e.Commit(ctx, CommitOptions{}); err != nil { // its files on disk
		t.Fatal(err)
	}
	defer cp.Release()
	if _, err := e.OpenIndexFile("_zz.doc"); !errors.Is(err, fs.ErrNotExist) || e.Failure() != nil {
		t.Fatalf("unreferenced file: %v (failure %v), want not found and the engine alive", err, e.Failure())
	}
	name := cp.Files[0].Name
	in, err := e.OpenIndexFile(name)
	if err != nil {
		t.Fatal(err)
	}
	in.Close()
	if err := os.Remove(filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
	_, err = e.OpenIndexFile(name)
	if !errors.Is(err, ErrFailed) || !errors.Is(err, index.ErrCorrupt) {
		t.Fatalf("missing referenced file %s: %v, want the engine failed for damage", name, err)
	}
	if e.Failure() == nil {
		t.Fatal("engine not failed")
	}
}
