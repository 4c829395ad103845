package shard

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sluice-search/sluice/node/engine"
	"github.com/sluice-search/sluice/node/engine/bitflip"
	"github.com/sluice-search/sluice/node/engine/index"
	"github.com/sluice-search/sluice/node/engine/search"
)

// fastScrub starts a pass every 20 ms, unthrottled: files verified before
// the test damages them are verified again.
var fastScrub = engine.ScrubOptions{Poll: 5 * time.Millisecond, Interval: 20 * time.Millisecond, BytesPerSec: -1}

// fillShard indexes docs with a text body and commits, so that every file
// is on disk.
func fillShard(t *testing.T, s *Shard, docs int) {
	t.Helper()
	ctx := context.Background()
	words := []string{"river", "stone", "water", "light", "wind"}
	for i := range docs {
		src := fmt.Sprintf(`{"body":"%s %s w%d","n":%d}`, words[i%5], words[(i/5)%5], i, i)
		if _, err := s.IndexDoc(ctx, fmt.Appendf(nil, "%d", i), []byte(src), false); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.eng.Commit(ctx, engine.CommitOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestScrubFailsShard: the host's scrubber finds a damaged .doc file; the
// shard is failed, Get refuses it (so no search or write reaches it),
// FailureNotify fires, the metrics count it, a failed shard closes
// without committing and is not reopened, a restarted host finds the
// corruption marker, and deleting the shard clears it all.
func TestScrubFailsShard(t *testing.T) {
	ctx := context.Background()
	dataDir := t.TempDir()
	h, err := NewHost(HostOptions{DataDir: dataDir, Scrub: fastScrub})
	if err != nil {
		t.Fatal(err)
	}
	defer h.CloseAll(ctx)
	meta := Meta{ID: ID{IndexUUID: "u1", Shard: 0}, Index: "books"}
	s, err := h.Open(ctx, meta)
	if err != nil {
		t.Fatal(err)
	}
	fillShard(t, s, 500)
	r := s.eng.Acquire()
	n, err := r.Searcher().Count(ctx, &search.TermQuery{Field: "body", Term: []byte("river")})
	r.Release()
	if err != nil || n != 180 {
		t.Fatalf("count before: %d %v", n, err)
	}
	name := bitflip.Largest(t, h.Path(meta.ID), ".doc")
	select {
	case <-h.FailureNotify():
	case <-time.After(20 * time.Second):
		t.Fatal("no failure in 20 s")
	}
	ferr := h.Failure(meta.ID)
	if !errors.Is(ferr, index.ErrCorrupt) || !strings.Contains(ferr.Error(), name) {
		t.Fatalf("failure: %v", ferr)
	}
	_, err = h.Get(meta.ID)
	if !errors.Is(err, ErrFailed) || !errors.Is(err, index.ErrCorrupt) || !strings.Contains(err.Error(), name) {
		t.Fatalf("Get of the failed shard: %v", err)
	}
	if _, err := s.IndexDoc(ctx, []byte("x"), []byte(`{"body":"x"}`), false); !errors.Is(err, index.ErrCorrupt) {
		t.Fatalf("write to the failed shard: %v", err)
	}
	if err := testutil.CollectAndCompare(h.Collector(), strings.NewReader(`
# HELP sluice_shard_corrupt_files_total Damaged index files found while the shard was open (scrub, verification, merges); the first fails the shard.
# TYPE sluice_shard_corrupt_files_total counter
sluice_shard_corrupt_files_total{index="books",shard="0"} 1
`), "sluice_shard_corrupt_files_total"); err != nil {
		t.Error(err)
	}
	if st := s.eng.Stats(); st.VerifiedBytes == 0 || st.VerifiedFiles == 0 {
		t.Errorf("scrubbed %d bytes, %d files", st.VerifiedBytes, st.VerifiedFiles)
	}
	if err := h.Close(ctx, meta.ID); err != nil {
		t.Fatalf("close of the failed shard: %v", err)
	}
	if _, err := h.Open(ctx, meta); !errors.Is(err, index.ErrCorrupt) || !strings.Contains(err.Error(), name) {
		t.Fatalf("reopen on the same host: %v", err)
	}

	// A restarted node: the store's marker refuses it, with the reason.
	h2, err := NewHost(HostOptions{DataDir: dataDir, Scrub: engine.ScrubOptions{Interval: -1}})
	if err != nil {
		t.Fatal(err)
	}
	defer h2.CloseAll(ctx)
	if _, err := h2.Open(ctx, meta); !errors.Is(err, engine.ErrMarkedCorrupted) || !strings.Contains(err.Error(), name) {
		t.Fatalf("reopen after a restart: %v", err)
	}
	// Deleted (the index deleted and created again, or the copy
	// recreated elsewhere): a fresh, empty shard.
	for _, host := range []*Host{h, h2} {
		if err := host.Delete(ctx, meta.ID); err != nil {
			t.Fatal(err)
		}
	}
	s, err = h.Open(ctx, meta)
	if err != nil {
		t.Fatalf("open after delete: %v", err)
	}
	if st := s.eng.Stats(); st.NumDocs != 0 {
		t.Fatalf("%d docs after delete", st.NumDocs)
	}
}

// TestHostVerify: an on-demand verification of a clean shard, then of one
// with a damaged file, which fails it naming the file.
func TestHostVerify(t *testing.T) {
	ctx := context.Background()
	h, err := NewHost(HostOptions{DataDir: t.TempDir(), Scrub: engine.ScrubOptions{Interval: -1}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.CloseAll(ctx)
	meta := Meta{ID: ID{IndexUUID: "u1", Shard: 1}, Index: "books"}
	s, err := h.Open(ctx, meta)
	if err != nil {
		t.Fatal(err)
	}
	fillShard(t, s, 300)
	res, err := h.Verify(ctx, meta.ID, engine.VerifyOptions{Deep: true})
	if err != nil || res.Err() != nil || len(res.Files) == 0 || len(res.Segments) == 0 {
		t.Fatalf("clean: %+v %v", res, err)
	}
	name := bitflip.Largest(t, h.Path(meta.ID), ".doc")
	res, err = h.Verify(ctx, meta.ID, engine.VerifyOptions{})
	if err != nil || !strings.Contains(fmt.Sprint(res.Err()), name) {
		t.Fatalf("damaged: %v %v", res.Err(), err)
	}
	if _, err := h.Get(meta.ID); !errors.Is(err, ErrFailed) {
		t.Fatalf("Get after a failed verify: %v", err)
	}
	if _, err := h.Verify(ctx, ID{IndexUUID: "u1", Shard: 9}, engine.VerifyOptions{}); !errors.Is(err, ErrNotHere) {
		t.Fatalf("verify of a shard not here: %v", err)
	}
}
