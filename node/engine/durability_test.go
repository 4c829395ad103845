package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-search/sluice/node/engine/document"
	"github.com/sluice-search/sluice/node/engine/index"
	"github.com/sluice-search/sluice/node/engine/mapping"
	"github.com/sluice-search/sluice/node/engine/translog"
)

// openDurable opens an engine over dir with a translog (no automatic
// refresh, no periodic commit unless opts say so); the caller closes it.
func openDurable(t testing.TB, dir string, opts Options) (*Engine, error) {
	t.Helper()
	return Open(context.Background(), durableOptions(t, dir, opts))
}

// durableOptions are openDurable's options.
func durableOptions(t testing.TB, dir string, opts Options) Options {
	t.Helper()
	opts.Path = dir
	opts.Codec = testCodec(t)
	if opts.RefreshInterval == 0 {
		opts.RefreshInterval = -1
	}
	if opts.CommitInterval == 0 {
		opts.CommitInterval = -1
	}
	if opts.CommitTranslogBytes == 0 {
		opts.CommitTranslogBytes = -1
	}
	if opts.Parser == nil {
		m, err := mapping.New(mapping.DynamicTrue, map[string]mapping.Field{"title": mapping.NewField(document.Text)})
		if err != nil {
			t.Fatal(err)
		}
		if opts.Parser, err = NewMappingParser(m); err != nil {
			t.Fatal(err)
		}
	}
	return opts
}

