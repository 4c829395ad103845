package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/sluice-search/sluice/node/engine/index"
	"github.com/sluice-search/sluice/node/engine/search"
	"github.com/sluice-search/sluice/node/engine/translog"
)

func mustOpenReplica(t testing.TB, dir string, opts Options) *Replica {
	t.Helper()
	r, err := OpenReplica(context.Background(), durableOptions(t, dir, opts))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// fetchFrom copies files from a primary engine, counting the bytes.
func fetchFrom(e *Engine, bytes *atomic.Int64) FetchFunc {
	return func(ctx context.Context, f FileMeta, w io.Writer) error {
		in, err := e.OpenIndexFile(f.Name)
		if err != nil {
			return err
		}
		defer in.Close()
		if bytes != nil {
			bytes.Add(int64(len(in.Bytes())))
		}
		_, err = w.Write(in.Bytes())
		return err
	}
}

// replicateFrom sends the primary's logged operations with seqNo above
// from to the replica and returns the highest seqNo sent.
func replicateFrom(t testing.TB, e *Engine, r *Replica, from int64) int64 {
	t.Helper()
	ops := translogOps(t, e, uint64(from)+1)
	if _, err := r.ApplyOps(context.Background(), e.PrimaryTerm(), ops); err != nil {
		t.Fatal(err)
	}
	for _, op := range ops {
		from = max(from, int64(op.SeqNo))
	}
	return from
}

// refreshCheckpoint refreshes e and takes its checkpoint (the caller
// releases it).
func refreshCheckpoint(t testing.TB, e *Engine) *ReplicationCheckpoint {
	t.Helper()
	ctx := context.Background()
	if _, err := e.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	cp, err := e.Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return cp
}

// checkpointTo refreshes the primary, takes its checkpoint and installs it
// on each replica; it returns the checkpoint (released).
func checkpointTo(t testing.TB, e *Engine, rs ...*Replica) (*ReplicationCheckpoint, []InstallResult) {
	t.Helper()
	ctx := context.Background()
	cp := refreshCheckpoint(t, e)
	defer cp.Release()
	data, err := cp.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var res []InstallResult
	for _, r := range rs {
		wire, err := DecodeCheckpoint(data)
		if err != nil {
			t.Fatal(err)
		}
		got, err := r.InstallCheckpoint(ctx, wire, fetchFrom(e, nil))
		if err != nil {
			t.Fatal(err)
		}
		res = append(res, got)
	}
	return cp, res
}

// hitIDs runs q on rd and returns the _ids and scores of the top hits.
func hitIDs(t testing.TB, rd *Reader, q search.Query) []string {
	t.Helper()
	td, err := rd.Searcher().Search(context.Background(), q, search.Request{Size: 100})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, h := range td.Hits {
		leaf := 0
		for leaf+1 < len(rd.Leaves()) && rd.Leaves()[leaf+1].DocBase <= h.Doc {
			leaf++
		}
		var sd index.StoredDoc
		if err := rd.Document(leaf, h.Doc-rd.Leaves()[leaf].DocBase, &sd); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s:%.4f", sd.ID, h.Score))
	}
	out = append(out, fmt.Sprintf("total=%d", td.TotalHits))
	return out
}

// sameView: the replica's reader shows what the primary's does at the
// same checkpoint: the same documents, the same hits and scores, the same
// selection.
func sameView(t testing.TB, e *Engine, r *Replica) {
	t.Helper()
	pr, rr := e.Acquire(), r.Acquire()
	defer pr.Release()
	defer rr.Release()
	if pr.SeqNo() != rr.SeqNo() {
		t.Fatalf("primary reader at %d, replica at %d", pr.SeqNo(), rr.SeqNo())
	}
	if p, q := readerDocs(t, pr), readerDocs(t, rr); !maps.Equal(p, q) {
		t.Fatalf("documents differ:\nprimary %v\nreplica %v", p, q)
	}
	for _, term := range []string{"one", "two", "x"} {
		q := &search.TermQuery{Field: "title", Term: []byte(term)}
		if p, q := hitIDs(t, pr, q), hitIDs(t, rr, q); !slices.Equal(p, q) {
			t.Fatalf("hits for %q differ:\nprimary %v\nreplica %v", term, p, q)
		}
	}
	ps, err := pr.Select(context.Background(), &search.TermQuery{Field: "title", Term: []byte("one")}, Slice{ID: 1, Max: 2})
	if err != nil {
		t.Fatal(err)
	}
	rs, err := rr.Select(context.Background(), &search.TermQuery{Field: "title", Term: []byte("one")}, Slice{ID: 1, Max: 2})
	if err != nil {
		t.Fatal(err)
	}
	if ps.Total != rs.Total {
		t.Fatalf("Select: primary %d, replica %d", ps.Total, rs.Total)
	}
}

// TestReplicaInstall: checkpoints installed on a replica give it the
// primary's view — documents, deletes, hits, scores, selections — copying
// only the files it lacks; a checkpoint not newer than the installed one
// does nothing; the old reader stays usable.
func TestReplicaInstall(t *testing.T) {
	ctx := context.Background()
	e := mustOpenDurable(t, t.TempDir(), Options{DisableMerges: true})
	defer e.Close(ctx)
	r := mustOpenReplica(t, t.TempDir(), Options{})
	defer r.Close(ctx)

	for i := range 30 {
		applyOps(t, e, []engineOp{{id: strconv.Itoa(i), title: fmt.Sprintf("one two %d", i%3)}})
	}
	cp1, res := checkpointTo(t, e, r)
	if !res[0].Installed || res[0].Fetched != len(cp1.Files) || res[0].SeqNo != 30 {
		t.Fatalf("first install: %+v (%d files)", res[0], len(cp1.Files))
	}
	sameView(t, e, r)
	old := r.Acquire()

	applyOps(t, e, []engineOp{{del: true, id: "3"}, {id: "4", title: "x"}, {id: "30", title: "one"}})
	cp2, res := checkpointTo(t, e, r)
	// The first segment is reused; its live docs and the new segment are
	// fetched.
	if res[0].Reused != len(cp1.Files) || res[0].Fetched != len(cp2.Files)-len(cp1.Files) {
		t.Fatalf("second install: %+v (%d then %d files)", res[0], len(cp1.Files), len(cp2.Files))
	}
	sameView(t, e, r)
	if got := readerDocs(t, old); len(got) != 30 || got["3"] == "" {
		t.Fatalf("the old reader changed: %d docs", len(got))
	}
	old.Release()

	// Not newer: nothing.
	again, err := DecodeCheckpoint(mustMarshal(t, cp1))
	if err != nil {
		t.Fatal(err)
	}
	if res, err := r.InstallCheckpoint(ctx, again, fetchFrom(e, nil)); err != nil || res.Installed {
		t.Fatalf("older checkpoint: %+v, %v", res, err)
	}
	st := r.Stats()
	if st.NumDocs != 30 || st.Visible != 33 || st.CheckpointVersion != cp2.Version {
		t.Fatalf("stats: %+v", st)
	}
	// WaitForGeneration returns for what is visible, waits for more.
	if err := r.WaitForGeneration(ctx, 33); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 20e6)
	defer cancel()
	if err := r.WaitForGeneration(wctx, 34); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("wait for an invisible seq: %v", err)
	}
}

