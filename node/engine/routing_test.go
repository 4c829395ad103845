package engine

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sluice-search/sluice/node/engine/mergepolicy"
)

// TestRoutingStored: a document's custom routing is stored with it and
// comes back from Get through every place a document lives — the
// in-memory segment flushed by a refresh, the translog replayed after a
// close without commit, a committed segment, a merged one — and a
// re-index without routing drops it.
func TestRoutingStored(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	p, err := mergepolicy.NewTieredMergePolicy(mergepolicy.Options{SegmentsPerTier: 2, FloorSegmentBytes: 1 << 10})
	if err != nil {
		t.Fatal(err)
	}
	open := func() *Engine { return mustOpenDurable(t, dir, Options{MergePolicy: p}) }
	e := open()
	defer func() { e.Close(ctx) }()

	// want is the routing every doc must report ("" = routed by _id).
	want := map[string]string{}
	b := e.NewBulk()
	for i := range 40 {
		id := fmt.Appendf(nil, "doc-%d", i)
		src := fmt.Appendf(nil, `{"title":"doc %d"}`, i)
		var routing []byte
		if i%3 != 0 {
			routing = fmt.Appendf(nil, "tenant-%d", i%5)
		}
		var err error
		switch {
		case i%4 == 0:
			_, err = b.CreateRouted(ctx, id, routing, src)
		case i%4 == 1:
			_, err = e.IndexRouted(ctx, id, routing, src)
		default:
			_, err = b.IndexRouted(ctx, id, routing, src)
		}
		if err != nil {
			t.Fatal(err)
		}
		want[string(id)] = string(routing)
	}
	if err := b.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	// Re-indexed without routing: the new version has none.
	if _, err := e.Index(ctx, []byte("doc-1"), []byte(`{"title":"again"}`)); err != nil {
		t.Fatal(err)
	}
	want["doc-1"] = ""

	check := func(stage string) {
		t.Helper()
		for id, routing := range want {
			sd, found, err := e.GetDocument(ctx, []byte(id), GetOptions{Realtime: true})
			if err != nil || !found || string(sd.ID) != id || string(sd.Routing) != routing {
				t.Fatalf("%s: get %s: found=%v routing %q (id %q), want %q; err %v", stage, id, found, sd.Routing, sd.ID, routing, err)
			}
		}
	}
	check("refreshed")

	// Closed without a commit: the translog brings the routing back.
	if err := e.Close(ctx); err != nil {
		t.Fatal(err)
	}
	e = open()
	check("replayed")

	// Many small committed segments, merged.
	for round := range 8 {
		for i := range 10 {
			id := fmt.Sprintf("doc-%d", (round*13+i)%40)
			routing := fmt.Sprintf("r-%d-%d", round, i)
			if _, err := e.IndexRouted(ctx, []byte(id), []byte(routing), fmt.Appendf(nil, `{"title":"round %d"}`, round)); err != nil {
				t.Fatal(err)
			}
			want[id] = routing
		}
		if _, err := e.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for e.Stats().Merges == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if st := e.Stats(); st.Merges == 0 || st.MergesFailed != 0 {
		t.Fatalf("merges: %d done, %d failed", st.Merges, st.MergesFailed)
	}
	if _, err := e.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	check("merged")
	if _, err := e.Commit(ctx, CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(ctx); err != nil {
		t.Fatal(err)
	}
	e = open()
	check("committed")
}
