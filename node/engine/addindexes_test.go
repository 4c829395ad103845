package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-search/sluice/cluster/routing"
	"github.com/sluice-search/sluice/node/engine/index"
	"github.com/sluice-search/sluice/node/engine/mergepolicy"
	"github.com/sluice-search/sluice/node/engine/search"
)

// addSource builds a committed source index over several segments: docs
// with and without custom routing, some deleted and some updated, and
// returns what is live (id → _source) and each live doc's routing.
func addSource(t *testing.T, dir string) (*Engine, map[string]string, map[string]string) {
	t.Helper()
	ctx := context.Background()
	src := mustOpenDurable(t, dir, Options{DisableMerges: true})
	live, routings := map[string]string{}, map[string]string{}
	for i := range 300 {
		id := fmt.Sprintf("doc-%d", i)
		rt := ""
		if i%3 != 0 {
			rt = fmt.Sprintf("tenant-%d", i%7)
		}
		body := fmt.Sprintf(`{"title":"word%d common"}`, i%11)
		if _, err := src.IndexRouted(ctx, []byte(id), []byte(rt), []byte(body)); err != nil {
			t.Fatal(err)
		}
		live[id], routings[id] = body, rt
		if i%60 == 59 { // several segments
			if _, err := src.Refresh(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := 0; i < 300; i += 13 {
		id := fmt.Sprintf("doc-%d", i)
		if _, err := src.Delete(ctx, []byte(id)); err != nil {
			t.Fatal(err)
		}
		delete(live, id)
		delete(routings, id)
	}
	for i := 5; i < 300; i += 29 {
		id := fmt.Sprintf("doc-%d", i)
		if _, ok := live[id]; !ok {
			continue
		}
		body := fmt.Sprintf(`{"title":"updated%d common"}`, i)
		if _, err := src.IndexRouted(ctx, []byte(id), []byte(routings[id]), []byte(body)); err != nil {
			t.Fatal(err)
		}
		live[id] = body
	}
	if _, err := src.Commit(ctx, CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	return src, live, routings
}

// TestAddIndexes: the committed segments of a source shard are added into
// k destination shards, each keeping the docs that route to it: every live
// source doc lands in exactly one destination with its _source and
// routing, searches and gets find them, updates and deletes behave, a
// second add with the same marker adds nothing (also after a restart), and
// the destination reopens with the same docs.
func TestAddIndexes(t *testing.T) {
	ctx := context.Background()
	srcDir := t.TempDir()
	src, live, routings := addSource(t, srcDir)
	defer src.Close(ctx)
	for _, k := range []int{1, 2, 3} {
		t.Run(fmt.Sprintf("k=%d", k), func(t *testing.T) {
			dst := routing.Params{Shards: k, RoutingShards: 6}
			rd := src.Acquire()
			defer rd.Release()
			seen := map[string]int{}
			for d := range k {
				dir := t.TempDir()
				e := mustOpenDurable(t, dir, Options{DisableMerges: true})
				want := map[string]string{}
				for id, body := range live {
					key := id
					if routings[id] != "" {
						key = routings[id]
					}
					if routing.Shard(key, dst) == d {
						want[id] = body
					}
				}
				var keep func(leaf, doc int) bool
				if k > 1 {
					keep = routesTo(t, rd, dst, d)
				}
				marker := fmt.Sprintf("task/0/%d", d)
				res, err := e.AddIndexes(ctx, rd, AddIndexesOptions{Marker: marker, Keep: keep})
				if err != nil {
					t.Fatal(err)
				}
				res0 := res
				if res.Docs != len(want) || res.AlreadyAdded || res.Linked == 0 {
					t.Fatalf("shard %d: add %+v, want %d docs linked", d, res, len(want))
				}
				got := liveDocs(t, e)
				if !maps.Equal(got, want) {
					t.Fatalf("shard %d: %d docs, want %d", d, len(got), len(want))
				}
				for id := range got {
					seen[id]++
					sd, found, err := e.GetDocument(ctx, []byte(id), GetOptions{Realtime: true})
					if err != nil || !found || string(sd.Routing) != routings[id] || string(sd.Source) != want[id] {
						t.Fatalf("shard %d: get %s: found=%v routing %q err %v", d, id, found, sd.Routing, err)
					}
				}
				checkCommon(t, e, len(want))

				// Again, same marker: nothing added.
				if res, err := e.AddIndexes(ctx, rd, AddIndexesOptions{Marker: marker, Keep: keep}); err != nil || !res.AlreadyAdded {
					t.Fatalf("second add: %+v %v", res, err)
				}
				// Writes on added docs.
				var upd, del string
				for id := range want {
					if upd == "" {
						upd = id
					} else if del == "" {
						del = id
						break
					}
				}
				if upd != "" {
					r, err := e.IndexRouted(ctx, []byte(upd), []byte(routings[upd]), []byte(`{"title":"changed"}`))
					if err != nil || r.Created {
						t.Fatalf("update %s: %+v %v", upd, r, err)
					}
					want[upd] = `{"title":"changed"}`
				}
				if del != "" {
					r, err := e.Delete(ctx, []byte(del))
					if err != nil || !r.Found {
						t.Fatalf("delete %s: %+v %v", del, r, err)
					}
					delete(want, del)
				}
				if got := liveDocs(t, e); !maps.Equal(got, want) {
					t.Fatalf("shard %d after writes: %d docs, want %d", d, len(got), len(want))
				}
				// Restart: the commit has the segments and the marker, the
				// translog the writes.
				if err := e.Close(ctx); err != nil {
					t.Fatal(err)
				}
				e = mustOpenDurable(t, dir, Options{DisableMerges: true})
				if got := liveDocs(t, e); !maps.Equal(got, want) {
					t.Fatalf("shard %d reopened: %d docs, want %d", d, len(got), len(want))
				}
				if res, err := e.AddIndexes(ctx, rd, AddIndexesOptions{Marker: marker, Keep: keep}); err != nil || !res.AlreadyAdded || res.Docs != res0.Docs {
					t.Fatalf("add after restart: %+v %v, want the %d docs added", res, err, res0.Docs)
				}
				if got := liveDocs(t, e); !maps.Equal(got, want) {
					t.Fatalf("shard %d: add after restart changed docs", d)
				}
				if err := e.Close(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if len(seen) != len(live) {
				t.Fatalf("%d ids over all destination shards, want %d", len(seen), len(live))
			}
			for id, n := range seen {
				if n != 1 {
					t.Fatalf("%s in %d destination shards", id, n)
				}
			}
		})
	}
}

// checkCommon: a term search over the destination counts its live docs
// (every doc has "common" in its title).
func checkCommon(t *testing.T, e *Engine, want int) {
	t.Helper()
	r := e.Acquire()
	defer r.Release()
	n, err := search.NewSearcher(r.Leaves()).Count(context.Background(), &search.TermQuery{Field: "title", Term: []byte("common")})
	if err != nil || n != int64(want) {
		t.Fatalf("search title:common: %d hits, want %d (err %v)", n, want, err)
	}
}

// TestAddIndexesNotCommitted: an add the destination never committed is
// gone after a restart — files and marker — so doing it again adds once.
func TestAddIndexesNotCommitted(t *testing.T) {
	ctx := context.Background()
	src, live, _ := addSource(t, t.TempDir())
	defer src.Close(ctx)
	rd := src.Acquire()
	defer rd.Release()
	dir := t.TempDir()
	e := mustOpenDurable(t, dir, Options{DisableMerges: true})
	if _, err := e.Writer().AddIndexes(ctx, rd, AddIndexesOptions{Marker: "m"}); err != nil {
		t.Fatal(err)
	}
	if n := e.Stats().NumDocs; n != len(live) {
		t.Fatalf("%d docs visible, want %d", n, len(live))
	}
	if err := e.Close(ctx); err != nil {
		t.Fatal(err)
	}
	e = mustOpenDurable(t, dir, Options{DisableMerges: true})
	defer func() { e.Close(ctx) }()
	if n := e.Stats().NumDocs; n != 0 || hasMarker(e, "m") {
		t.Fatalf("after restart without commit: %d docs, marker %v", n, hasMarker(e, "m"))
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "_*")); len(files) != 0 {
		t.Fatalf("files of the uncommitted add left: %v", files)
	}
	res, err := e.AddIndexes(ctx, rd, AddIndexesOptions{Marker: "m"})
	if err != nil || res.Docs != len(live) {
		t.Fatalf("redo: %+v %v", res, err)
	}
	if got := liveDocs(t, e); !maps.Equal(got, live) {
		t.Fatalf("redo: %d docs, want %d", len(got), len(live))
	}
}

// TestAddIndexesCorruptSource: a damaged source file fails the add with
// index.ErrCorrupt, and nothing of it stays in the destination.
func TestAddIndexesCorruptSource(t *testing.T) {
	ctx := context.Background()
	srcDir := t.TempDir()
	src, _, _ := addSource(t, srcDir)
	defer src.Close(ctx)
	rd := src.Acquire()
	defer rd.Release()
	// Damage the stored fields of the last segment on disk (the mapped
	// reader sees the same pages).
	names, _ := filepath.Glob(filepath.Join(srcDir, "_*.fdt"))
	if len(names) == 0 {
		t.Fatal("no stored fields file in the source")
	}
	flipByte(t, names[len(names)-1], 40)

	dir := t.TempDir()
	e := mustOpenDurable(t, dir, Options{DisableMerges: true})
	defer e.Close(ctx)
	_, err := e.AddIndexes(ctx, rd, AddIndexesOptions{Marker: "m"})
	if !errors.Is(err, index.ErrCorrupt) {
		t.Fatalf("add of a corrupt source: %v, want ErrCorrupt", err)
	}
	if n := e.Stats().NumDocs; n != 0 || hasMarker(e, "m") {
		t.Fatalf("after a failed add: %d docs, marker %v", n, hasMarker(e, "m"))
	}
	ents, _ := os.ReadDir(dir)
	for _, ent := range ents {
		if strings.HasPrefix(ent.Name(), "_") {
			t.Fatalf("file %s left by the failed add", ent.Name())
		}
	}
}

// TestAddIndexesSplitDeletesMerged: a split leaves each destination shard
// about (k-1)/k of the added docs deleted; the merge policy's deletes rule
// (DeletesPctAllowed) picks those segments up on its own and reclaims them.
func TestAddIndexesSplitDeletesMerged(t *testing.T) {
	ctx := context.Background()
	src, live, _ := addSource(t, t.TempDir())
	defer src.Close(ctx)
	rd := src.Acquire()
	defer rd.Release()
	e := mustOpenDurable(t, t.TempDir(), Options{})
	defer e.Close(ctx)
	dst := routing.Params{Shards: 2, RoutingShards: 6}
	keep := routesTo(t, rd, dst, 0)
	res, err := e.AddIndexes(ctx, rd, AddIndexesOptions{Marker: "m", Keep: keep})
	if err != nil {
		t.Fatal(err)
	}
	if res.Dropped == 0 || res.Docs+res.Dropped != len(live) {
		t.Fatalf("split: %+v of %d live docs", res, len(live))
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := e.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		st := e.Stats()
		if st.DeletedDocs*100 <= st.MaxDoc*int(mergepolicy.DefaultDeletesPctAllowed) {
			t.Logf("after %d merges: %d deleted of %d docs in %d segments", st.Merges, st.DeletedDocs, st.MaxDoc, st.Segments)
			if st.NumDocs != res.Docs {
				t.Fatalf("%d live docs after merging, want %d", st.NumDocs, res.Docs)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("deletes not reclaimed: %d deleted of %d docs, %d merges", st.DeletedDocs, st.MaxDoc, st.Merges)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func hasMarker(e *Engine, m string) bool {
	_, ok := e.Writer().AddMarker(m)
	return ok
}

// routesTo is a Keep for destination shard d of dst: the docs of rd whose
// stored routing (else _id) routes there.
func routesTo(t testing.TB, rd *Reader, dst routing.Params, d int) func(leaf, doc int) bool {
	return func(leaf, doc int) bool {
		var sd index.StoredDoc
		if err := rd.Document(leaf, doc, &sd); err != nil {
			t.Error(err)
			return false
		}
		key := sd.ID
		if len(sd.Routing) > 0 {
			key = sd.Routing
		}
		return routing.Shard(string(key), dst) == d
	}
}
