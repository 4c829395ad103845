package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sluice-search/sluice/node/engine/document"
	"github.com/sluice-search/sluice/node/engine/index"
	"github.com/sluice-search/sluice/node/engine/mapping"
	"github.com/sluice-search/sluice/node/engine/mergepolicy"
	"github.com/sluice-search/sluice/node/engine/store"
)

func openTestEngine(t testing.TB, opts Options) *Engine {
	t.Helper()
	if opts.Directory == nil && opts.Path == "" {
		opts.Directory = store.NewRAMDirectory()
	}
	opts.Codec = testCodec(t)
	m, err := mapping.New(mapping.DynamicTrue, map[string]mapping.Field{"title": mapping.NewField(document.Text)})
	if err != nil {
		t.Fatal(err)
	}
	if opts.Parser, err = NewMappingParser(m); err != nil {
		t.Fatal(err)
	}
	e, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(context.Background()) })
	return e
}

func TestEngineIndexGetDelete(t *testing.T) {
	ctx := context.Background()
	e := openTestEngine(t, Options{RefreshInterval: -1})
	res, err := e.Index(ctx, []byte("1"), []byte(`{"title":"Hello world","n":3}`))
	if err != nil || !res.Created || res.SeqNo != 1 {
		t.Fatalf("index: %+v %v", res, err)
	}
	if _, found, _ := e.Get(ctx, []byte("1"), GetOptions{}); found {
		t.Fatal("non-realtime get sees an unrefreshed doc")
	}
	src, found, err := e.Get(ctx, []byte("1"), GetOptions{Realtime: true})
	if err != nil || !found || string(src) != `{"title":"Hello world","n":3}` {
		t.Fatalf("realtime get: %q %v %v", src, found, err)
	}
	res, _ = e.Index(ctx, []byte("1"), []byte(`{"title":"again"}`))
	if res.Created || res.SeqNo != 2 {
		t.Fatalf("re-index: %+v", res)
	}
	if _, err := e.Index(ctx, []byte("bad"), []byte(`{"title":`)); !errors.Is(err, mapping.ErrDocument) {
		t.Fatalf("malformed JSON: %v", err)
	}
	if _, err := e.Index(ctx, []byte("bad"), []byte(`{"n":"not a number"}`)); !errors.Is(err, mapping.ErrDocument) {
		t.Fatalf("type mismatch: %v", err)
	}
	del, err := e.Delete(ctx, []byte("1"))
	if err != nil || !del.Found {
		t.Fatalf("delete: %+v %v", del, err)
	}
	if _, found, _ := e.Get(ctx, []byte("1"), GetOptions{Realtime: true}); found {
		t.Fatal("deleted doc found")
	}
	st := e.Stats()
	if st.NumDocs != 0 || st.SeqNo != 3 || st.RefreshedSeqNo != 3 || st.Refreshes == 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestEngineWaitForGenerationWithRefreshOff(t *testing.T) {
	ctx := context.Background()
	e := openTestEngine(t, Options{RefreshInterval: -1, WaitRefreshDelay: 20 * time.Millisecond})
	res, _ := e.Index(ctx, []byte("1"), []byte(`{"title":"x"}`))
	start := time.Now()
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := e.WaitForGeneration(wctx, res.SeqNo); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 15*time.Millisecond {
		t.Fatalf("waiter served after %v, before the wait delay", took)
	}
	r := e.Acquire()
	defer r.Release()
	if r.NumDocs() != 1 {
		t.Fatal("doc not visible after WaitForGeneration")
	}
}

func TestEngineMergesAndCommit(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	open := func() *Engine {
		p, err := mergepolicy.NewTieredMergePolicy(mergepolicy.Options{SegmentsPerTier: 2, FloorSegmentBytes: 1 << 10})
		if err != nil {
			t.Fatal(err)
		}
		return openTestEngine(t, Options{Path: dir, RefreshInterval: -1, MergePolicy: p})
	}
	e := open()
	for round := range 12 {
		for i := range 30 {
			id := fmt.Appendf(nil, "%d", (round*7+i)%100)
			if _, err := e.Index(ctx, id, fmt.Appendf(nil, `{"title":"round %d doc %s","n":%d}`, round, id, round)); err != nil {
				t.Fatal(err)
			}
		}
		e.Delete(ctx, fmt.Appendf(nil, "%d", round))
		if _, err := e.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for e.Stats().Merges == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	e.Refresh(ctx)
	st := e.Stats()
	if st.Merges == 0 || st.MergesFailed != 0 {
		t.Fatalf("merges: %d done, %d failed", st.Merges, st.MergesFailed)
	}
	want := map[string]string{}
	r := e.Acquire()
	for i := range 100 {
		id := fmt.Appendf(nil, "%d", i)
		if _, _, ok := r.LookupID(id); ok {
			src, _, _ := e.Get(ctx, id, GetOptions{})
			want[string(id)] = string(src)
		}
	}
	r.Release()
	if _, err := e.Commit(ctx, CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(ctx); err != nil {
		t.Fatal(err)
	}
	e = open()
	if n := e.Stats().NumDocs; n != len(want) {
		t.Fatalf("reopened: %d docs, want %d", n, len(want))
	}
	for id, src := range want {
		got, ok, err := e.Get(ctx, []byte(id), GetOptions{})
		if err != nil || !ok || string(got) != src {
			t.Fatalf("reopened get %s: %q %v %v, want %q", id, got, ok, err, src)
		}
	}
}

func TestEngineRefreshInterval(t *testing.T) {
	ctx := context.Background()
	e := openTestEngine(t, Options{RefreshInterval: 10 * time.Millisecond})
	e.Index(ctx, []byte("1"), []byte(`{"title":"x"}`))
	deadline := time.Now().Add(5 * time.Second)
	for e.Stats().NumDocs != 1 {
		if time.Now().After(deadline) {
			t.Fatal("interval refresh never made the doc visible")
		}
		time.Sleep(5 * time.Millisecond)
	}
	e.SetRefreshInterval(-1)
	time.Sleep(30 * time.Millisecond) // let a refresh in progress finish
	e.Index(ctx, []byte("2"), []byte(`{"title":"y"}`))
	time.Sleep(60 * time.Millisecond)
	if n := e.Stats().NumDocs; n != 1 {
		t.Fatalf("refresh ran while disabled: %d docs", n)
	}
}

func TestCancelledRefreshDoesNotBreakTheWriter(t *testing.T) {
	e := openTestEngine(t, Options{RefreshInterval: -1})
	e.Index(context.Background(), []byte("1"), []byte(`{"title":"x"}`))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.Refresh(ctx); err != nil {
		t.Fatalf("refresh with a cancelled context: %v", err)
	}
	if _, err := e.Index(context.Background(), []byte("2"), []byte(`{"title":"y"}`)); err != nil {
		t.Fatalf("index after a cancelled refresh: %v", err)
	}
	if n := e.Stats().NumDocs; n != 1 {
		t.Fatalf("%d docs visible", n)
	}
}

func TestEngineCreate(t *testing.T) {
	ctx := context.Background()
	e := openTestEngine(t, Options{RefreshInterval: -1})
	if res, err := e.Create(ctx, []byte("1"), []byte(`{"title":"first"}`)); err != nil || !res.Created {
		t.Fatalf("create: %+v %v", res, err)
	}
	if _, err := e.Create(ctx, []byte("1"), []byte(`{"title":"second"}`)); !errors.Is(err, ErrDocumentExists) {
		t.Fatalf("second create: %v", err)
	}
	e.Refresh(ctx)
	if _, err := e.Create(ctx, []byte("1"), []byte(`{"title":"third"}`)); !errors.Is(err, ErrDocumentExists) {
		t.Fatalf("create after refresh: %v", err)
	}
	src, _, _ := e.Get(ctx, []byte("1"), GetOptions{Realtime: true})
	if st := e.Stats(); string(src) != `{"title":"first"}` || st.NumDocs != 1 {
		t.Fatalf("after refused creates: %q, %d docs", src, st.NumDocs)
	}
}

func TestEngineCloseWhileIndexing(t *testing.T) {
	ctx := context.Background()
	e := openTestEngine(t, Options{RefreshInterval: time.Millisecond, RAMBufferBytes: 1 << 20})
	var wg sync.WaitGroup
	for g := range 3 {
		wg.Go(func() {
			for i := 0; ; i++ {
				id := fmt.Appendf(nil, "%d-%d", g, i%50)
				var err error
				if i%7 == 0 {
					_, err = e.Delete(ctx, id)
				} else {
					_, err = e.Index(ctx, id, fmt.Appendf(nil, `{"title":"doc %d"}`, i))
				}
				if errors.Is(err, ErrClosed) {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	time.Sleep(50 * time.Millisecond)
	r := e.Acquire()
	if err := e.Close(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	// A reader acquired before Close still works.
	var sd index.StoredDoc
	for _, lf := range r.Leaves() {
		for d := range lf.Reader.MaxDoc() {
			if err := lf.Reader.StoredFields().Document(d, &sd); err != nil || len(sd.Source) == 0 {
				t.Fatalf("reading a held reader after close: %v", err)
			}
		}
	}
	r.Release()
	if _, err := e.Refresh(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("refresh after close: %v", err)
	}
}
