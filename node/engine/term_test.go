package engine

import (
	"context"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sluice-search/sluice/node/engine/translog"
)

// TestPrimaryTerm: operations are logged with the engine's term; the term
// is adopted at open from the commit and the translog, refused when
// older, raised by SetPrimaryTerm (never lowered), recorded by commits;
// new segments are named in the term's range.
func TestPrimaryTerm(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	e := mustOpenDurable(t, dir, Options{})
	if e.PrimaryTerm() != 1 {
		t.Fatalf("default term %d", e.PrimaryTerm())
	}
	applyOps(t, e, []engineOp{{id: "a", title: "1"}})
	if err := e.SetPrimaryTerm(3); err != nil {
		t.Fatal(err)
	}
	if err := e.SetPrimaryTerm(2); !errors.Is(err, ErrStaleTerm) {
		t.Fatalf("lowering the term: %v", err)
	}
	applyOps(t, e, []engineOp{{id: "b", title: "3"}, {del: true, id: "a"}})
	if _, err := e.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	r := e.Acquire()
	for _, s := range r.segs {
		if n, _ := strconv.ParseInt(s.info.Name[1:], 36, 64); n <= termCounterFloor(3) {
			t.Errorf("segment %s flushed in term 3 is named below the term's range %s", s.info.Name, segmentName(termCounterFloor(3)))
		}
	}
	r.Release()
	terms := translogTerms(t, e)
	if want := []uint64{1, 3, 3}; !slices.Equal(terms, want) {
		t.Fatalf("logged terms %v, want %v", terms, want)
	}
	if err := e.Close(ctx); err != nil {
		t.Fatal(err)
	}

	// Reopen: the translog's term 3 is adopted; asking for 2 is refused.
	if _, err := openDurable(t, dir, Options{PrimaryTerm: 2}); !errors.Is(err, ErrStaleTerm) {
		t.Fatalf("open with an older term: %v", err)
	}
	e = mustOpenDurable(t, dir, Options{})
	if e.PrimaryTerm() != 3 {
		t.Fatalf("adopted term %d, want 3", e.PrimaryTerm())
	}
	si, err := e.Commit(ctx, CommitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if si.UserData[UserDataPrimaryTerm] != "3" {
		t.Fatalf("commit user data %v", si.UserData)
	}
	if err := e.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// The translog is trimmed: the commit alone still knows term 3.
	if _, err := openDurable(t, dir, Options{PrimaryTerm: 2}); !errors.Is(err, ErrStaleTerm) || !strings.Contains(err.Error(), "term 3") {
		t.Fatalf("open with an older term after a commit: %v", err)
	}
	e = mustOpenDurable(t, dir, Options{PrimaryTerm: 5})
	defer e.Close(ctx)
	if c := e.w.segments.counter.Load(); c < termCounterFloor(5) {
		t.Fatalf("counter %d below term 5's floor %d", c, termCounterFloor(5))
	}
	applyOps(t, e, []engineOp{{id: "c", title: "5"}})
	if terms := translogTerms(t, e); terms[len(terms)-1] != 5 {
		t.Fatalf("logged terms %v", terms)
	}
}

func translogTerms(t *testing.T, e *Engine) []uint64 {
	t.Helper()
	var terms []uint64
	for _, op := range translogOps(t, e, 0) {
		terms = append(terms, op.PrimaryTerm)
	}
	return terms
}

// translogOps returns e's translog operations from seqNo from (copied).
func translogOps(t testing.TB, e *Engine, from uint64) []translog.Op {
	t.Helper()
	snap, err := e.dur.tl.Snapshot(context.Background(), from)
	if err != nil {
		t.Fatal(err)
	}
	return snapshotOps(t, snap)
}

// snapshotOps reads (copies) and closes a translog snapshot.
func snapshotOps(t testing.TB, snap *translog.Snapshot) []translog.Op {
	t.Helper()
	defer snap.Close()
	var ops []translog.Op
	for {
		op, err := snap.Next()
		if err == io.EOF {
			return ops
		}
		if err != nil {
			t.Fatal(err)
		}
		ops = append(ops, translog.Op{Type: op.Type, SeqNo: op.SeqNo, PrimaryTerm: op.PrimaryTerm,
			ID: slices.Clone(op.ID), Source: slices.Clone(op.Source), Routing: slices.Clone(op.Routing)})
	}
}
