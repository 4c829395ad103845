package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-search/sluice/node/engine/cpubudget"
	"github.com/sluice-search/sluice/node/engine/document"
	"github.com/sluice-search/sluice/node/engine/dwpt"
	"github.com/sluice-search/sluice/node/engine/index"
	"github.com/sluice-search/sluice/node/engine/mergepolicy"
	"github.com/sluice-search/sluice/node/engine/mergescheduler"
	"github.com/sluice-search/sluice/node/engine/store"
)

type testIndex struct {
	w   *IndexWriter
	dir *store.RAMDirectory
}

func newTestWriter(t testing.TB, ramBytes int64) *testIndex {
	return newTestWriterOpts(t, WriterOptions{RAMBufferBytes: ramBytes})
}

func newTestWriterOpts(t testing.TB, opts WriterOptions) *testIndex {
	t.Helper()
	dir := store.NewRAMDirectory()
	opts.Directory, opts.Codec = dir, testCodec(t)
	w, err := NewIndexWriter(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return &testIndex{w: w, dir: dir}
}

// withMerges turns merging on with the real policy and scheduler; small
// floor and tier sizes so the tests' tiny segments merge often.
func withMerges(t testing.TB, opts WriterOptions) WriterOptions {
	t.Helper()
	p, err := mergepolicy.NewTieredMergePolicy(mergepolicy.Options{SegmentsPerTier: 2, FloorSegmentBytes: 1 << 10})
	if err != nil {
		t.Fatal(err)
	}
	sched, err := mergescheduler.New(mergescheduler.Options{Budget: opts.CPUBudget})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sched.Close(context.Background()) })
	opts.MergePolicy, opts.MergeScheduler, opts.Merger = p, sched, testMerger
	return opts
}

var words = strings.Fields("the quick brown fox jumps over the lazy dog while a cat sleeps in warm sun")

// makeDoc builds a doc whose _source is "id:version" and body a few words.
func makeDoc(doc *document.Document, id string, version int, nWords int) *document.Document {
	doc.Reset()
	doc.ID = append(doc.ID, id...)
	doc.Source = fmt.Appendf(doc.Source, "%s:%d", id, version)
	doc.Fields = append(doc.Fields, document.Field{Name: "body", Type: document.Text})
	f := &doc.Fields[0]
	for i := range nWords {
		f.Tokens = append(f.Tokens, document.Token{Term: []byte(words[(version+i)%len(words)]), Position: int32(i)})
	}
	f.Length = int32(nWords)
	return doc
}

// contents reads every live doc of r as id -> version.
func contents(t testing.TB, r *Reader) map[string]int {
	t.Helper()
	out := map[string]int{}
	var sd index.StoredDoc
	for _, lf := range r.Leaves() {
		sf := lf.Reader.StoredFields()
		for d := range lf.Reader.MaxDoc() {
			if lf.Live != nil && !lf.Live.Get(d) {
				continue
			}
			if err := sf.Document(d, &sd); err != nil {
				t.Fatal(err)
			}
			id, v, _ := strings.Cut(string(sd.Source), ":")
			if id != string(sd.ID) {
				t.Fatalf("stored id %q but source %q", sd.ID, sd.Source)
			}
			if prev, dup := out[id]; dup {
				t.Fatalf("id %q live twice (versions %d and %s)", id, prev, v)
			}
			var n int
			fmt.Sscan(v, &n)
			out[id] = n
		}
	}
	if len(out) != r.NumDocs() {
		t.Fatalf("NumDocs %d but %d live docs", r.NumDocs(), len(out))
	}
	return out
}

