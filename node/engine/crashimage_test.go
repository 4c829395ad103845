package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-search/sluice/node/engine/translog"
)

// crashImage copies the files of a live engine's directory, as a crash
// (of the process: the page cache survives) would leave them.
func crashImage(t testing.TB, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// lastSyncedRecordEnd returns the current translog generation's file and
// the offset its checkpoint records as synced: the end of the last
// acknowledged record.
func lastSyncedRecordEnd(t testing.TB, dir string) (string, int64) {
	t.Helper()
	ckp, err := translog.ReadCheckpoint(filepath.Join(dir, "translog"))
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "translog", fmt.Sprintf("translog-%d.tlog", ckp.Generation)), ckp.Offset
}

// TestCrashImageDamage damages what a crash leaves — after acknowledged
// operations (Request durability) and a bulk written but never synced — and
// opens it: a damaged acknowledged record fails Open naming the file and
// offset; a record cut short past the last sync is a torn tail, cut, with
// every acknowledged operation kept; one damaged checkpoint slot is
// survived, both are not.
func TestCrashImageDamage(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	e := mustOpenDurable(t, dir, Options{})
	defer e.Close(ctx)
	acked := indexCommitUpdate(t, e)
	tlog, synced := lastSyncedRecordEnd(t, dir)
	// A bulk nobody synced (a request in flight at the crash), over 64 KB
	// so that it reaches the file.
	b := e.NewBulk()
	for i := range 400 {
		if _, err := b.Index(ctx, fmt.Appendf(nil, "u%d", i), fmt.Appendf(nil, `{"title":"unsynced %s"}`, strings.Repeat("x", 200))); err != nil {
			t.Fatal(err)
		}
	}
	if size, _ := os.Stat(tlog); size.Size() <= synced+64<<10 {
		t.Fatalf("the unsynced bulk did not reach the file: %d bytes, synced %d", size.Size(), synced)
	}
	image := crashImage(t, dir)
	rel, _ := filepath.Rel(dir, tlog)

	for _, tc := range []struct {
		name    string
		damage  func(t *testing.T, dir string)
		corrupt []string // what the error names; nil: opens with every acknowledged op
	}{
		{"none", func(*testing.T, string) {}, nil},
		{"last acknowledged record", func(t *testing.T, dir string) {
			flipByte(t, filepath.Join(dir, rel), synced-1)
		}, []string{filepath.Base(tlog), "at offset", "records as synced"}},
		{"first acknowledged record after the commit", func(t *testing.T, dir string) {
			flipByte(t, filepath.Join(dir, rel), 60)
		}, []string{filepath.Base(tlog), "at offset"}},
		{"cut inside the unsynced bulk", func(t *testing.T, dir string) {
			if err := os.Truncate(filepath.Join(dir, rel), synced+40<<10+7); err != nil {
				t.Fatal(err)
			}
		}, nil},
		{"byte flipped in the unsynced bulk", func(t *testing.T, dir string) {
			flipByte(t, filepath.Join(dir, rel), synced+20<<10)
		}, nil},
		{"newest checkpoint slot", func(t *testing.T, dir string) {
			damageCheckpointSlots(t, dir, true)
		}, nil},
		{"newest checkpoint slot and the last acknowledged record", func(t *testing.T, dir string) {
			damageCheckpointSlots(t, dir, true)
			flipByte(t, filepath.Join(dir, rel), synced-1)
		}, []string{filepath.Base(tlog), "at offset"}},
		{"both checkpoint slots", func(t *testing.T, dir string) {
			damageCheckpointSlots(t, dir, true, false)
		}, []string{"translog.ckp", "both slots damaged"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := crashImage(t, image)
			tc.damage(t, dir)
			e, err := openDurable(t, dir, Options{Logger: quietEngineLogger()})
			if tc.corrupt != nil {
				if err == nil {
					e.Close(ctx)
					t.Fatal("opened a damaged translog")
				}
				if !errors.Is(err, translog.ErrCorrupt) {
					t.Fatalf("error %v does not wrap translog.ErrCorrupt", err)
				}
				for _, want := range tc.corrupt {
					if !strings.Contains(err.Error(), want) {
						t.Fatalf("error %v does not name %q", err, want)
					}
				}
				t.Log(err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close(ctx)
			got := liveDocs(t, e)
			for id, src := range acked {
				if got[id] != src {
					t.Fatalf("acknowledged doc %s: got %q, want %q", id, got[id], src)
				}
			}
			for id, src := range got {
				if _, ok := acked[id]; !ok && !strings.HasPrefix(id, "u") {
					t.Fatalf("doc %s = %q was never written", id, src)
				}
			}
			t.Logf("%d acknowledged docs, %d of the unsynced bulk kept, %d bytes cut", len(acked), len(got)-len(acked), e.TranslogStats().TruncatedBytes)
		})
	}
}

// damageCheckpointSlots flips a byte in the checkpoint's newest slot
// and/or the other one.
func damageCheckpointSlots(t *testing.T, dir string, which ...bool) {
	t.Helper()
	name := filepath.Join(dir, "translog", "translog.ckp")
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	// The slot with the higher sequence number (bytes 8..16 of each
	// 4 KiB slot, little endian) is the newest.
	seq := func(slot int) uint64 {
		var v uint64
		for i := 15; i >= 8; i-- {
			v = v<<8 | uint64(b[slot*4096+i])
		}
		return v
	}
	newest := 0
	if seq(1) > seq(0) {
		newest = 1
	}
	for _, n := range which {
		slot := newest
		if !n {
			slot = 1 - newest
		}
		b[slot*4096+40] ^= 0x20
	}
	if err := os.WriteFile(name, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// quietEngineLogger keeps expected recovery warnings out of test output.
func quietEngineLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
