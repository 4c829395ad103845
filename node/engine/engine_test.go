package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/sluice-search/sluice/node/engine/analysis"
	"github.com/sluice-search/sluice/node/engine/document"
	"github.com/sluice-search/sluice/node/engine/store"
)

// jsonParser maps every top-level string of a JSON object to a text field
// analysed by the standard analyzer, and numbers to long fields: enough
// mapping for the engine's tests.
type jsonParser struct{}

func (jsonParser) Parse(id, source []byte, doc *document.Document) error {
	var m map[string]any
	if err := json.Unmarshal(source, &m); err != nil {
		return err
	}
	doc.ID = append(doc.ID, id...)
	doc.Source = append(doc.Source, source...)
	for k, v := range m {
		switch v := v.(type) {
		case string:
			var b analysis.Buffer
			analysis.NewStandard().Analyze(&b, []byte(v), 0)
			doc.Fields = append(doc.Fields, document.Field{Name: k, Type: document.Text, Tokens: b.Tokens, Length: int32(len(b.Tokens))})
		case float64:
			doc.Fields = append(doc.Fields, document.Field{Name: k, Type: document.Long, Numerics: []int64{int64(v)},
				Tokens: []document.Token{{Term: document.EncodeSortable(nil, int64(v))}}})
		default:
			return fmt.Errorf("field %q: unsupported value %T", k, v)
		}
	}
	return nil
}

func openTestEngine(t testing.TB, opts Options) *Engine {
	t.Helper()
	if opts.Directory == nil {
		opts.Directory = store.NewRAMDirectory()
	}
	opts.Codec = testCodec(t)
	opts.Parser = jsonParser{}
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
	if _, err := e.Index(ctx, []byte("bad"), []byte(`{"title":`)); err == nil {
		t.Fatal("malformed JSON accepted")
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