func mustMarshal(t testing.TB, cp *ReplicationCheckpoint) []byte {
	t.Helper()
	b, err := cp.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestReplicaInstallRefusesDamage: a fetched file whose bytes are not the
// checkpoint's is refused and the previous checkpoint stays installed.
func TestReplicaInstallRefusesDamage(t *testing.T) {
	ctx := context.Background()
	e := mustOpenDurable(t, t.TempDir(), Options{DisableMerges: true})
	defer e.Close(ctx)
	r := mustOpenReplica(t, t.TempDir(), Options{})
	defer r.Close(ctx)
	applyOps(t, e, []engineOp{{id: "a", title: "one"}})
	checkpointTo(t, e, r)
	applyOps(t, e, []engineOp{{id: "b", title: "two"}})
	cp := refreshCheckpoint(t, e)
	defer cp.Release()
	for name, bad := range map[string]FetchFunc{
		"flipped byte": func(ctx context.Context, f FileMeta, w io.Writer) error {
			var b []byte
			if err := fetchFrom(e, nil)(ctx, f, writerFunc(func(p []byte) { b = append(b, p...) })); err != nil {
				return err
			}
			b[len(b)/2] ^= 0x40
			_, err := w.Write(b)
			return err
		},
		"short": func(ctx context.Context, f FileMeta, w io.Writer) error {
			_, err := w.Write([]byte("_"))
			return err
		},
		"error": func(ctx context.Context, f FileMeta, w io.Writer) error { return io.ErrUnexpectedEOF },
	} {
		if _, err := r.InstallCheckpoint(ctx, cp, bad); err == nil {
			t.Fatalf("%s: installed", name)
		}
		if st := r.State(); st.Visible != 1 {
			t.Fatalf("%s: visible %d after a failed install", name, st.Visible)
		}
	}
	if _, err := r.InstallCheckpoint(ctx, cp, fetchFrom(e, nil)); err != nil {
		t.Fatal(err)
	}
	sameView(t, e, r)
}

type writerFunc func(p []byte)

func (f writerFunc) Write(p []byte) (int, error) { f(p); return len(p), nil }

// TestReplicaApplyOps: operations are appended with one fsync per call
// (Request durability); the local checkpoint follows the contiguous
// seqNos; a higher term is adopted and a lower one refused with nothing
// appended.
func TestReplicaApplyOps(t *testing.T) {
	ctx := context.Background()
	r := mustOpenReplica(t, t.TempDir(), Options{})
	defer r.Close(ctx)
	op := func(seq, term uint64) translog.Op {
		return translog.Op{Type: translog.OpIndex, SeqNo: seq, PrimaryTerm: term, ID: []byte(strconv.Itoa(int(seq))), Source: []byte(`{}`)}
	}
	fsyncs := r.TranslogStats().Fsyncs
	st, err := r.ApplyOps(ctx, 1, []translog.Op{op(1, 1), op(2, 1), op(4, 1)})
	if err != nil {
		t.Fatal(err)
	}
	if d := r.TranslogStats().Fsyncs - fsyncs; d != 1 {
		t.Fatalf("%d fsyncs for one call", d)
	}
	if st.LocalCheckpoint != 2 || st.MaxSeqNo != 4 {
		t.Fatalf("after 1,2,4: %+v", st)
	}
	if st, err = r.ApplyOps(ctx, 2, []translog.Op{op(3, 2)}); err != nil || st.LocalCheckpoint != 4 || st.Term != 2 {
		t.Fatalf("after 3 of term 2: %+v, %v", st, err)
	}
	n := r.TranslogStats().Ops
	if _, err := r.ApplyOps(ctx, 1, []translog.Op{op(5, 1), op(6, 1)}); !errors.Is(err, ErrStaleTerm) {
		t.Fatalf("stale term: %v", err)
	}
	if r.TranslogStats().Ops != n {
		t.Fatal("a refused batch was partly appended")
	}
	// The primary of term 2 may send term 1's operations (a resync).
	if _, err := r.ApplyOps(ctx, 2, []translog.Op{op(5, 1)}); err != nil {
		t.Fatalf("an older op from the current primary: %v", err)
	}
	if err := r.SetPrimaryTerm(1); !errors.Is(err, ErrStaleTerm) {
		t.Fatalf("lowering the term: %v", err)
	}
	for _, bad := range []translog.Op{{Type: translog.OpTrim, SeqNo: 1, PrimaryTerm: 2},
		{Type: translog.OpIndex, SeqNo: 0, PrimaryTerm: 2, ID: []byte("x")}, {Type: translog.OpDelete, SeqNo: 9, PrimaryTerm: 2},
		op(9, 3)} {
		if _, err := r.ApplyOps(ctx, 2, []translog.Op{bad}); err == nil {
			t.Fatalf("accepted %+v", bad)
		}
	}
	r.SetDurability(translog.Async, 0)
	fsyncs = r.TranslogStats().Fsyncs
	if _, err := r.ApplyOps(ctx, 2, []translog.Op{op(6, 2)}); err != nil {
		t.Fatal(err)
	}
	if r.TranslogStats().Fsyncs != fsyncs {
		t.Fatal("async durability fsynced")
	}
}

// TestReplicaCommitReopen: a replica commit makes the installed checkpoint
// durable and trims its translog no further than the global checkpoint; a
// reopened replica serves the committed view and knows its term and local
// checkpoint.
func TestReplicaCommitReopen(t *testing.T) {
	ctx := context.Background()
	e := mustOpenDurable(t, t.TempDir(), Options{DisableMerges: true})
	defer e.Close(ctx)
	dir := t.TempDir()
	r := mustOpenReplica(t, dir, Options{})
	if err := e.SetPrimaryTerm(3); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		applyOps(t, e, []engineOp{{id: strconv.Itoa(i), title: "one"}})
	}
	applyOps(t, e, []engineOp{{del: true, id: "7"}})
	sent := replicateFrom(t, e, r, 0)
	checkpointTo(t, e, r)
	// A commit with no global checkpoint known trims nothing.
	if _, err := r.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if st := r.TranslogStats(); st.Ops != 21 {
		t.Fatalf("translog trimmed to %d ops without a global checkpoint", st.Ops)
	}
	applyOps(t, e, []engineOp{{id: "x", title: "two"}})
	sent = replicateFrom(t, e, r, sent)
	checkpointTo(t, e, r)
	r.UpdateGlobalCheckpoint(15)
	si, err := r.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if si.SeqNo != 22 || si.UserData[UserDataGlobalCheckpoint] != "15" || si.UserData[UserDataPrimaryTerm] != "3" {
		t.Fatalf("commit: seq %d, user data %v", si.SeqNo, si.UserData)
	}
	if st := r.TranslogStats(); st.MinSeqNo > 16 || st.MinSeqNo == 0 {
		t.Fatalf("translog after a commit with global checkpoint 15: %+v", st)
	}
	want := liveDocs(t, e)
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	r = mustOpenReplica(t, dir, Options{})
	defer r.Close(ctx)
	rd := r.Acquire()
	got := readerDocs(t, rd)
	rd.Release()
	if !maps.Equal(got, want) {
		t.Fatalf("reopened replica:\n got %v\nwant %v", got, want)
	}
	st := r.State()
	if st.Term != 3 || st.LocalCheckpoint != 22 || st.Committed != 22 || st.GlobalCheckpoint != 15 || sent != 22 {
		t.Fatalf("reopened state: %+v", st)
	}
}

