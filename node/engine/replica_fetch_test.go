package engine

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestReplicaFetchesFilesConcurrently: a checkpoint's files are fetched
// Options.ConcurrentFileFetches at a time, never more; a failed fetch
// fails the install with its own error, leaves no partial file and holds
// nothing the next install needs.
func TestReplicaFetchesFilesConcurrently(t *testing.T) {
	const fetches = 3
	ctx := context.Background()
	e := mustOpenDurable(t, t.TempDir(), Options{DisableMerges: true})
	defer e.Close(ctx)
	dir := t.TempDir()
	r := mustOpenReplica(t, dir, Options{ConcurrentFileFetches: fetches})
	defer r.Close(ctx)
	for i := range 3 { // 3 segments, several files each
		applyOps(t, e, []engineOp{{id: string(rune('a' + i)), title: "one two"}})
		if _, err := e.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
	}
	cp := refreshCheckpoint(t, e)
	defer cp.Release()
	if len(cp.Files) <= fetches {
		t.Fatalf("%d files: too few to see %d fetches at once", len(cp.Files), fetches)
	}

	// Each fetch waits (at most 5 s) until `fetches` are in flight.
	var mu sync.Mutex
	inFlight, most := 0, 0
	full := make(chan struct{})
	gated := func(fail bool) FetchFunc {
		return func(ctx context.Context, f FileMeta, w io.Writer) error {
			mu.Lock()
			inFlight++
			most = max(most, inFlight)
			if inFlight == fetches {
				select {
				case <-full:
				default:
					close(full)
				}
			}
			mu.Unlock()
			defer func() { mu.Lock(); inFlight--; mu.Unlock() }()
			select {
			case <-full:
			case <-time.After(5 * time.Second):
			}
			if fail && strings.HasSuffix(f.Name, cp.Files[1].Name) {
				return errFetch
			}
			return fetchFrom(e, nil)(ctx, f, w)
		}
	}
	before := r.State().Visible
	if _, err := r.InstallCheckpoint(ctx, cp, gated(true)); !errors.Is(err, errFetch) {
		t.Fatalf("install with a failing fetch: %v", err)
	}
	parts, _ := filepath.Glob(filepath.Join(dir, "*.part"))
	if len(parts) != 0 {
		t.Fatalf("partial files left: %v", parts)
	}
	if st := r.State(); st.Visible != before {
		t.Fatalf("visible %d after a failed install", st.Visible)
	}
	full = make(chan struct{})
	res, err := r.InstallCheckpoint(ctx, cp, gated(false))
	if err != nil {
		t.Fatal(err)
	}
	if most != fetches {
		t.Errorf("at most %d fetches at once, want %d", most, fetches)
	}
	if res.Fetched+res.Reused != len(cp.Files) {
		t.Errorf("install %+v of %d files", res, len(cp.Files))
	}
	sameView(t, e, r)
	if _, err := os.Stat(filepath.Join(dir, cp.Files[0].Name)); err != nil {
		t.Error(err)
	}
}

var errFetch = errors.New("fetch failed")