func mustRefresh(t testing.TB, w *IndexWriter, apply bool) RefreshResult {
	t.Helper()
	res, err := w.Refresh(context.Background(), apply)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestUpdatesAndDeletesInOneDWPT(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		ops  []string // "u id v" update, "a id v" add, "d id" delete, "r" refresh
		want map[string]int
	}{
		{"update twice", []string{"u a 1", "u a 2"}, map[string]int{"a": 2}},
		{"delete then add", []string{"u a 1", "d a", "u a 3"}, map[string]int{"a": 3}},
		{"add then delete", []string{"u a 1", "u b 1", "d a"}, map[string]int{"b": 1}},
		{"across refresh", []string{"u a 1", "r", "u a 2", "d b", "u b 5", "r", "d a"}, map[string]int{"b": 5}},
		{"delete missing", []string{"d x", "u x 1"}, map[string]int{"x": 1}},
		{"append then update", []string{"a a 1", "u a 2"}, map[string]int{"a": 2}},
		{"create existing fails", []string{"u a 1", "c a 2", "c b 3"}, map[string]int{"a": 1, "b": 3}},
		{"create after delete", []string{"u a 1", "r", "d a", "c a 2", "c a 3"}, map[string]int{"a": 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ti := newTestWriter(t, 16<<20)
			var doc document.Document
			for _, op := range tc.ops {
				f := strings.Fields(op)
				var err error
				switch f[0] {
				case "u":
					var v int
					fmt.Sscan(f[2], &v)
					_, _, err = ti.w.Update(ctx, []byte(f[1]), makeDoc(&doc, f[1], v, 3))
				case "a":
					var v int
					fmt.Sscan(f[2], &v)
					_, err = ti.w.Add(ctx, makeDoc(&doc, f[1], v, 3))
				case "c":
					var v int
					fmt.Sscan(f[2], &v)
					if _, err = ti.w.Create(ctx, makeDoc(&doc, f[1], v, 3)); errors.Is(err, ErrDocumentExists) {
						err = nil
					}
				case "d":
					_, _, err = ti.w.Delete(ctx, []byte(f[1]))
				case "r":
					mustRefresh(t, ti.w, true)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			mustRefresh(t, ti.w, true)
			r := ti.w.Acquire()
			defer r.Release()
			if got := contents(t, r); !mapsEqual(got, tc.want) {
				t.Fatalf("got %v want %v", got, tc.want)
			}
		})
	}
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestVisibilityAfterRefreshOnly(t *testing.T) {
	ctx := context.Background()
	ti := newTestWriter(t, 16<<20)
	var doc document.Document
	seq1, created, err := ti.w.Update(ctx, []byte("a"), makeDoc(&doc, "a", 1, 3))
	if err != nil || !created {
		t.Fatalf("first index: created=%v err=%v", created, err)
	}
	if n := ti.w.Acquire(); n.NumDocs() != 0 {
		t.Fatal("doc visible before refresh")
	} else {
		n.Release()
	}
	res := mustRefresh(t, ti.w, true)
	if !res.Changed || res.SeqNo != seq1 {
		t.Fatalf("refresh %+v, want changed at seq %d", res, seq1)
	}
	r1 := ti.w.Acquire()
	defer r1.Release()
	seq2, created, err := ti.w.Update(ctx, []byte("a"), makeDoc(&doc, "a", 2, 3))
	if err != nil || created || seq2 <= seq1 {
		t.Fatalf("second index: seq %d created=%v err=%v", seq2, created, err)
	}
	if got := contents(t, r1); got["a"] != 1 {
		t.Fatalf("old reader sees %v", got)
	}
	mustRefresh(t, ti.w, true)
	r2 := ti.w.Acquire()
	defer r2.Release()
	if got := contents(t, r2); got["a"] != 2 || len(got) != 1 {
		t.Fatalf("new reader sees %v", got)
	}
	if got := contents(t, r1); got["a"] != 1 {
		t.Fatalf("old reader changed: %v", got)
	}
	_, found, err := ti.w.Delete(ctx, []byte("a"))
	if err != nil || !found {
		t.Fatalf("delete: found=%v err=%v", found, err)
	}
	_, found, _ = ti.w.Delete(ctx, []byte("a"))
	if found {
		t.Fatal("second delete found the doc")
	}
}

func TestRefreshWithoutApplyingDeletes(t *testing.T) {
	ctx := context.Background()
	ti := newTestWriter(t, 16<<20)
	var doc document.Document
	ti.w.Update(ctx, []byte("a"), makeDoc(&doc, "a", 1, 3))
	ti.w.Update(ctx, []byte("b"), makeDoc(&doc, "b", 1, 3))
	mustRefresh(t, ti.w, true)
	ti.w.Delete(ctx, []byte("a"))
	ti.w.Update(ctx, []byte("b"), makeDoc(&doc, "b", 2, 3))
	mustRefresh(t, ti.w, false)
	r := ti.w.Acquire()
	// The old a is still live and b shows both versions.
	if r.NumDocs() != 3 {
		t.Fatalf("non-applying refresh shows %d docs, want 3", r.NumDocs())
	}
	r.Release()
	// The version map still knows a is deleted and b exists.
	if _, found, _ := ti.w.Delete(ctx, []byte("a")); found {
		t.Fatal("deleted doc found through a reader with unapplied deletes")
	}
	if _, created, _ := ti.w.Update(ctx, []byte("b"), makeDoc(&doc, "b", 3, 3)); created {
		t.Fatal("update of a live id reported created")
	}
	mustRefresh(t, ti.w, true)
	r = ti.w.Acquire()
	defer r.Release()
	if got := contents(t, r); !mapsEqual(got, map[string]int{"b": 3}) {
		t.Fatalf("after applying refresh: %v", got)
	}
}

func TestNoChangeRefreshKeepsReader(t *testing.T) {
	ctx := context.Background()
	ti := newTestWriter(t, 16<<20)
	var doc document.Document
	ti.w.Update(ctx, []byte("a"), makeDoc(&doc, "a", 1, 3))
	mustRefresh(t, ti.w, true)
	r1 := ti.w.Acquire()
	defer r1.Release()
	if res := mustRefresh(t, ti.w, true); res.Changed {
		t.Fatal("refresh with no changes reported a change")
	}
	// Deleting a missing id changes nothing either.
	seq, _, _ := ti.w.Delete(ctx, []byte("missing"))
	if res := mustRefresh(t, ti.w, true); res.Changed || res.SeqNo != seq {
		t.Fatalf("refresh after no-op delete: %+v", res)
	}
	r2 := ti.w.Acquire()
	defer r2.Release()
	if r1 != r2 || r2.SeqNo() != seq {
		t.Fatalf("no-change refresh replaced the reader (seq %d)", r2.SeqNo())
	}
}

func TestHeldReaderKeepsFiles(t *testing.T) {
	ctx := context.Background()
	ti := newTestWriter(t, 16<<20)
	var doc document.Document
	for i := range 20 {
		ti.w.Update(ctx, fmt.Appendf(nil, "%d", i), makeDoc(&doc, fmt.Sprint(i), 1, 5))
	}
	mustRefresh(t, ti.w, true)
	held := ti.w.Acquire()
	files := segFiles(held)
	// Replace every doc: the first segment becomes fully deleted and is
	// dropped from newer readers.
	for round := 2; round < 5; round++ {
		for i := range 20 {
			ti.w.Update(ctx, fmt.Appendf(nil, "%d", i), makeDoc(&doc, fmt.Sprint(i), round, 5))
		}
		mustRefresh(t, ti.w, true)
	}
	cur := ti.w.Acquire()
	if got := contents(t, cur); len(got) != 20 || got["7"] != 4 {
		t.Fatalf("current reader: %v", got)
	}
	cur.Release()
	for _, f := range files {
		if !ti.dir.FileExists(f) {
			t.Fatalf("file %s of a held reader deleted", f)
		}
	}
	if got := contents(t, held); len(got) != 20 || got["7"] != 1 {
		t.Fatalf("held reader changed: %v", got)
	}
	held.Release()
	ti.w.releasing.Wait() // the writer drops replaced readers in the background
	for _, f := range files {
		if ti.dir.FileExists(f) {
			t.Fatalf("file %s survives its last reader", f)
		}
	}
}

func segFiles(r *Reader) []string {
	var files []string
	for _, s := range r.segs {
		files = append(files, s.files...)
	}
	return files
}

func TestRAMBudgetFlushesLargestByOwner(t *testing.T) {
	ctx := context.Background()
	const budget = 1 << 20
	ti := newTestWriter(t, budget)
	var doc document.Document
	const n = 1500
	pad := strings.Repeat(" ", 2000) // 2 KB sources fill the buffer quickly
	for i := range n {
		makeDoc(&doc, fmt.Sprint(i), i, 10)
		doc.Source = append(doc.Source, pad...)
		if _, err := ti.w.Add(ctx, &doc); err != nil {
			t.Fatal(err)
		}
		if ram := ti.w.RAMBytesUsed(); ram > 3*budget {
			t.Fatalf("buffered RAM %d far above budget %d", ram, budget)
		}
	}
	if n := ti.w.stats.flushes.Load(); n == 0 {
		t.Fatal("no flush before any refresh despite the RAM budget")
	}
	if r := ti.w.Acquire(); r.NumDocs() != 0 {
		t.Fatal("flushed segments visible before refresh")
	} else {
		r.Release()
	}
	mustRefresh(t, ti.w, true)
	r := ti.w.Acquire()
	defer r.Release()
	if r.NumDocs() != n || len(r.Leaves()) < 2 {
		t.Fatalf("after refresh: %d docs in %d segments", r.NumDocs(), len(r.Leaves()))
	}
}

func TestWaitForGeneration(t *testing.T) {
	ctx := context.Background()
	ti := newTestWriter(t, 16<<20)
	var doc document.Document
	seq, _, _ := ti.w.Update(ctx, []byte("a"), makeDoc(&doc, "a", 1, 3))
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if err := ti.w.WaitForGeneration(short, seq); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("wait without refresh: %v", err)
	}
	done := make(chan error)
	go func() { done <- ti.w.WaitForGeneration(ctx, seq) }()
	time.Sleep(5 * time.Millisecond)
	mustRefresh(t, ti.w, true)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	r := ti.w.Acquire()
	defer r.Release()
	if r.NumDocs() != 1 {
		t.Fatal("waited-for op not visible")
	}
}

// opRecord is one operation of the concurrency test, for the model.
type opRecord struct {
	seq     int64
	id      string
	version int // -1: delete
	flag    bool
	kind    byte
}

// TestConcurrentModel runs goroutines updating and deleting a shared id
// space while another refreshes at random; every published reader must
// equal the model (ops ordered by sequence number) at its SeqNo, and every
// created/found flag must match the model's state before that op.
func TestConcurrentModel(t *testing.T) {
	t.Run("flushes", func(t *testing.T) { testConcurrentModel(t, WriterOptions{RAMBufferBytes: 2 << 20}) })
	t.Run("merges", func(t *testing.T) {
		ti := testConcurrentModel(t, withMerges(t, WriterOptions{RAMBufferBytes: 2 << 20}))
		if ti.w.stats.merges.Load() == 0 {
			t.Fatal("no merge ran")
		}
		if n := ti.w.stats.mergesFailed.Load(); n != 0 {
			t.Fatalf("%d merges failed", n)
		}
	})
	// Refresh flushes and merges share one CPU budget slot: merges hand it
	// to flushes and give it up before they take refreshMu, so nothing
	// deadlocks, and merges still run.
	t.Run("merges with a one-slot CPU budget", func(t *testing.T) {
		ti := testConcurrentModel(t, withMerges(t, WriterOptions{RAMBufferBytes: 2 << 20, CPUBudget: cpubudget.New(1)}))
		if ti.w.stats.merges.Load() == 0 {
			t.Fatal("no merge ran")
		}
		if n := ti.w.stats.flushBudgetWaitNanos.Load(); n == 0 {
			t.Log("no periodic refresh flush waited for the budget in this run")
		}
		// Merges may still run; once they end every slot is back.
		deadline := time.Now().Add(10 * time.Second)
		for {
			h, w := ti.w.opts.CPUBudget.InUse()
			if h == 0 && w == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("budget: %d held, %d waiting 10 s after the run", h, w)
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
}

func testConcurrentModel(t *testing.T, opts WriterOptions) *testIndex {
	ctx := context.Background()
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	ti := newTestWriterOpts(t, opts)
	const workers, opsPer, ids = 4, 1500, 300
	var mu sync.Mutex
	var ops []opRecord
	var wg sync.WaitGroup
	for g := range workers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(seed, uint64(g)))
			var doc document.Document
			for i := range opsPer {
				if i%25 == 0 { // spread the ops over many refreshes
					time.Sleep(time.Millisecond)
				}
				id := fmt.Sprint(r.IntN(ids))
				version := g*opsPer + i
				var rec opRecord
				var err error
				switch r.IntN(10) {
				case 0, 1:
					rec.seq, rec.flag, err = ti.w.Delete(ctx, []byte(id))
					rec.kind, version = 'd', -1
				case 2:
					rec.seq, err = ti.w.Create(ctx, makeDoc(&doc, id, version, 1+r.IntN(8)))
					rec.kind, rec.flag = 'c', true
					if errors.Is(err, ErrDocumentExists) {
						continue // no sequence number: nothing to order in the model
					}
				default:
					rec.seq, rec.flag, err = ti.w.Update(ctx, []byte(id), makeDoc(&doc, id, version, 1+r.IntN(8)))
					rec.kind = 'u'
				}
				if err != nil {
					t.Error(err)
					return
				}
				rec.id, rec.version = id, version
				mu.Lock()
				ops = append(ops, rec)
				mu.Unlock()
			}
		})
	}
	type snapshot struct {
		seq  int64
		docs map[string]int
	}
	var snaps []snapshot
	stop := make(chan struct{})
	refresher := make(chan struct{})
	go func() {
		defer close(refresher)
		r := rand.New(rand.NewPCG(seed, 99))
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Duration(r.IntN(500)) * time.Microsecond):
			}
			apply := r.IntN(4) != 0
			refresh := ti.w.Refresh
			if r.IntN(2) == 0 { // as the periodic refresher: flushes take CPU budget slots
				refresh = ti.w.scheduledRefresh
			}
			if _, err := refresh(ctx, apply); err != nil {
				t.Error(err)
				return
			}
			if apply {
				rd := ti.w.Acquire()
				snaps = append(snaps, snapshot{rd.SeqNo(), contents(t, rd)})
				rd.Release()
			}
		}
	}()
	wg.Wait()
	close(stop)
	<-refresher
	mustRefresh(t, ti.w, true)
	rd := ti.w.Acquire()
	snaps = append(snaps, snapshot{rd.SeqNo(), contents(t, rd)})
	rd.Release()

	slices.SortFunc(ops, func(a, b opRecord) int { return int(a.seq - b.seq) })
	state := map[string]int{}
	next := 0
	for i, op := range ops {
		if i > 0 && op.seq == ops[i-1].seq {
			t.Fatalf("sequence number %d used twice", op.seq)
		}
		for next < len(snaps) && snaps[next].seq < op.seq {
			if !mapsEqual(snaps[next].docs, state) {
				t.Fatalf("reader at seq %d: %d docs, model %d docs", snaps[next].seq, len(snaps[next].docs), len(state))
			}
			next++
		}
		_, live := state[op.id]
		switch op.kind {
		case 'u':
			if op.flag == live {
				t.Fatalf("seq %d update %s: created=%v but live before=%v", op.seq, op.id, op.flag, live)
			}
			state[op.id] = op.version
		case 'c':
			if live {
				t.Fatalf("seq %d create %s succeeded on a live id", op.seq, op.id)
			}
			state[op.id] = op.version
		case 'd':
			if op.flag != live {
				t.Fatalf("seq %d delete %s: found=%v but live before=%v", op.seq, op.id, op.flag, live)
			}
			delete(state, op.id)
		}
	}
	for ; next < len(snaps); next++ {
		if !mapsEqual(snaps[next].docs, state) {
			t.Fatalf("final reader at seq %d: %v, model %v", snaps[next].seq, snaps[next].docs, state)
		}
	}
	t.Logf("%d snapshots, %d refreshes (%v), %d merges", len(snaps), ti.w.stats.refreshes.Load(), time.Duration(ti.w.stats.refreshNanos.Load()), ti.w.stats.merges.Load())
	return ti
}

