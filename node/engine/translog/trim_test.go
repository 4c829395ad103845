package translog

import (
	"encoding/binary"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// termOp is an index op with a given seqno and term.
func termOp(seq, term uint64) Op {
	return Op{Type: OpIndex, SeqNo: seq, PrimaryTerm: term, ID: []byte{byte('a' + seq%26)}, Source: []byte(`{}`)}
}

func seqTerms(ops []Op) [][2]uint64 {
	var out [][2]uint64
	for _, op := range ops {
		out = append(out, [2]uint64{op.SeqNo, op.PrimaryTerm})
	}
	return out
}

// TestTrimRecord: a trim record voids the earlier ops of older terms above
// its bound — and only those: later ops, ops of its term or newer, ops at
// or below the bound stay; snapshots never return the record itself; it
// survives a reopen; it is durable under Async too.
func TestTrimRecord(t *testing.T) {
	dir := t.TempDir()
	tl := open(t, dir, Options{Durability: Async})
	add := func(ops ...Op) {
		t.Helper()
		for i := range ops {
			if _, err := tl.Add(ctx, &ops[i]); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Term 1 wrote 1..6; the new primary (term 2) had only up to 4.
	add(termOp(1, 1), termOp(2, 1), termOp(3, 1), termOp(4, 1), termOp(5, 1), termOp(6, 1))
	// Term 2's ops arrive before the resync's trim too.
	add(termOp(5, 2))
	if err := tl.Trim(ctx, 2, 4); err != nil {
		t.Fatal(err)
	}
	if st := tl.Stats(); st.UnsyncedOps != 0 || st.Trims != 1 || st.MaxTerm != 2 {
		t.Fatalf("after Trim (async): %+v", st)
	}
	// After the trim: an old term's op above the bound (a late duplicate)
	// is not voided by the earlier trim record.
	add(termOp(6, 2), termOp(7, 1))
	want := [][2]uint64{{1, 1}, {2, 1}, {3, 1}, {4, 1}, {5, 2}, {6, 2}, {7, 1}}
	if got := seqTerms(readAll(t, tl, 0)); !slices.Equal(got, want) {
		t.Fatalf("snapshot: %v, want %v", got, want)
	}
	if got := seqTerms(readAll(t, tl, 5)); !slices.Equal(got, want[4:]) {
		t.Fatalf("snapshot from 5: %v", got)
	}
	tl.Close()

	tl = open(t, dir, Options{})
	if got := seqTerms(readAll(t, tl, 0)); !slices.Equal(got, want) {
		t.Fatalf("after reopen: %v, want %v", got, want)
	}
	if st := tl.Stats(); st.Trims != 1 || st.MaxTerm != 2 {
		t.Fatalf("stats after reopen: %+v", st)
	}
	// A second, later trim (term 3, above 5) voids (6,2) and (7,1).
	if err := tl.Trim(ctx, 3, 5); err != nil {
		t.Fatal(err)
	}
	if got := seqTerms(readAll(t, tl, 0)); !slices.Equal(got, want[:5]) {
		t.Fatalf("after the second trim: %v", got)
	}
	tl.Close()
}

// TestTrimRecordAcrossGenerations: a trim record voids ops of older
// generations; TrimBelow drops trim records with their generation.
func TestTrimRecordAcrossGenerations(t *testing.T) {
	dir := t.TempDir()
	tl := open(t, dir, Options{})
	defer tl.Close()
	for s := uint64(1); s <= 6; s++ {
		op := termOp(s, 1)
		if _, err := tl.Add(ctx, &op); err != nil {
			t.Fatal(err)
		}
		if s%2 == 0 {
			if err := tl.Roll(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tl.Trim(ctx, 2, 2); err != nil {
		t.Fatal(err)
	}
	if got := seqTerms(readAll(t, tl, 0)); !slices.Equal(got, [][2]uint64{{1, 1}, {2, 1}}) {
		t.Fatalf("snapshot: %v", got)
	}
	if err := tl.Roll(ctx); err != nil {
		t.Fatal(err)
	}
	op := termOp(3, 2)
	if _, err := tl.Add(ctx, &op); err != nil {
		t.Fatal(err)
	}
	// Generation 4 holds only the trim record; trimming below 7 drops it
	// with the older ones, and with them everything it voided.
	if err := tl.TrimBelow(ctx, 7); err != nil {
		t.Fatal(err)
	}
	if st := tl.Stats(); st.Trims != 0 || st.MinGeneration != 5 {
		t.Fatalf("after TrimBelow: %+v", st)
	}
	if got := seqTerms(readAll(t, tl, 0)); !slices.Equal(got, [][2]uint64{{3, 2}}) {
		t.Fatalf("snapshot after TrimBelow: %v", got)
	}
}

// TestTrimRecordModel: random ops, terms and trim records, read through a
// snapshot (before and after a reopen), against a model that applies the
// rule directly.
func TestTrimRecordModel(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 7))
		dir := t.TempDir()
		tl := open(t, dir, Options{GenerationSize: 512})
		var log []Op // every record, in order
		for range 200 {
			var op Op
			if rng.IntN(15) == 0 {
				op = Op{Type: OpTrim, PrimaryTerm: 1 + rng.Uint64N(5), SeqNo: rng.Uint64N(60)}
				if err := tl.Trim(ctx, op.PrimaryTerm, op.SeqNo); err != nil {
					t.Fatal(err)
				}
			} else {
				op = termOp(rng.Uint64N(60), 1+rng.Uint64N(5))
				if _, err := tl.Add(ctx, &op); err != nil {
					t.Fatal(err)
				}
			}
			log = append(log, op)
		}
		var want [][2]uint64
		for i, op := range log {
			if op.Type == OpTrim {
				continue
			}
			void := false
			for _, tr := range log[i+1:] {
				if tr.Type == OpTrim && op.PrimaryTerm < tr.PrimaryTerm && op.SeqNo > tr.SeqNo {
					void = true
				}
			}
			if !void {
				want = append(want, [2]uint64{op.SeqNo, op.PrimaryTerm})
			}
		}
		if got := seqTerms(readAll(t, tl, 0)); !slices.Equal(got, want) {
			t.Fatalf("seed %d: snapshot %v\nwant %v", seed, got, want)
		}
		tl.Close()
		tl = open(t, dir, Options{})
		if got := seqTerms(readAll(t, tl, 0)); !slices.Equal(got, want) {
			t.Fatalf("seed %d: after reopen %v\nwant %v", seed, got, want)
		}
		tl.Close()
	}
}

// TestVersion2TermsReadAsOne: records of a version 2 generation that carry
// term 0 (every engine before terms wrote 0) read as term 1; other terms
// read as written; new generations are version 3.
func TestVersion2TermsReadAsOne(t *testing.T) {
	dir := t.TempDir()
	tl := open(t, dir, Options{})
	for s, term := range []uint64{0, 0, 4} {
		op := termOp(uint64(s+1), term)
		if _, err := tl.Add(ctx, &op); err != nil {
			t.Fatal(err)
		}
	}
	if got := seqTerms(readAll(t, tl, 0)); !slices.Equal(got, [][2]uint64{{1, 0}, {2, 0}, {3, 4}}) {
		t.Fatalf("version 3: %v", got)
	}
	tl.Close()
	// Rewrite generation 1's header as version 2 (same layout).
	name := filepath.Join(dir, genFileName(1))
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	binary.LittleEndian.PutUint32(b[4:], 2)
	binary.LittleEndian.PutUint32(b[fileHeaderSize-4:], crc32.Checksum(b[:fileHeaderSize-4], castagnoli))
	// The record chain starts from the header's crc: re-chain the records.
	prev := binary.LittleEndian.Uint32(b[fileHeaderSize-4:])
	for off := fileHeaderSize; off < len(b); {
		n := int(binary.LittleEndian.Uint32(b[off:]))
		h := b[off : off+recordHeaderSize]
		binary.LittleEndian.PutUint32(h[8:], prev)
		prev = recordCRC(h, b[off+recordHeaderSize:off+recordHeaderSize+n])
		binary.LittleEndian.PutUint32(h[4:], prev)
		off += recordHeaderSize + n
	}
	if err := os.WriteFile(name, b, 0o644); err != nil {
		t.Fatal(err)
	}
	tl = open(t, dir, Options{})
	defer tl.Close()
	if got := seqTerms(readAll(t, tl, 0)); !slices.Equal(got, [][2]uint64{{1, 1}, {2, 1}, {3, 4}}) {
		t.Fatalf("version 2: %v", got)
	}
	if err := tl.Roll(ctx); err != nil {
		t.Fatal(err)
	}
	b, err = os.ReadFile(filepath.Join(dir, genFileName(2)))
	if err != nil || binary.LittleEndian.Uint32(b[4:]) != fileVersion {
		t.Fatalf("new generation: version %d (%v)", binary.LittleEndian.Uint32(b[4:]), err)
	}
}

// TestTrimRecordRejectsBody: a trim record carries nothing but its term
// and bound.
func TestTrimRecordRejectsBody(t *testing.T) {
	tl := open(t, t.TempDir(), Options{})
	defer tl.Close()
	op := Op{Type: OpTrim, PrimaryTerm: 2, SeqNo: 3, ID: []byte("x")}
	if _, err := tl.Add(ctx, &op); err == nil {
		t.Fatal("trim record with an id accepted")
	}
}
