package translog

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestEverySyncCheckpoints: each Request Add and each AddBatch costs one
// fsync of the generation and one of the checkpoint, and afterwards the
// checkpoint on disk covers the op, with its count and seqNo range.
func TestEverySyncCheckpoints(t *testing.T) {
	dir := t.TempDir()
	tl := open(t, dir, Options{})
	defer tl.Close()
	st0 := tl.Stats()
	for i := range uint64(10) {
		var loc Location
		var err error
		if i%2 == 0 {
			op := testOp(i)
			loc, err = tl.Add(ctx, &op)
		} else {
			loc, err = tl.AddBatch(ctx, []Op{testOp(i)})
		}
		if err != nil {
			t.Fatal(err)
		}
		ckp, err := ReadCheckpoint(dir)
		if err != nil {
			t.Fatal(err)
		}
		if ckp.Generation != loc.Generation || ckp.Offset != loc.Offset+loc.Size || ckp.Ops != int64(i+1) ||
			ckp.MinSeqNo != 0 || ckp.MaxSeqNo != i {
			t.Fatalf("after op %d at %+v: checkpoint %+v", i, loc, ckp)
		}
		st := tl.Stats()
		if st.Fsyncs-st0.Fsyncs != int64(i+1) || st.CheckpointSyncs-st0.CheckpointSyncs != int64(i+1) || st.SyncedOffset != ckp.Offset {
			t.Fatalf("after op %d: %d fsyncs and %d checkpoint syncs, synced offset %d", i,
				st.Fsyncs-st0.Fsyncs, st.CheckpointSyncs-st0.CheckpointSyncs, st.SyncedOffset)
		}
	}
}