// slowCodec delays segment writes, like a slow disk.
type slowCodec struct {
	index.Codec
	delay time.Duration
}

func (c slowCodec) WriteSegment(ctx context.Context, dir store.Directory, info *index.SegmentInfo, src index.LeafReader, ioctx store.IOContext) error {
	time.Sleep(c.delay)
	return c.Codec.WriteSegment(ctx, dir, info, src, ioctx)
}

func TestStallWhenFlushingFallsBehind(t *testing.T) {
	ctx := context.Background()
	const budget = 1 << 20
	dir := store.NewRAMDirectory()
	// Goroutines that flush stop indexing, so flushing bytes outgrow twice
	// the budget only with enough goroutines: each newly marked DWPT holds
	// ~budget/(goroutines still indexing), and the harmonic sum passes 2
	// from 4 goroutines on; 12 make it certain.
	w, err := NewIndexWriter(WriterOptions{Directory: dir, Codec: slowCodec{testCodec(t), 200 * time.Millisecond}, RAMBufferBytes: budget})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	pad := strings.Repeat(" ", 4000)
	var wg sync.WaitGroup
	var maxRAM atomic.Int64
	const goroutines, perG = 12, 150
	for g := range goroutines {
		wg.Go(func() {
			var doc document.Document
			for i := range perG {
				makeDoc(&doc, fmt.Sprintf("%d-%d", g, i), i, 5)
				doc.Source = append(doc.Source, pad...)
				if _, err := w.Add(ctx, &doc); err != nil {
					t.Error(err)
					return
				}
				if ram := w.RAMBytesUsed(); ram > maxRAM.Load() {
					maxRAM.Store(ram)
				}
			}
		})
	}
	wg.Wait()
	if w.stats.stalls.Load() == 0 {
		t.Fatal("indexing never stalled although flushes were 200 ms each")
	}
	// Pending+flushing bytes stop new checkouts past twice the budget;
	// active DWPTs hold up to the budget, and each goroutine may hold one
	// fresh DWPT (its first blocks and stored-fields chunk) with a doc.
	fresh := dwpt.New(nil)
	var doc document.Document
	makeDoc(&doc, "x", 1, 5)
	doc.Source = append(doc.Source, pad...)
	fresh.AddDocument(&doc)
	bound := 3*budget + goroutines*fresh.RAMBytesUsed()
	t.Logf("max buffered RAM %d (bound %d), %d stalls", maxRAM.Load(), bound, w.stats.stalls.Load())
	if m := maxRAM.Load(); m > bound {
		t.Fatalf("buffered RAM reached %d, above %d", m, bound)
	}
	mustRefresh(t, w, true)
	r := w.Acquire()
	defer r.Release()
	if r.NumDocs() != goroutines*perG {
		t.Fatalf("%d docs visible, want %d", r.NumDocs(), goroutines*perG)
	}
}

