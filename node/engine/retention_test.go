package engine

import (
	"context"
	"errors"
	"io"
	"strconv"
	"testing"
)

// TestTranslogRetention: a retention lock keeps the operations above its
// seqNo through commits, for a copy's recovery to stream, until released;
// a lock below what a commit already trimmed is refused; the translog
// still counts as committed what the commit holds.
func TestTranslogRetention(t *testing.T) {
	ctx := context.Background()
	e := mustOpenDurable(t, t.TempDir(), Options{})
	defer e.Close(ctx)
	index := func(from, to int) {
		for i := from; i <= to; i++ {
			applyOps(t, e, []engineOp{{id: strconv.Itoa(i % 7), title: strconv.Itoa(i)}})
		}
	}
	index(1, 10)
	if _, err := e.Commit(ctx, CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.RetainTranslogFrom(5); !errors.Is(err, ErrTranslogTrimmed) {
		t.Fatalf("retaining trimmed operations: %v", err)
	}
	if _, err := e.TranslogSnapshot(ctx, 4); !errors.Is(err, ErrTranslogTrimmed) {
		t.Fatalf("snapshot of trimmed operations: %v", err)
	}
	index(11, 20)
	release, err := e.RetainTranslogFrom(15)
	if err != nil {
		t.Fatal(err)
	}
	index(21, 25)
	if _, err := e.Commit(ctx, CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	if st := e.TranslogStats(); st.UncommittedOps != 0 {
		t.Fatalf("after a commit with a retention lock: %d uncommitted ops", st.UncommittedOps)
	}
	snap, err := e.TranslogSnapshot(ctx, 14)
	if err != nil {
		t.Fatal(err)
	}
	var seqs []uint64
	for {
		op, err := snap.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if op.PrimaryTerm != 1 {
			t.Fatalf("op %d has term %d", op.SeqNo, op.PrimaryTerm)
		}
		seqs = append(seqs, op.SeqNo)
	}
	snap.Close()
	if len(seqs) != 11 || seqs[0] != 15 || seqs[10] != 25 {
		t.Fatalf("retained snapshot: %v", seqs)
	}
	release()
	release()
	index(26, 27)
	if _, err := e.Commit(ctx, CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.TranslogSnapshot(ctx, 14); !errors.Is(err, ErrTranslogTrimmed) {
		t.Fatalf("snapshot after the lock was released and a commit trimmed: %v", err)
	}
}