// TestAsyncCheckpointsOnInterval: with Async durability an Add neither
// fsyncs nor checkpoints; the periodic sync does both.
func TestAsyncCheckpointsOnInterval(t *testing.T) {
	dir := t.TempDir()
	tl := open(t, dir, Options{Durability: Async, SyncInterval: time.Hour})
	defer tl.Close()
	st0 := tl.Stats()
	var loc Location
	for i := range uint64(20) {
		op := testOp(i)
		var err error
		if loc, err = tl.Add(ctx, &op); err != nil {
			t.Fatal(err)
		}
	}
	if st := tl.Stats(); st.Fsyncs != st0.Fsyncs || st.CheckpointSyncs != st0.CheckpointSyncs {
		t.Fatalf("async adds synced: %+v", st)
	}
	tl.SetSyncInterval(10 * time.Millisecond)
	deadline := time.Now().Add(5 * time.Second)
	for tl.Stats().SyncedOffset < loc.Offset+loc.Size {
		if time.Now().After(deadline) {
			t.Fatalf("no periodic sync after SetSyncInterval: %+v", tl.Stats())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if ckp, err := ReadCheckpoint(dir); err != nil || ckp.Ops != 20 {
		t.Fatalf("checkpoint %+v, %v", ckp, err)
	}
}

// damageSlot flips a byte of the checkpoint's newest slot (newest) or of
// the other one.
func damageSlot(t *testing.T, dir string, newest bool) {
	t.Helper()
	lc, err := readCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	slot := lc.slot // the next write's: the older one
	if newest {
		slot = 1 - slot
	}
	flipFileByte(t, filepath.Join(dir, checkpointName), int64(slot*ckpSlotSize+40))
}

func flipFileByte(t *testing.T, name string, off int64) {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	b[off] ^= 0x08
	if err := os.WriteFile(name, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestCheckpointDamage: with one slot damaged Open uses the other, and then
// accepts no torn tail but an incomplete or zeroed last record; with both
// damaged, or the file cut, Open fails naming translog.ckp.
func TestCheckpointDamage(t *testing.T) {
	const synced, n = 6, 8
	src, locs := liveTranslog(t, synced, n-synced)
	gen1 := genFileName(1)
	tests := []struct {
		name    string
		damage  func(t *testing.T, dir string)
		corrupt string // "" if Open recovers
		keep    int
	}{
		{"older slot", func(t *testing.T, dir string) { damageSlot(t, dir, false) }, "", n},
		{"newest slot", func(t *testing.T, dir string) { damageSlot(t, dir, true) }, "", n},
		{"newest slot and the last synced record", func(t *testing.T, dir string) {
			damageSlot(t, dir, true)
			flipFileByte(t, filepath.Join(dir, gen1), locs[synced-1].Offset+recordHeaderSize+1)
		}, gen1, 0},
		{"newest slot and an unsynced record in the middle", func(t *testing.T, dir string) {
			damageSlot(t, dir, true)
			flipFileByte(t, filepath.Join(dir, gen1), locs[synced].Offset+recordHeaderSize+1)
		}, "no exact sync offset", 0},
		{"newest slot and an incomplete last record", func(t *testing.T, dir string) {
			damageSlot(t, dir, true)
			if err := os.Truncate(filepath.Join(dir, gen1), locs[n-1].Offset+3); err != nil {
				t.Fatal(err)
			}
		}, "", n - 1},
		{"both slots", func(t *testing.T, dir string) {
			flipFileByte(t, filepath.Join(dir, checkpointName), 40)
			flipFileByte(t, filepath.Join(dir, checkpointName), ckpSlotSize+40)
		}, checkpointName + ": both slots damaged", 0},
		{"file cut short", func(t *testing.T, dir string) {
			if err := os.Truncate(filepath.Join(dir, checkpointName), ckpSlotSize); err != nil {
				t.Fatal(err)
			}
		}, checkpointName, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := crashCopy(t, src)
			tt.damage(t, dir)
			tl, err := Open(ctx, dir, Options{Logger: quietLogger()})
			if tt.corrupt != "" {
				if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), tt.corrupt) {
					t.Fatalf("got %v, want ErrCorrupt naming %q", err, tt.corrupt)
				}
				t.Log(err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			checkOps(t, readAll(t, tl, 0), seqRange(0, uint64(tt.keep))...)
			// Open rewrote the damaged slot: both are valid again.
			tl.Close()
			lc, err := readCheckpoint(dir)
			if err != nil || !lc.exact {
				t.Fatalf("after reopen: %+v, %v", lc, err)
			}
		})
	}
}

// TestOlderGenerationChecked: a retained older generation must end where
// the next generation's header says it did.
func TestOlderGenerationChecked(t *testing.T) {
	dir := t.TempDir()
	tl := open(t, dir, Options{})
	var locs []Location
	for i := range uint64(4) {
		locs = append(locs, addOp(t, tl, i))
		if i == 2 {
			if err := tl.Roll(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	tl.Close()
	// Generation 1 loses its last record, cleanly, at a record boundary.
	if err := os.Truncate(filepath.Join(dir, genFileName(1)), locs[2].Offset); err != nil {
		t.Fatal(err)
	}
	_, err := Open(ctx, dir, Options{})
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), genFileName(1)) || !strings.Contains(err.Error(), "generation 2 was started after") {
		t.Fatalf("got %v", err)
	}
	t.Log(err)
}

// v1Header and v1Checkpoint write the format of translogs made before
// checkpoints on every sync.
func v1Header(gen uint64, uuid UUID) ([]byte, uint32) {
	h := []byte(fileMagic)
	h = binary.LittleEndian.AppendUint32(h, 1)
	h = binary.LittleEndian.AppendUint64(h, gen)
	h = append(h, uuid[:]...)
	crc := crc32.Checksum(h, castagnoli)
	return binary.LittleEndian.AppendUint32(h, crc), crc
}

func v1Checkpoint(c Checkpoint) []byte {
	b := []byte(ckpMagic)
	b = binary.LittleEndian.AppendUint32(b, 1)
	b = append(b, c.UUID[:]...)
	for _, v := range [...]uint64{c.Generation, uint64(c.Offset), c.MinGeneration, c.MinSeqNo, c.MaxSeqNo, c.TrimmedBelow} {
		b = binary.LittleEndian.AppendUint64(b, v)
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// TestReadsVersion1: a translog written by the previous format opens (its
// checkpoint's offset taken as a lower bound), is replayed, and continues
// in the new format.
func TestReadsVersion1(t *testing.T) {
	dir := t.TempDir()
	uuid := UUID{1, 2, 3}
	var gens [2][]byte
	var seq uint64
	for g := range gens {
		b, prev := v1Header(uint64(g+1), uuid)
		for range 3 {
			op := testOp(seq)
			seq++
			b, prev, _ = appendRecord(b, &op, prev)
		}
		gens[g] = b
		os.WriteFile(filepath.Join(dir, genFileName(uint64(g+1))), b, 0o644)
	}
	// The v1 checkpoint was written at the roll: generation 2 was empty.
	ckp := Checkpoint{UUID: uuid, Generation: 2, Offset: fileHeaderSizeV1, MinGeneration: 1, MinSeqNo: 0, MaxSeqNo: 2}
	os.WriteFile(filepath.Join(dir, checkpointName), v1Checkpoint(ckp), 0o644)

	tl := open(t, dir, Options{})
	checkOps(t, readAll(t, tl, 0), seqRange(0, 6)...)
	op := testOp(6)
	if _, err := tl.Add(ctx, &op); err != nil {
		t.Fatal(err)
	}
	if err := tl.Roll(ctx); err != nil {
		t.Fatal(err)
	}
	tl.Close()
	if fileSize(filepath.Join(dir, checkpointName)) != ckpFileSize {
		t.Fatal("checkpoint not rewritten in the new format")
	}
	tl = open(t, dir, Options{})
	defer tl.Close()
	checkOps(t, readAll(t, tl, 0), seqRange(0, 7)...)

	// A bad record past a v1 checkpoint's offset that is followed by more
	// data cannot be told from damage: refused.
	os.WriteFile(filepath.Join(dir, checkpointName), v1Checkpoint(ckp), 0o644)
	os.Remove(filepath.Join(dir, genFileName(3)))
	b := gens[1]
	b[fileHeaderSizeV1+recordHeaderSize+1] ^= 1
	os.WriteFile(filepath.Join(dir, genFileName(2)), b, 0o644)
	if _, err := Open(ctx, dir, Options{Logger: quietLogger()}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("damaged v1 generation: %v", err)
	}
}