// TestRAMBudgetFlushesEvenDWPTsTogether: when the budget is exceeded, DWPTs
// nearly as large as the largest are flushed with it, so DWPTs filled at
// the same rate stay even instead of staggering (which left one DWPT with
// most of the buffer, flushed by one goroutine, at every commit).
func TestRAMBudgetFlushesEvenDWPTsTogether(t *testing.T) {
	ctx := context.Background()
	const budget = 1 << 20
	for _, tc := range []struct {
		name     string
		small    float64 // size of the smaller DWPT relative to the larger
		wantBoth bool
	}{{"even", 0.9, true}, {"uneven", 0.4, false}} {
		t.Run(tc.name, func(t *testing.T) {
			ti := newTestWriter(t, budget)
			a, err := ti.w.checkout(ctx)
			if err != nil {
				t.Fatal(err)
			}
			b, err := ti.w.checkout(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var doc document.Document
			fill := func(pt *perThread, bytes int64) {
				for i := 0; pt.dwpt.RAMBytesUsed() < bytes; i++ {
					makeDoc(&doc, fmt.Sprintf("%p-%d", pt, i), i, 10)
					doc.Source = append(doc.Source, strings.Repeat(" ", 1000)...)
					if _, err := pt.dwpt.AddDocument(&doc); err != nil {
						t.Fatal(err)
					}
				}
			}
			fill(b, budget*7/10)
			fill(a, int64(float64(b.dwpt.RAMBytesUsed())*tc.small))
			ti.w.checkin(ctx, a, false) // within budget alone
			ti.w.checkin(ctx, b, false) // over: the largest is flushed here
			ti.w.flushControl.mu.Lock()
			taken := int(ti.w.stats.flushes.Load()) + len(ti.w.flushControl.pending)
			ti.w.flushControl.mu.Unlock()
			if want := map[bool]int{true: 2, false: 1}[tc.wantBoth]; taken != want {
				t.Fatalf("DWPTs of %d and %d bytes: %d flushed or pending, want %d", a.ram, b.ram, taken, want)
			}
		})
	}
}

// TestCheckoutAffinity: a worker with an affinity gets back the DWPT it
// used last even when another was checked in after it; without one, the
// last DWPT checked in is handed out (LIFO), and a worker whose DWPT is
// taken gets another.
func TestCheckoutAffinity(t *testing.T) {
	ti := newTestWriter(t, 64<<20)
	plain := context.Background()
	ctxA, ctxB := WithAffinity(plain), WithAffinity(plain)
	checkout := func(ctx context.Context) *perThread {
		t.Helper()
		pt, err := ti.w.checkout(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return pt
	}
	a, b := checkout(ctxA), checkout(ctxB)
	if a == b {
		t.Fatal("one DWPT checked out twice")
	}
	for range 3 {
		ti.w.checkin(plain, a, false)
		ti.w.checkin(plain, b, false) // b is the last checked in
		if got := checkout(ctxA); got != a {
			t.Fatal("worker A got B's DWPT")
		}
		if got := checkout(ctxB); got != b {
			t.Fatal("worker B got A's DWPT")
		}
	}
	ti.w.checkin(plain, a, false)
	ti.w.checkin(plain, b, false)
	if got := checkout(plain); got != b {
		t.Fatal("without affinity: not the last DWPT checked in")
	}
	// A's DWPT is free, B's is out: a new worker takes A's (the only free one).
	if got := checkout(WithAffinity(plain)); got != a {
		t.Fatal("a new worker did not get the free DWPT")
	}
	ti.w.checkin(plain, a, false)
	ti.w.checkin(plain, b, false)
}
