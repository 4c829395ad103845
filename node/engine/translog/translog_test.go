package translog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

var ctx = context.Background()

func testOp(seq uint64) Op {
	op := Op{Type: OpIndex, SeqNo: seq, PrimaryTerm: 1 + seq%3, ID: fmt.Appendf(nil, "doc-%d", seq),
		Source: fmt.Appendf(nil, `{"n": %d, "body": "%s"}`, seq, strings.Repeat("x", int(seq%50)))}
	switch seq % 7 {
	case 3:
		op.Type, op.Source = OpDelete, nil
	case 5:
		op.Type, op.ID, op.Source = OpNoOp, nil, []byte("gap")
	case 6:
		op.Routing = []byte("user-1")
	}
	return op
}

func open(t testing.TB, dir string, opts Options) *Translog {
	t.Helper()
	tl, err := Open(ctx, dir, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return tl
}

// readAll replays the snapshot from seq and returns the ops (copied).
func readAll(t testing.TB, tl *Translog, from uint64) []Op {
	t.Helper()
	s, err := tl.Snapshot(ctx, from)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var ops []Op
	for {
		op, err := s.Next()
		if err == io.EOF {
			return ops
		}
		if err != nil {
			t.Fatal(err)
		}
		ops = append(ops, Op{Type: op.Type, SeqNo: op.SeqNo, PrimaryTerm: op.PrimaryTerm,
			ID: bytes.Clone(op.ID), Source: bytes.Clone(op.Source), Routing: bytes.Clone(op.Routing)})
	}
}

func equalOp(a, b Op) bool {
	return a.Type == b.Type && a.SeqNo == b.SeqNo && a.PrimaryTerm == b.PrimaryTerm &&
		bytes.Equal(a.ID, b.ID) && bytes.Equal(a.Source, b.Source) && bytes.Equal(a.Routing, b.Routing)
}

func checkOps(t testing.TB, got []Op, seqs ...uint64) {
	t.Helper()
	if len(got) != len(seqs) {
		t.Fatalf("got %d ops, want %d", len(got), len(seqs))
	}
	for i, s := range seqs {
		if want := testOp(s); !equalOp(got[i], want) {
			t.Fatalf("op %d: got %+v want %+v", i, got[i], want)
		}
	}
}

// addOp adds testOp(seq) and returns its location.
func addOp(t testing.TB, tl *Translog, seq uint64) Location {
	t.Helper()
	op := testOp(seq)
	loc, err := tl.Add(ctx, &op)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func seqRange(from, to uint64) []uint64 {
	var s []uint64
	for i := from; i < to; i++ {
		s = append(s, i)
	}
	return s
}

func TestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	tl := open(t, dir, Options{})
	for i := uint64(0); i < 20; i++ {
		op := testOp(i)
		if _, err := tl.Add(ctx, &op); err != nil {
			t.Fatal(err)
		}
	}
	batch := []Op{testOp(20), testOp(21), testOp(22)}
	if _, err := tl.AddBatch(ctx, batch); err != nil {
		t.Fatal(err)
	}
	checkOps(t, readAll(t, tl, 0), seqRange(0, 23)...)
	uuid := tl.UUID()
	if err := tl.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := tl.Add(ctx, &batch[0]); !errors.Is(err, ErrClosed) {
		t.Fatalf("Add after Close: %v", err)
	}

	tl = open(t, dir, Options{})
	defer tl.Close()
	if tl.UUID() != uuid {
		t.Fatal("UUID changed on reopen")
	}
	checkOps(t, readAll(t, tl, 0), seqRange(0, 23)...)
	checkOps(t, readAll(t, tl, 15), seqRange(15, 23)...)
	st := tl.Stats()
	if st.Ops != 23 || st.MinSeqNo != 0 || st.MaxSeqNo != 22 || st.Generations != 1 || st.TruncatedBytes != 0 {
		t.Fatalf("stats %+v", st)
	}
	// Appending continues the chain of the recovered generation.
	op := testOp(23)
	if _, err := tl.Add(ctx, &op); err != nil {
		t.Fatal(err)
	}
	checkOps(t, readAll(t, tl, 20), seqRange(20, 24)...)
}

func TestRejectsBadOps(t *testing.T) {
	tl := open(t, t.TempDir(), Options{})
	defer tl.Close()
	if _, err := tl.Add(ctx, &Op{Type: 9}); err == nil {
		t.Fatal("unknown op type accepted")
	}
	if _, err := tl.Add(ctx, &Op{Type: OpIndex, Source: make([]byte, MaxOpSize)}); err == nil {
		t.Fatal("oversized op accepted")
	}
	// A batch with a bad op adds nothing.
	if _, err := tl.AddBatch(ctx, []Op{testOp(0), {Type: 0}}); err == nil {
		t.Fatal("batch with a bad op accepted")
	}
	op := testOp(1)
	if _, err := tl.Add(ctx, &op); err != nil {
		t.Fatal(err)
	}
	checkOps(t, readAll(t, tl, 0), 1)
	for _, d := range []Durability{Request, Async} {
		if got, err := ParseDurability(d.String()); err != nil || got != d {
			t.Fatalf("ParseDurability(%s) = %v, %v", d, got, err)
		}
	}
	if _, err := ParseDurability("sometimes"); err == nil {
		t.Fatal("bad durability accepted")
	}
}

// addConcurrently has writers goroutines Add per ops each, seqnos
// 0..writers*per-1.
func addConcurrently(t *testing.T, tl *Translog, writers, per int) {
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range per {
				op := testOp(uint64(w*per + i))
				if _, err := tl.Add(ctx, &op); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestConcurrentWriters(t *testing.T) {
	dir := t.TempDir()
	tl := open(t, dir, Options{GenerationSize: 16 << 10})
	const writers, per = 8, 100
	addConcurrently(t, tl, writers, per)
	if err := tl.Close(); err != nil {
		t.Fatal(err)
	}
	tl = open(t, dir, Options{})
	defer tl.Close()
	ops := readAll(t, tl, 0)
	slices.SortFunc(ops, func(a, b Op) int { return int(a.SeqNo) - int(b.SeqNo) })
	checkOps(t, ops, seqRange(0, writers*per)...)
	if g := tl.Stats().Generations; g < 2 {
		t.Fatalf("expected rolls at 16 KB, got %d generations", g)
	}
}

// TestGroupCommit checks that concurrent Request-durability writers share
// fsyncs instead of paying one each.
func TestGroupCommit(t *testing.T) {
	tl := open(t, t.TempDir(), Options{})
	defer tl.Close()
	const writers, per = 32, 20
	before := tl.Stats().Fsyncs
	addConcurrently(t, tl, writers, per)
	fsyncs := tl.Stats().Fsyncs - before
	t.Logf("%d ops from %d writers took %d fsyncs (%.1f ops per fsync)", writers*per, writers, fsyncs, float64(writers*per)/float64(fsyncs))
	if fsyncs*2 > writers*per {
		t.Fatalf("%d fsyncs for %d ops: no group commit", fsyncs, writers*per)
	}
}

func TestAsync(t *testing.T) {
	tl := open(t, t.TempDir(), Options{Durability: Async, SyncInterval: 20 * time.Millisecond})
	before := tl.Stats().Fsyncs
	for i := range uint64(50) {
		op := testOp(i)
		if _, err := tl.Add(ctx, &op); err != nil {
			t.Fatal(err)
		}
	}
	if got := tl.Stats().Fsyncs - before; got > 5 {
		t.Fatalf("async Add fsynced %d times for 50 ops", got)
	}
	deadline := time.Now().Add(5 * time.Second)
	for tl.Stats().Fsyncs == before {
		if time.Now().After(deadline) {
			t.Fatal("no periodic fsync")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := tl.Close(); err != nil {
		t.Fatal(err)
	}
	if err := tl.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Close: %v", err)
	}
}

func TestRollAndTrim(t *testing.T) {
	dir := t.TempDir()
	tl := open(t, dir, Options{})
	add := func(from, to uint64) {
		for i := from; i < to; i++ {
			op := testOp(i)
			if _, err := tl.Add(ctx, &op); err != nil {
				t.Fatal(err)
			}
		}
	}
	add(0, 10)
	if err := tl.Roll(ctx); err != nil {
		t.Fatal(err)
	}
	add(10, 20)
	if err := tl.Roll(ctx); err != nil {
		t.Fatal(err)
	}
	add(20, 25)
	if st := tl.Stats(); st.Generations != 3 || st.CurrentGen != 3 || st.Ops != 25 {
		t.Fatalf("stats %+v", st)
	}
	// A snapshot taken before trimming still reads the trimmed files.
	snap, err := tl.Snapshot(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()

	// Ops below 10 are committed: generation 1 goes, 2 stays (holds 10..19).
	if err := tl.TrimBelow(ctx, 10); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, genFileName(1))); !os.IsNotExist(err) {
		t.Fatalf("generation 1 not deleted: %v", err)
	}
	st := tl.Stats()
	if st.Generations != 2 || st.MinGeneration != 2 || st.Ops != 15 || st.UncommittedOps != 15 {
		t.Fatalf("after trim: %+v", st)
	}
	n := 0
	for {
		if _, err := snap.Next(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 25 {
		t.Fatalf("old snapshot read %d ops", n)
	}
	// Trimming everything keeps the current generation.
	if err := tl.TrimBelow(ctx, 1000); err != nil {
		t.Fatal(err)
	}
	if st := tl.Stats(); st.Generations != 1 || st.CurrentGen != 3 || st.Ops != 5 {
		t.Fatalf("after full trim: %+v", st)
	}
	if err := tl.Close(); err != nil {
		t.Fatal(err)
	}
	tl = open(t, dir, Options{})
	defer tl.Close()
	checkOps(t, readAll(t, tl, 0), seqRange(20, 25)...)
}

// crashCopy copies the translog files of a live translog, as a crash would
// leave them.
func crashCopy(t testing.TB, src string) string {
	t.Helper()
	dst := t.TempDir()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// liveTranslog adds synced ops and syncs, then adds unsynced more and hands
// them to the OS without a sync (as a crash between a write and its fsync
// leaves them). It returns the directory, left open ("crashed"), and the
// location of each op.
func liveTranslog(t testing.TB, synced, unsynced uint64) (string, []Location) {
	dir := t.TempDir()
	tl := open(t, dir, Options{Durability: Async, SyncInterval: time.Hour})
	t.Cleanup(func() { tl.Close() })
	var locs []Location
	for i := range synced + unsynced {
		if i == synced {
			if err := tl.Sync(ctx); err != nil {
				t.Fatal(err)
			}
		}
		locs = append(locs, addOp(t, tl, i))
	}
	if unsynced == 0 {
		if err := tl.Sync(ctx); err != nil {
			t.Fatal(err)
		}
	}
	tl.mu.Lock()
	defer tl.mu.Unlock()
	if err := tl.flushLocked(); err != nil {
		t.Fatal(err)
	}
	return dir, locs
}

func TestTornTailTruncated(t *testing.T) {
	const n = 6
	src, locs := liveTranslog(t, n-1, 1)
	last := locs[n-1]
	name := genFileName(last.Generation)
	orig, err := os.ReadFile(filepath.Join(src, name))
	if err != nil {
		t.Fatal(err)
	}
	for _, zeroFill := range []bool{false, true} {
		for cut := last.Offset; cut < last.Offset+last.Size; cut++ {
			if zeroFill && !slices.ContainsFunc(orig[cut:], func(b byte) bool { return b != 0 }) {
				continue // zeroing zeros leaves the record intact
			}
			dir := crashCopy(t, src)
			path := filepath.Join(dir, name)
			if zeroFill {
				// The file kept its length but the write never landed.
				f, err := os.OpenFile(path, os.O_WRONLY, 0)
				if err != nil {
					t.Fatal(err)
				}
				f.WriteAt(make([]byte, last.Offset+last.Size-cut), cut)
				f.Close()
			} else if err := os.Truncate(path, cut); err != nil {
				t.Fatal(err)
			}
			tl, err := Open(ctx, dir, Options{Logger: quietLogger()})
			if err != nil {
				t.Fatalf("zeroFill=%v cut at %d: %v", zeroFill, cut, err)
			}
			checkOps(t, readAll(t, tl, 0), seqRange(0, n-1)...)
			if st := tl.Stats(); st.TruncatedBytes != cut-last.Offset && !zeroFill || zeroFill && st.TruncatedBytes != last.Size {
				t.Fatalf("zeroFill=%v cut %d: truncated %d bytes", zeroFill, cut, st.TruncatedBytes)
			}
			if (cut-last.Offset)%8 != 0 {
				tl.Close()
				continue
			}
			// The repaired log takes new ops and reopens cleanly.
			op := testOp(n - 1)
			if _, err := tl.Add(ctx, &op); err != nil {
				t.Fatal(err)
			}
			tl.Close()
			tl = open(t, dir, Options{})
			checkOps(t, readAll(t, tl, 0), seqRange(0, n)...)
			tl.Close()
		}
	}
}

// TestCorruptionRefused damages a translog of 6 synced and 2 unsynced
// records: damage below the checkpoint's offset fails Open with ErrCorrupt
// naming the file and offset; past it, the first bad record and what
// follows are cut as a torn tail.
func TestCorruptionRefused(t *testing.T) {
	const synced, n = 6, 8
	src, locs := liveTranslog(t, synced, n-synced)
	name := genFileName(1)
	flip := func(off int64) func([]byte) []byte {
		return func(b []byte) []byte { b[off] ^= 0x40; return b }
	}
	tests := []struct {
		name    string
		damage  func(b []byte) []byte
		corrupt string // the offset the error names; "" if Open recovers
		keep    int    // ops left after a repair
	}{
		{"flipped payload byte in the middle", flip(locs[3].Offset + recordHeaderSize + 2), fmt.Sprint(locs[3].Offset), 0},
		{"flipped length in the middle", flip(locs[3].Offset), fmt.Sprint(locs[3].Offset), 0},
		{"zeroed header in the middle", func(b []byte) []byte {
			clear(b[locs[3].Offset : locs[3].Offset+recordHeaderSize])
			return b
		}, fmt.Sprint(locs[3].Offset), 0},
		{"flipped byte in the last synced record", flip(locs[synced-1].Offset + recordHeaderSize + 1), fmt.Sprint(locs[synced-1].Offset), 0},
		{"flipped crc of the last synced record", flip(locs[synced-1].Offset + 5), fmt.Sprint(locs[synced-1].Offset), 0},
		{"last synced record cut short", func(b []byte) []byte {
			return b[:locs[synced-1].Offset+locs[synced-1].Size-1]
		}, "records " + fmt.Sprint(locs[synced].Offset) + " as synced", 0},
		{"synced records cut at a record boundary", func(b []byte) []byte {
			return b[:locs[synced-1].Offset]
		}, "records " + fmt.Sprint(locs[synced].Offset) + " as synced", 0},
		{"record from another chain in the synced region", func(b []byte) []byte {
			op := testOp(4)
			rec, _, _ := appendRecord(nil, &op, 0xdeadbeef)
			copy(b[locs[4].Offset:], rec)
			return b
		}, fmt.Sprint(locs[4].Offset), 0},
		{"bad file header", flip(5), "header", 0},
		{"flipped byte in the first unsynced record", flip(locs[synced].Offset + recordHeaderSize + 1), "", synced},
		{"flipped byte in the last unsynced record", flip(locs[n-1].Offset + recordHeaderSize + 1), "", n - 1},
		{"garbage appended", func(b []byte) []byte {
			return append(b, []byte("not a record at all, just noise")...)
		}, "", n},
		{"zeros appended", func(b []byte) []byte { return append(b, make([]byte, 4096)...) }, "", n},
		{"spliced record appended", func(b []byte) []byte {
			rec := slices.Clone(b[locs[1].Offset : locs[1].Offset+locs[1].Size])
			return append(b, rec...)
		}, "", n},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := crashCopy(t, src)
			path := filepath.Join(dir, name)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, tt.damage(b), 0o644); err != nil {
				t.Fatal(err)
			}
			tl, err := Open(ctx, dir, Options{Logger: quietLogger()})
			if tt.corrupt != "" {
				if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), tt.corrupt) {
					t.Fatalf("got %v, want ErrCorrupt naming %s and %q", err, name, tt.corrupt)
				}
				t.Log(err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer tl.Close()
			checkOps(t, readAll(t, tl, 0), seqRange(0, uint64(tt.keep))...)
		})
	}
}

// TestDurableRegionNeverTruncated: once a checkpoint covers records (here
// by Close), a bad last record is corruption, not a torn write.
func TestDurableRegionNeverTruncated(t *testing.T) {
	dir := t.TempDir()
	tl := open(t, dir, Options{})
	var loc Location
	for i := range uint64(5) {
		op := testOp(i)
		loc, _ = tl.Add(ctx, &op)
	}
	tl.Close()
	path := filepath.Join(dir, genFileName(1))
	if err := os.Truncate(path, loc.Offset+loc.Size-1); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(ctx, dir, Options{}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("got %v", err)
	}
}

// oneOp writes a translog holding op 1 in dir (rolled to generation 2 if
// roll) and closes it.
func oneOp(t *testing.T, dir string, roll bool) UUID {
	tl := open(t, dir, Options{})
	op := testOp(1)
	if _, err := tl.Add(ctx, &op); err != nil {
		t.Fatal(err)
	}
	if roll {
		if err := tl.Roll(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := tl.Close(); err != nil {
		t.Fatal(err)
	}
	return tl.UUID()
}

func TestOpenLeftovers(t *testing.T) {
	corrupt := func(t *testing.T, dir string) {
		t.Helper()
		if _, err := Open(ctx, dir, Options{}); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("got %v, want ErrCorrupt", err)
		}
	}
	t.Run("generation from another translog", func(t *testing.T) {
		a, b := t.TempDir(), t.TempDir()
		oneOp(t, a, false)
		oneOp(t, b, false)
		data, _ := os.ReadFile(filepath.Join(b, genFileName(1)))
		os.WriteFile(filepath.Join(a, genFileName(1)), data, 0o644)
		corrupt(t, a)
	})
	t.Run("missing generation", func(t *testing.T) {
		dir := t.TempDir()
		oneOp(t, dir, true)
		os.Remove(filepath.Join(dir, genFileName(1)))
		corrupt(t, dir)
	})
	t.Run("files without checkpoint", func(t *testing.T) {
		dir := t.TempDir()
		oneOp(t, dir, false)
		os.Remove(filepath.Join(dir, checkpointName))
		corrupt(t, dir)
	})
	t.Run("crash during roll", func(t *testing.T) {
		// The roll created generation 2 but not its checkpoint.
		dir := t.TempDir()
		h, _ := fileHeader(2, oneOp(t, dir, false), 0, 0)
		os.WriteFile(filepath.Join(dir, genFileName(2)), h, 0o644)
		tl := open(t, dir, Options{})
		defer tl.Close()
		if _, err := os.Stat(filepath.Join(dir, genFileName(2))); !os.IsNotExist(err) {
			t.Fatal("leftover generation 2 kept")
		}
		checkOps(t, readAll(t, tl, 0), 1)
	})
	t.Run("crash during trim", func(t *testing.T) {
		// The trim's checkpoint was written but generation 1 not deleted.
		dir := t.TempDir()
		oneOp(t, dir, true)
		gen1, _ := os.ReadFile(filepath.Join(dir, genFileName(1)))
		tl := open(t, dir, Options{})
		if err := tl.TrimBelow(ctx, 2); err != nil {
			t.Fatal(err)
		}
		tl.Close()
		os.WriteFile(filepath.Join(dir, genFileName(1)), gen1, 0o644)
		tl = open(t, dir, Options{})
		defer tl.Close()
		if _, err := os.Stat(filepath.Join(dir, genFileName(1))); !os.IsNotExist(err) {
			t.Fatal("trimmed generation 1 kept")
		}
		if st := tl.Stats(); st.Ops != 0 || st.Generations != 1 {
			t.Fatalf("stats %+v", st)
		}
	})
}
