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

// TestAddIndexesForeignVersions: docs added from another index have no
// version in this one (UnassignedSeqNo) — the source's _seq_no and
// _primary_term columns, and its in-place updates of them, are another
// index's — so a version this index gives a new write never names a
// copied doc: a client holding one cannot overwrite the doc with
// if_seq_no. An update conditional on "no version" (update-by-query's
// check) applies and gives the doc this index's version. All of it holds
// in the reader, the realtime get, after a reopen from the commit and
// after merges fold the added segments.
func TestAddIndexesForeignVersions(t *testing.T) {
	ctx := context.Background()
	src := mustOpenDurable(t, t.TempDir(), Options{DisableMerges: true, Parser: updatableMapping(t)})
	defer src.Close(ctx)
	const n = 40
	for i := range n {
		if _, err := src.Index(ctx, fmt.Appendf(nil, "doc-%d", i), fmt.Appendf(nil, `{"title":"t%d","price":%d}`, i, i)); err != nil {
			t.Fatal(err)
		}
		if i%10 == 9 {
			if _, err := src.Refresh(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	// An in-place update: the source's version of doc-3 is a doc-values
	// update layered over its segment's column, which the add brings over.
	if _, err := src.UpdateDocValues(ctx, []byte("doc-3"), []byte(`{"price":100}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := src.Commit(ctx, CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	srcVers := map[string]DocVersion{}
	for i := range n {
		id := fmt.Sprintf("doc-%d", i)
		d, ok, err := src.GetDocument(ctx, []byte(id), GetOptions{Realtime: true})
		if err != nil || !ok {
			t.Fatalf("source get %s: %v %v", id, ok, err)
		}
		srcVers[id] = d.Version
	}
	rd := src.Acquire()
	defer rd.Release()

	dir := t.TempDir()
	e := mustOpenDurable(t, dir, Options{DisableMerges: true, Parser: updatableMapping(t)})
	if _, err := e.AddIndexes(ctx, rd, AddIndexesOptions{Marker: "m"}); err != nil {
		t.Fatal(err)
	}
	// New writes here take seqNos the copied docs had in the source.
	collide := 0
	for i := range 5 {
		res, err := e.Index(ctx, fmt.Appendf(nil, "new-%d", i), []byte(`{"title":"new"}`))
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range srcVers {
			if v == (DocVersion{SeqNo: res.SeqNo, PrimaryTerm: res.Term}) {
				collide++
			}
		}
	}
	if collide == 0 {
		t.Fatal("no write here took a copied doc's source version: the test proves nothing")
	}
	unassigned := DocVersion{SeqNo: UnassignedSeqNo}
	// An update-by-query of doc-5: conditional on the version it read.
	res, err := e.UpdateDocValuesIf(ctx, []byte("doc-5"), []byte(`{"price":5}`), &unassigned)
	if err != nil {
		t.Fatalf("update of a copied doc conditional on no version: %v", err)
	}
	written := map[string]DocVersion{"doc-5": {SeqNo: res.SeqNo, PrimaryTerm: res.Term}}

	wantVersion := func(id string) DocVersion {
		if v, ok := written[id]; ok {
			return v
		}
		return unassigned
	}
	readerVersions := func(phase string, r *Reader) {
		t.Helper()
		for id := range srcVers {
			leaf, doc, found := r.LookupID([]byte(id))
			if !found {
				t.Fatalf("%s: %s not found", phase, id)
			}
			if got, want := r.DocVersion(leaf, doc), wantVersion(id); got != want {
				t.Fatalf("%s: reader: %s has version %+v, want %+v", phase, id, got, want)
			}
		}
	}
	check := func(phase string, e *Engine) {
		t.Helper()
		if _, err := e.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		r := e.Acquire()
		readerVersions(phase, r)
		r.Release()
		for id, sv := range srcVers {
			want := wantVersion(id)
			d, _, err := e.GetDocument(ctx, []byte(id), GetOptions{Realtime: true})
			if err != nil || d.Version != want {
				t.Fatalf("%s: get: %s has version %+v (%v), want %+v", phase, id, d.Version, err, want)
			}
			if want != unassigned {
				continue
			}
			// A client holding the source's version must not write.
			_, err = e.IndexIf(ctx, []byte(id), nil, []byte(`{"title":"lost"}`), &sv)
			var vc *VersionConflictError
			if !errors.As(err, &vc) || !vc.Found || vc.Current != unassigned {
				t.Fatalf("%s: write of %s if %+v: %v, want a conflict with no version", phase, id, sv, err)
			}
		}
	}
	check("added", e)
	// The marker reaches a replica with the segments (in the checkpoint).
	rep := mustOpenReplica(t, t.TempDir(), Options{Parser: updatableMapping(t)})
	checkpointTo(t, e, rep)
	rr := rep.Acquire()
	readerVersions("replica", rr)
	rr.Release()
	if err := rep.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(ctx); err != nil {
		t.Fatal(err)
	}
	p, err := mergepolicy.NewTieredMergePolicy(mergepolicy.Options{SegmentsPerTier: 2, FloorSegmentBytes: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	e = mustOpenDurable(t, dir, Options{Parser: updatableMapping(t), MergePolicy: p})
	defer e.Close(ctx)
	check("reopened", e)
	// Merges fold the added segments into segments of this index.
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := e.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		r := e.Acquire()
		foreign := 0
		for _, s := range r.segs {
			if s.info.ForeignVersions {
				foreign++
			}
		}
		r.Release()
		if foreign == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d added segments still unmerged", foreign)
		}
		time.Sleep(20 * time.Millisecond)
	}
	check("merged", e)
}