// TestReplicaPromote: a promoted replica is a primary holding every
// operation it received — the committed checkpoint and the translog above
// it — logging with the new term, naming segments in the new term's
// range; the sealed replica refuses operations; another replica that
// learned the new term refuses the old primary's.
func TestReplicaPromote(t *testing.T) {
	ctx := context.Background()
	e := mustOpenDurable(t, t.TempDir(), Options{DisableMerges: true})
	dir := t.TempDir()
	r := mustOpenReplica(t, dir, Options{})
	r2 := mustOpenReplica(t, t.TempDir(), Options{})
	defer r2.Close(ctx)
	for i := range 10 {
		applyOps(t, e, []engineOp{{id: strconv.Itoa(i), title: "one"}})
	}
	sent := replicateFrom(t, e, r, 0)
	replicateFrom(t, e, r2, 0)
	cp, _ := checkpointTo(t, e, r, r2)
	// Operations after the checkpoint reach the translogs only.
	applyOps(t, e, []engineOp{{id: "1", title: "two"}, {del: true, id: "2"}, {id: "new", title: "x"}})
	replicateFrom(t, e, r, sent)
	replicateFrom(t, e, r2, sent)
	r.UpdateGlobalCheckpoint(13)
	want := liveDocs(t, e)
	if err := e.Close(ctx); err != nil {
		t.Fatal(err)
	}

	p, err := r.Promote(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	if _, err := r.ApplyOps(ctx, 2, translogOps(t, p, 0)[:1]); !errors.Is(err, ErrClosed) && !errors.Is(err, ErrSealed) {
		t.Fatalf("ApplyOps on a promoted replica: %v", err)
	}
	if got := liveDocs(t, p); !maps.Equal(got, want) {
		t.Fatalf("promoted:\n got %v\nwant %v", got, want)
	}
	if p.PrimaryTerm() != 2 {
		t.Fatalf("term %d", p.PrimaryTerm())
	}
	res, err := p.Index(ctx, []byte("after"), []byte(`{"title":"one"}`))
	if err != nil || res.SeqNo != 14 {
		t.Fatalf("first op of the new primary: %+v, %v", res, err)
	}
	if _, err := p.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	old := map[string]bool{}
	for _, f := range cp.Files {
		old[f.Name] = true
	}
	rd := p.Acquire()
	for _, s := range rd.segs {
		if n, _ := strconv.ParseInt(s.info.Name[1:], 36, 64); !old[s.info.Files[0]] && n <= termCounterFloor(2) {
			t.Errorf("new segment %s named below term 2's range", s.info.Name)
		}
	}
	rd.Release()
	ops := translogOps(t, p, 14)
	if len(ops) != 1 || ops[0].PrimaryTerm != 2 {
		t.Fatalf("new primary's ops: %+v", ops)
	}

	// r2 learns the new term from the new primary's resync; the old
	// primary's next operations are refused.
	if err := r2.Trim(ctx, 2, 13); err != nil {
		t.Fatal(err)
	}
	stale := translog.Op{Type: translog.OpIndex, SeqNo: 14, PrimaryTerm: 1, ID: []byte("late"), Source: []byte(`{}`)}
	if _, err := r2.ApplyOps(ctx, 1, []translog.Op{stale}); !errors.Is(err, ErrStaleTerm) {
		t.Fatalf("old primary's op after the resync: %v", err)
	}
	if _, err := r2.ApplyOps(ctx, 2, ops); err != nil {
		t.Fatal(err)
	}
	// r2 takes the new primary's checkpoint (segments of both terms).
	checkpointTo(t, p, r2)
	sameView(t, p, r2)
	if err := r2.SetPrimaryTerm(1); !errors.Is(err, ErrStaleTerm) {
		t.Fatalf("r2 lowering its term: %v", err)
	}
	oldCP, err := DecodeCheckpoint(mustMarshal(t, cp))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r2.InstallCheckpoint(ctx, oldCP, fetchFrom(p, nil)); !errors.Is(err, ErrStaleTerm) {
		t.Fatalf("old primary's checkpoint: %v", err)
	}
}

// TestReplicaTrimThenPromote: operations an old primary sent but the new
// primary does not have are voided by the trim record, and a promotion
// replays only the rest.
func TestReplicaTrimThenPromote(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	r := mustOpenReplica(t, dir, Options{})
	var ops []translog.Op
	for s := uint64(1); s <= 8; s++ {
		ops = append(ops, translog.Op{Type: translog.OpIndex, SeqNo: s, PrimaryTerm: 1, ID: []byte(strconv.Itoa(int(s % 5))),
			Source: fmt.Appendf(nil, `{"title":"v%d"}`, s)})
	}
	if _, err := r.ApplyOps(ctx, 1, ops); err != nil {
		t.Fatal(err)
	}
	// The new primary (term 2) had up to 5 and reassigned 6 to id "1".
	if err := r.Trim(ctx, 2, 5); err != nil {
		t.Fatal(err)
	}
	if st := r.State(); st.LocalCheckpoint != 5 || st.MaxSeqNo != 5 {
		t.Fatalf("after the trim: %+v", st)
	}
	six := translog.Op{Type: translog.OpIndex, SeqNo: 6, PrimaryTerm: 2, ID: []byte("1"), Source: []byte(`{"title":"t2"}`)}
	if _, err := r.ApplyOps(ctx, 2, []translog.Op{six}); err != nil {
		t.Fatal(err)
	}
	p, err := r.Promote(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	want := map[string]string{"0": `{"title":"v5"}`, "1": `{"title":"t2"}`, "2": `{"title":"v2"}`,
		"3": `{"title":"v3"}`, "4": `{"title":"v4"}`}
	if got := liveDocs(t, p); !maps.Equal(got, want) {
		t.Fatalf("promoted after a trim:\n got %v\nwant %v", got, want)
	}
	if res, err := p.Index(ctx, []byte("z"), []byte(`{}`)); err != nil || res.SeqNo != 7 {
		t.Fatalf("next op %+v, %v", res, err)
	}
}

// TestReplicaReplacesOldPrimaryFile: a checkpoint naming a file the
// replica has with other bytes (an old primary's: here two primaries of
// one term) replaces it while an open reader keeps the old one; if the
// replica's last commit holds it, the install fails with ErrFileConflict.
func TestReplicaReplacesOldPrimaryFile(t *testing.T) {
	ctx := context.Background()
	a := mustOpenDurable(t, t.TempDir(), Options{DisableMerges: true})
	defer a.Close(ctx)
	b := mustOpenDurable(t, t.TempDir(), Options{DisableMerges: true})
	defer b.Close(ctx)
	r := mustOpenReplica(t, t.TempDir(), Options{})
	defer r.Close(ctx)
	applyOps(t, a, []engineOp{{id: "a1", title: "one"}, {id: "a2", title: "one"}})
	applyOps(t, b, []engineOp{{id: "b1", title: "two"}})
	checkpointTo(t, a, r)
	held := r.Acquire()
	defer held.Release()

	cp := refreshCheckpoint(t, b)
	defer cp.Release()
	wire, _ := DecodeCheckpoint(mustMarshal(t, cp))
	wire.Version = 1000
	res, err := r.InstallCheckpoint(ctx, wire, fetchFrom(b, nil))
	if err != nil {
		t.Fatal(err)
	}
	if res.Replaced == 0 {
		t.Fatalf("nothing replaced: %+v", res)
	}
	sameView(t, b, r)
	if got := readerDocs(t, held); len(got) != 2 || got["a1"] == "" {
		t.Fatalf("the reader of the old files: %v", got)
	}
	if _, err := r.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	// Now the commit holds b's files; a's checkpoint names them again.
	if _, err := a.Index(ctx, []byte("a3"), []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	cpa := refreshCheckpoint(t, a)
	defer cpa.Release()
	wire, _ = DecodeCheckpoint(mustMarshal(t, cpa))
	wire.Version = 2000
	if _, err := r.InstallCheckpoint(ctx, wire, fetchFrom(a, nil)); !errors.Is(err, ErrFileConflict) {
		t.Fatalf("conflict with the last commit: %v", err)
	}
	sameView(t, b, r)
}

// TestMergePreCopy: the primary's pre-copy hook runs before a merge
// commits, with the merged files readable; the replica's PreCopy fetches
// them, and the checkpoint that references them then fetches only small
// files. A failing or slow hook never fails the merge.
func TestMergePreCopy(t *testing.T) {
	ctx := context.Background()
	r := mustOpenReplica(t, t.TempDir(), Options{})
	defer r.Close(ctx)
	var e *Engine
	var calls atomic.Int32
	var preBytes atomic.Int64
	fail := atomic.Bool{}
	sched := &heldMerges{}
	e = mustOpenDurable(t, t.TempDir(), Options{MergePolicy: mergeAll{}, MergeScheduler: sched,
		MergedSegmentPreCopy: func(ctx context.Context, files []FileMeta) error {
			calls.Add(1)
			if fail.Load() {
				<-ctx.Done()
				return ctx.Err()
			}
			_, _, err := r.PreCopy(ctx, files, fetchFrom(e, &preBytes))
			return err
		}, MergePreCopyTimeout: 50e6})
	defer e.Close(ctx)
	for round := range 2 {
		for i := range 20 {
			applyOps(t, e, []engineOp{{id: fmt.Sprint(round*20 + i), title: "one two"}})
		}
		checkpointTo(t, e, r)
	}
	if err := sched.runOne(t); err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 1 || preBytes.Load() == 0 || r.Stats().FilesPreCopied == 0 {
		t.Fatalf("pre-copy: %d calls, %d bytes, stats %+v", calls.Load(), preBytes.Load(), r.Stats())
	}
	var installBytes atomic.Int64
	cp := refreshCheckpoint(t, e)
	res, err := r.InstallCheckpoint(ctx, cp, fetchFrom(e, &installBytes))
	cp.Release()
	if err != nil {
		t.Fatal(err)
	}
	if res.Fetched != 0 || installBytes.Load() != 0 || len(cp.Infos.Segments) != 1 {
		t.Fatalf("install after the pre-copy fetched %d files (%d bytes): %+v", res.Fetched, installBytes.Load(), res)
	}
	sameView(t, e, r)

	// A pre-copy that times out: the merge still commits.
	fail.Store(true)
	for i := range 5 {
		applyOps(t, e, []engineOp{{id: fmt.Sprint("late", i), title: "x"}})
	}
	if _, err := e.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if err := sched.runOne(t); err != nil {
		t.Fatalf("merge with a failing pre-copy: %v", err)
	}
	if _, err := e.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if n := e.Stats().Segments; n != 1 {
		t.Fatalf("%d segments after the merge", n)
	}
}

// TestReplicaCommitNeverBehindTrim: a checkpoint whose seqNo is below what
// the translog was already trimmed to (a new primary's, behind the old
// one's the copy committed) is not committed: the operations between
// would be in neither the commit nor the translog.
func TestReplicaCommitNeverBehindTrim(t *testing.T) {
	ctx := context.Background()
	a := mustOpenDurable(t, t.TempDir(), Options{DisableMerges: true})
	defer a.Close(ctx)
	b := mustOpenDurable(t, t.TempDir(), Options{DisableMerges: true, PrimaryTerm: 2})
	defer b.Close(ctx)
	r := mustOpenReplica(t, t.TempDir(), Options{})
	defer r.Close(ctx)
	for i := range 10 {
		applyOps(t, a, []engineOp{{id: strconv.Itoa(i), title: "one"}})
	}
	replicateFrom(t, a, r, 0)
	checkpointTo(t, a, r)
	r.UpdateGlobalCheckpoint(10)
	if si, err := r.Commit(ctx); err != nil || si.SeqNo != 10 {
		t.Fatalf("first commit: %v", err)
	}
	applyOps(t, b, []engineOp{{id: "b", title: "two"}})
	checkpointTo(t, b, r)
	si, err := r.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if si.SeqNo != 10 {
		t.Fatalf("committed a checkpoint at seq %d below the translog's trim point 11", si.SeqNo)
	}
}

// TestReplicaRecover: a returning copy that missed operations (its log
// has an old value the checkpoint superseded) recovers: the checkpoint
// over a new, empty translog, then the operations above it; promoted, it
// holds exactly the primary's state.
func TestReplicaRecover(t *testing.T) {
	ctx := context.Background()
	e := mustOpenDurable(t, t.TempDir(), Options{DisableMerges: true, PrimaryTerm: 2})
	defer e.Close(ctx)
	dir := t.TempDir()
	r := mustOpenReplica(t, dir, Options{})
	applyOps(t, e, []engineOp{{id: "a", title: "old"}, {id: "b", title: "one"}})
	replicateFrom(t, e, r, 0)
	before := r.TranslogStats()
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// While it is down: "a" is deleted, more is written.
	applyOps(t, e, []engineOp{{del: true, id: "a"}, {id: "c", title: "two"}})
	r = mustOpenReplica(t, dir, Options{})
	defer func() { r.Close(ctx) }()
	cp := refreshCheckpoint(t, e)
	release, err := e.RetainTranslogFrom(cp.SeqNo + 1)
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Recover(ctx, cp, fetchFrom(e, nil))
	cp.Release()
	if err != nil {
		t.Fatal(err)
	}
	if !res.Installed {
		t.Fatalf("recovery: %+v", res)
	}
	if st := r.TranslogStats(); st.Ops != 0 || st.Generations != 1 {
		t.Fatalf("translog after recovery: %+v (before: %+v)", st, before)
	}
	applyOps(t, e, []engineOp{{id: "d", title: "x"}})
	replicateFrom(t, e, r, cp.SeqNo)
	release()
	if st := r.State(); st.LocalCheckpoint != e.Stats().SeqNo || st.Committed != cp.SeqNo {
		t.Fatalf("state after recovery: %+v", st)
	}
	want := liveDocs(t, e)
	p, err := r.Promote(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	if got := liveDocs(t, p); !maps.Equal(got, want) {
		t.Fatalf("promoted after recovery:\n got %v\nwant %v", got, want)
	}
}

// TestFinishTranslogReset: every state a crash can leave a translog reset
// in opens as the commit says.
func TestFinishTranslogReset(t *testing.T) {
	ctx := context.Background()
	mk := func(path string) string {
		tl, err := translog.Open(ctx, path, translog.Options{})
		if err != nil {
			t.Fatal(err)
		}
		u := tl.UUID().String()
		tl.Close()
		return u
	}
	uuidAt := func(path string) string {
		ck, err := translog.ReadCheckpoint(path)
		if err != nil {
			return ""
		}
		return ck.UUID.String()
	}
	for _, tc := range []struct {
		name         string
		old, fresh   bool // which exist
		oldAside     bool // the old one already moved to .old
		commitsFresh bool
		wantFresh    bool
	}{
		{"no reset", true, false, false, false, false},
		{"fresh made, not committed", true, true, false, false, false},
		{"committed, not swapped", true, true, false, true, true},
		{"old moved aside", false, true, true, true, true},
		{"swapped, old left", false, false, true, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := filepath.Join(t.TempDir(), "translog")
			var oldU, freshU string
			if tc.old || tc.oldAside {
				oldU = mk(base)
			}
			if tc.oldAside {
				if err := os.Rename(base, base+translogOldSuffix); err != nil {
					t.Fatal(err)
				}
				if !tc.fresh { // swapped: the new one is in place
					oldU = mk(base)
				}
			}
			if tc.fresh {
				freshU = mk(base + translogFreshSuffix)
			}
			commit := oldU
			if tc.commitsFresh {
				commit = freshU
			}
			if err := finishTranslogReset(base, commit); err != nil {
				t.Fatal(err)
			}
			want := oldU
			if tc.wantFresh {
				want = freshU
			}
			if got := uuidAt(base); got != want {
				t.Fatalf("translog %s, want %s", got, want)
			}
			for _, sfx := range []string{translogFreshSuffix, translogOldSuffix} {
				if _, err := os.Stat(base + sfx); err == nil {
					t.Fatalf("%s left behind", sfx)
				}
			}
		})
	}
}

// TestPromoteFileOnlyCopyKeepsSeqNos: a copy that got its documents as
// files only (a relocation target whose primary's translog held nothing
// past the copied checkpoint) and never heard a global checkpoint is
// promoted: its translog cannot re-supply the operations its segments
// hold, so the new primary's sequence numbers continue above them rather
// than reusing theirs.
func TestPromoteFileOnlyCopyKeepsSeqNos(t *testing.T) {
	ctx := context.Background()
	e := mustOpenDurable(t, t.TempDir(), Options{DisableMerges: true})
	r := mustOpenReplica(t, t.TempDir(), Options{})
	for i := range 10 {
		applyOps(t, e, []engineOp{{id: strconv.Itoa(i), title: "one"}})
	}
	checkpointTo(t, e, r)
	if err := e.Close(ctx); err != nil {
		t.Fatal(err)
	}
	p, err := r.Promote(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	if got := len(liveDocs(t, p)); got != 10 {
		t.Fatalf("promoted copy holds %d docs, want 10", got)
	}
	res, err := p.Index(ctx, []byte("after"), []byte(`{"title":"one"}`))
	if err != nil || res.SeqNo != 11 {
		t.Fatalf("first op of the new primary: %+v, %v; want seqNo 11 (1-10 are in its segments)", res, err)
	}
}