func mustOpenDurable(t testing.TB, dir string, opts Options) *Engine {
	t.Helper()
	e, err := openDurable(t, dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// liveDocs returns every live document's _source by _id after a refresh.
func liveDocs(t testing.TB, e *Engine) map[string]string {
	t.Helper()
	ctx := context.Background()
	if _, err := e.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	r := e.Acquire()
	defer r.Release()
	return readerDocs(t, r)
}

// readerDocs returns every live document's _source by _id in r.
func readerDocs(t testing.TB, r *Reader) map[string]string {
	t.Helper()
	got := map[string]string{}
	for leaf, lr := range r.Leaves() {
		for doc := range lr.Reader.MaxDoc() {
			if lr.Live != nil && !lr.Live.Get(doc) {
				continue
			}
			var sd index.StoredDoc
			if err := r.Document(leaf, doc, &sd); err != nil {
				t.Fatal(err)
			}
			if _, dup := got[string(sd.ID)]; dup {
				t.Fatalf("id %s live twice", sd.ID)
			}
			got[string(sd.ID)] = string(sd.Source)
		}
	}
	return got
}

type engineOp struct {
	del    bool
	create bool
	id     string
	title  string
}

func applyOps(t testing.TB, e *Engine, ops []engineOp) {
	t.Helper()
	ctx := context.Background()
	for _, op := range ops {
		var err error
		src := []byte(fmt.Sprintf(`{"title":%q}`, op.title))
		switch {
		case op.del:
			_, err = e.Delete(ctx, []byte(op.id))
		case op.create:
			_, err = e.Create(ctx, []byte(op.id), src)
		default:
			_, err = e.Index(ctx, []byte(op.id), src)
		}
		if err != nil {
			t.Fatalf("%+v: %v", op, err)
		}
	}
}

// TestTranslogReplay: operations after the last commit (or with no commit
// at all) come back from the translog on reopen, with deletes, updates and
// creates, and sequence numbers continue after them.
func TestTranslogReplay(t *testing.T) {
	before := []engineOp{{id: "a", title: "a1"}, {id: "b", title: "b1"}, {id: "c", title: "c1"}, {id: "d", title: "d1"}}
	after := []engineOp{
		{id: "a", title: "a2"}, {del: true, id: "b"}, {id: "e", title: "e1"},
		{create: true, id: "f", title: "f1"}, {id: "e", title: "e2"}, {del: true, id: "e"},
		{id: "c", title: "c2"}, {del: true, id: "c"}, {id: "c", title: "c3"}, {del: true, id: "nope"},
	}
	for _, tc := range []struct {
		name       string
		commit     bool
		durability translog.Durability
	}{
		{"no commit", false, translog.Request},
		{"after commit", true, translog.Request},
		{"async", true, translog.Async},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			e := mustOpenDurable(t, dir, Options{TranslogOptions: TranslogOptions{Durability: tc.durability}})
			applyOps(t, e, before)
			if tc.commit {
				if _, err := e.Commit(ctx, CommitOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			applyOps(t, e, after)
			want := liveDocs(t, e)
			seq := e.Stats().SeqNo
			if err := e.Close(ctx); err != nil {
				t.Fatal(err)
			}
			e = mustOpenDurable(t, dir, Options{})
			defer e.Close(ctx)
			got := liveDocs(t, e)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("after replay:\n got %v\nwant %v", got, want)
			}
			res, err := e.Index(ctx, []byte("z"), []byte(`{"title":"z"}`))
			if err != nil || res.SeqNo != seq+1 {
				t.Fatalf("next op: seq %d (want %d), %v", res.SeqNo, seq+1, err)
			}
		})
	}
}

// TestTranslogReplayOutOfOrder: concurrent writers append after taking
// their sequence numbers, so the log can hold a later write to an id
// before an earlier one; replay must let the higher seqNo win.
func TestTranslogReplayOutOfOrder(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	e := mustOpenDurable(t, dir, Options{})
	applyOps(t, e, []engineOp{{id: "x", title: "x1"}, {id: "y", title: "y1"}})
	if _, err := e.Commit(ctx, CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(ctx); err != nil {
		t.Fatal(err)
	}
	tl, err := translog.Open(ctx, filepath.Join(dir, "translog"), translog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range []translog.Op{
		{Type: translog.OpIndex, SeqNo: 6, ID: []byte("x"), Source: []byte(`{"title":"x3"}`)},
		{Type: translog.OpIndex, SeqNo: 4, ID: []byte("x"), Source: []byte(`{"title":"x2"}`)},
		{Type: translog.OpDelete, SeqNo: 5, ID: []byte("y")},
		{Type: translog.OpIndex, SeqNo: 3, ID: []byte("y"), Source: []byte(`{"title":"y2"}`)},
		{Type: translog.OpIndex, SeqNo: 1, ID: []byte("old"), Source: []byte(`{"title":"committed already"}`)},
	} {
		if _, err := tl.Add(ctx, &op); err != nil {
			t.Fatal(err)
		}
	}
	if err := tl.Close(); err != nil {
		t.Fatal(err)
	}
	e = mustOpenDurable(t, dir, Options{})
	defer e.Close(ctx)
	got := liveDocs(t, e)
	want := map[string]string{"x": `{"title":"x3"}`}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if res, err := e.Index(ctx, []byte("n"), []byte(`{}`)); err != nil || res.SeqNo != 7 {
		t.Fatalf("next seq %d, %v; want 7", res.SeqNo, err)
	}
}

// TestCommitTrimsTranslog: a commit records the translog in its user data
// and drops the generations it covers; a reopen then replays nothing.
func TestCommitTrimsTranslog(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	e := mustOpenDurable(t, dir, Options{})
	for i := range 50 {
		applyOps(t, e, []engineOp{{id: fmt.Sprint(i % 20), title: fmt.Sprint(i)}})
	}
	if st := e.TranslogStats(); st.Ops != 50 {
		t.Fatalf("translog ops %d, want 50", st.Ops)
	}
	si, err := e.Commit(ctx, CommitOptions{UserData: map[string]string{"mine": "kept"}})
	if err != nil {
		t.Fatal(err)
	}
	st := e.TranslogStats()
	if st.Ops != 0 || st.Generations != 1 {
		t.Fatalf("after commit: %+v", st)
	}
	if si.UserData[UserDataTranslogUUID] == "" || si.UserData[UserDataTranslogGeneration] != fmt.Sprint(st.CurrentGen) ||
		si.UserData["mine"] != "kept" || si.SeqNo != 50 {
		t.Fatalf("commit user data %v seq %d", si.UserData, si.SeqNo)
	}
	applyOps(t, e, []engineOp{{id: "late", title: "late"}})
	want := liveDocs(t, e)
	e.Close(ctx)
	e = mustOpenDurable(t, dir, Options{})
	defer e.Close(ctx)
	if st := e.TranslogStats(); st.Ops != 1 {
		t.Fatalf("reopened translog holds %d ops, want 1", st.Ops)
	}
	if got := liveDocs(t, e); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// TestPeriodicCommit: the committer commits by translog size and by age.
func TestPeriodicCommit(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts TranslogOptions
	}{
		{"size", TranslogOptions{CommitTranslogBytes: 1, CommitInterval: -1}},
		{"interval", TranslogOptions{CommitInterval: 20 * time.Millisecond, CommitTranslogBytes: -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			e := mustOpenDurable(t, t.TempDir(), Options{TranslogOptions: tc.opts})
			defer e.Close(ctx)
			applyOps(t, e, []engineOp{{id: "1", title: "one"}})
			deadline := time.Now().Add(5 * time.Second)
			for {
				if c := e.Writer().LastCommit(); c != nil && c.SeqNo == 1 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("no periodic commit")
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}

// TestBulkOneFsync: a bulk's operations share one fsync; per-op Request
// durability pays one each.
func TestBulkOneFsync(t *testing.T) {
	ctx := context.Background()
	e := mustOpenDurable(t, t.TempDir(), Options{})
	defer e.Close(ctx)
	f0 := e.TranslogStats().Fsyncs
	b := e.NewBulk()
	for i := range 100 {
		if _, err := b.Index(ctx, []byte(fmt.Sprint(i)), []byte(`{"title":"bulk"}`)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.Delete(ctx, []byte("7")); err != nil {
		t.Fatal(err)
	}
	if n := e.TranslogStats().Fsyncs - f0; n != 0 {
		t.Fatalf("%d fsyncs before Bulk.Sync", n)
	}
	if err := b.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if n := e.TranslogStats().Fsyncs - f0; n != 1 {
		t.Fatalf("bulk: %d fsyncs, want 1", n)
	}
	applyOps(t, e, []engineOp{{id: "a"}, {id: "b"}, {del: true, id: "a"}})
	if n := e.TranslogStats().Fsyncs - f0; n != 4 {
		t.Fatalf("3 ops: %d fsyncs in all, want 4", n)
	}
}

// TestSyncsPerMode counts translog syncs (an fsync of the generation and
// one of the checkpoint): Request pays one per operation and one per bulk;
// Async none per request, and one per SyncInterval while writes come in;
// SetDurability switches between them at runtime.
func TestSyncsPerMode(t *testing.T) {
	ctx := context.Background()
	e := mustOpenDurable(t, t.TempDir(), Options{TranslogOptions: TranslogOptions{
		Durability: translog.Async, SyncInterval: time.Hour}})
	defer e.Close(ctx)
	n := 0
	// requests sends 5 single operations and 2 bulks of 10.
	requests := func() {
		t.Helper()
		for range 5 {
			n++
			applyOps(t, e, []engineOp{{id: fmt.Sprint(n), title: "single"}})
		}
		for range 2 {
			b := e.NewBulk()
			for range 10 {
				n++
				if _, err := b.Index(ctx, []byte(fmt.Sprint(n)), []byte(`{"title":"bulk"}`)); err != nil {
					t.Fatal(err)
				}
			}
			if err := b.Sync(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	syncs := func(since translog.Stats) (int64, int64) {
		st := e.TranslogStats()
		return st.Fsyncs - since.Fsyncs, st.CheckpointSyncs - since.CheckpointSyncs
	}

	st := e.TranslogStats()
	requests()
	if f, c := syncs(st); f != 0 || c != 0 {
		t.Fatalf("async: %d fsyncs and %d checkpoint syncs for 7 requests, want none", f, c)
	}

	const interval, run = 50 * time.Millisecond, 600 * time.Millisecond
	e.SetDurability(translog.Async, interval)
	st = e.TranslogStats()
	start := time.Now()
	// At least run, and longer on a machine too loaded to tick in time
	// (the bounds below scale with the time taken).
	for time.Since(start) < run || time.Since(start) < 10*time.Second && func() bool { f, _ := syncs(st); return f < 2 }() {
		requests()
	}
	el := time.Since(start)
	f, c := syncs(st)
	t.Logf("async, %v interval: %d operations in %v took %d fsyncs, %d checkpoint syncs", interval, n-27, el, f, c)
	if f < 2 || f > int64(el/interval)+2 || c != f {
		t.Fatalf("async, %v interval: %d fsyncs and %d checkpoint syncs in %v", interval, f, c, el)
	}

	e.SetDurability(translog.Request, 0)
	if err := e.Sync(ctx); err != nil { // what Async left unsynced
		t.Fatal(err)
	}
	st = e.TranslogStats()
	requests()
	if f, c := syncs(st); f != 7 || c != 7 {
		t.Fatalf("request: %d fsyncs and %d checkpoint syncs for 7 requests, want 7", f, c)
	}
}

// flipByte corrupts one byte of a file at offset off (negative: from the
// end).
func flipByte(t *testing.T, name string, off int64) {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if off < 0 {
		off += int64(len(data))
	}
	data[off] ^= 0x5a
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func findFile(t *testing.T, dir, suffix string) string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, "*"+suffix))
	if len(m) == 0 {
		t.Fatalf("no %s file in %s", suffix, dir)
	}
	return m[0]
}

// indexCommitUpdate indexes ids 0..39 and commits, then updates 0..19
// and deletes 20..39 (in the translog only); it returns the live docs.
func indexCommitUpdate(t *testing.T, e *Engine) map[string]string {
	t.Helper()
	for i := range 40 {
		applyOps(t, e, []engineOp{{id: fmt.Sprint(i), title: strings.Repeat("word ", i%7+1)}})
	}
	if _, err := e.Commit(context.Background(), CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		applyOps(t, e, []engineOp{{id: fmt.Sprint(i), title: "second"}, {del: true, id: fmt.Sprint(i + 20)}})
	}
	return liveDocs(t, e)
}

// TestOpenDamaged: a torn translog tail is cut and the rest recovered;
// corruption in the middle of the translog, a translog that is not the
// commit's, or a damaged segment fail Open with an error saying so.
func TestOpenDamaged(t *testing.T) {
	for _, tc := range []struct {
		name    string
		damage  func(t *testing.T, dir string)
		opts    TranslogOptions
		wantErr error // nil: opens, every op recovered
	}{
		{"torn tail", func(t *testing.T, dir string) {
			f, err := os.OpenFile(findFile(t, filepath.Join(dir, "translog"), ".tlog"), os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.Write([]byte{200, 0, 0, 0, 1, 2, 3}) // a record header cut short
			f.Close()
		}, TranslogOptions{}, nil},
		{"translog middle", func(t *testing.T, dir string) {
			flipByte(t, findFile(t, filepath.Join(dir, "translog"), ".tlog"), 200)
		}, TranslogOptions{}, translog.ErrCorrupt},
		{"translog replaced", func(t *testing.T, dir string) {
			if err := os.RemoveAll(filepath.Join(dir, "translog")); err != nil {
				t.Fatal(err)
			}
		}, TranslogOptions{}, translog.ErrCorrupt},
		{"segment terms", func(t *testing.T, dir string) {
			flipByte(t, findFile(t, dir, ".tim"), 40)
		}, TranslogOptions{}, index.ErrCorrupt},
		{"segment postings, full check", func(t *testing.T, dir string) {
			flipByte(t, findFile(t, dir, ".doc"), -20)
		}, TranslogOptions{CheckIntegrityOnOpen: true}, index.ErrCorrupt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			e := mustOpenDurable(t, dir, Options{})
			want := indexCommitUpdate(t, e)
			if err := e.Close(ctx); err != nil {
				t.Fatal(err)
			}
			tc.damage(t, dir)
			e, err := openDurable(t, dir, Options{TranslogOptions: tc.opts})
			if tc.wantErr != nil {
				if err == nil {
					e.Close(ctx)
					t.Fatal("opened a damaged index")
				}
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("error %v does not wrap %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close(ctx)
			if got := liveDocs(t, e); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("got %v, want %v", got, want)
			}
			if e.TranslogStats().TruncatedBytes == 0 {
				t.Fatal("torn tail not reported")
			}
		})
	}
}

// TestTranslogFailureStopsWrites: once an append fails, the engine refuses
// every later write rather than acknowledge operations it cannot log.
func TestTranslogFailureStopsWrites(t *testing.T) {
	ctx := context.Background()
	e := mustOpenDurable(t, t.TempDir(), Options{})
	defer e.Close(ctx)
	applyOps(t, e, []engineOp{{id: "a", title: "a"}})
	e.dur.tl.Close() // the log goes away under the engine
	if _, err := e.Index(ctx, []byte("b"), []byte(`{}`)); !errors.Is(err, translog.ErrClosed) {
		t.Fatalf("append to a closed translog: %v", err)
	}
	for name, op := range map[string]func() error{
		"index":  func() error { _, err := e.Index(ctx, []byte("c"), []byte(`{}`)); return err },
		"delete": func() error { _, err := e.Delete(ctx, []byte("a")); return err },
		"bulk":   func() error { _, err := e.NewBulk().Index(ctx, []byte("d"), []byte(`{}`)); return err },
	} {
		if err := op(); err == nil || !strings.Contains(err.Error(), "translog") {
			t.Errorf("%s after the translog failed: %v", name, err)
		}
	}
}
