package translog

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzDecodeOp: the payload decoder never panics, and what it accepts
// re-encodes to the same bytes.
func FuzzDecodeOp(f *testing.F) {
	for i := range uint64(8) {
		op := testOp(i)
		rec, _, _ := appendRecord(nil, &op, 0)
		f.Add(rec[recordHeaderSize:])
	}
	trim := Op{Type: OpTrim, SeqNo: 41, PrimaryTerm: 3}
	rec, _, _ := appendRecord(nil, &trim, 0)
	f.Add(rec[recordHeaderSize:])
	f.Add([]byte{4, 1, 2, 0, 1, 0, 'x', 0})
	f.Add([]byte{1, 0, 0, 0, 0, 0})
	f.Add([]byte{2, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0, 5, 0, 0})
	f.Fuzz(func(t *testing.T, payload []byte) {
		var op Op
		if err := decodeOp(payload, &op); err != nil {
			return
		}
		rec, _, err := appendRecord(nil, &op, 0)
		if err != nil {
			t.Fatal(err)
		}
		// Varints have one canonical encoding in Go's writer but the
		// reader accepts padded ones, so compare decoded values.
		var back Op
		if err := decodeOp(rec[recordHeaderSize:], &back); err != nil || !equalOp(op, back) {
			t.Fatalf("round trip: %+v -> %+v (%v)", op, back, err)
		}
	})
}

// FuzzRecoverTail: whatever follows the last synced record, Open recovers
// every synced op (the tail is past the checkpoint: cut, or replayed where
// it holds valid records); with the newest checkpoint slot damaged too it
// may instead report ErrCorrupt. It never panics.
func FuzzRecoverTail(f *testing.F) {
	op := testOp(7)
	rec, _, _ := appendRecord(nil, &op, 0)
	f.Add([]byte{}, false)
	f.Add(rec, false)
	f.Add(bytes.Repeat([]byte{0}, 600), true)
	f.Add([]byte("garbage"), true)
	f.Fuzz(func(t *testing.T, tail []byte, damageNewest bool) {
		if len(tail) > 1<<16 {
			return
		}
		dir := t.TempDir()
		tl := open(t, dir, Options{})
		for i := range uint64(3) {
			op := testOp(i)
			if _, err := tl.Add(ctx, &op); err != nil {
				t.Fatal(err)
			}
		}
		if err := tl.Close(); err != nil { // the three ops are now below the checkpoint
			t.Fatal(err)
		}
		path := filepath.Join(dir, genFileName(1))
		fh, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		fh.Write(tail)
		fh.Close()
		if damageNewest {
			damageSlot(t, dir, true)
		}
		tl, err = Open(ctx, dir, Options{Logger: quietLogger()})
		if err != nil {
			if !damageNewest || !errors.Is(err, ErrCorrupt) {
				t.Fatalf("damaged slot %v: %v", damageNewest, err)
			}
			return
		}
		defer tl.Close()
		ops := readAll(t, tl, 0)
		if len(ops) < 3 {
			t.Fatalf("lost durable ops: %d left", len(ops))
		}
		checkOps(t, ops[:3], 0, 1, 2)
	})
}
