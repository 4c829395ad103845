package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/sluice-search/sluice/node/engine/document"
	"github.com/sluice-search/sluice/node/engine/index"
	"github.com/sluice-search/sluice/node/engine/mapping"
	"github.com/sluice-search/sluice/node/engine/mergepolicy"
	"github.com/sluice-search/sluice/node/engine/search"
	"github.com/sluice-search/sluice/node/engine/translog"
)

// updatableMapping has doc-value-only numeric fields (updatable in place)
// and an indexed one (not updatable).
func updatableMapping(t testing.TB) *MappingParser {
	t.Helper()
	dvOnly := func(tp document.FieldType) mapping.Field {
		f := mapping.NewField(tp)
		f.Index = false
		return f
	}
	return strictParser(t, map[string]mapping.Field{
		"title": mapping.NewField(document.Text),
		"price": dvOnly(document.Long),
		"score": dvOnly(document.Double),
		"tag":   dvOnly(document.Keyword),
		"n":     mapping.NewField(document.Long),
	})
}

// dvDoc is the model of one live document: its _source and the values its
// doc-value fields must read (absent: no value).
type dvDoc struct {
	source string
	price  *int64
	score  *float64
	tag    *string
	ver    DocVersion // of the latest write: _seq_no, _primary_term
}

func (d dvDoc) String() string {
	s := fmt.Sprintf("{%s v%d/%d", d.source, d.ver.SeqNo, d.ver.PrimaryTerm)
	if d.price != nil {
		s += fmt.Sprintf(" price=%d", *d.price)
	}
	if d.score != nil {
		s += fmt.Sprintf(" score=%g", *d.score)
	}
	if d.tag != nil {
		s += fmt.Sprintf(" tag=%s", *d.tag)
	}
	return s + "}"
}

// readerDVDocs reads every live doc's source and doc values from r.
func readerDVDocs(t testing.TB, r *Reader) map[string]dvDoc {
	t.Helper()
	got := map[string]dvDoc{}
	for leaf, lf := range r.Leaves() {
		price, score := lf.Reader.NumericDocValues("price"), lf.Reader.NumericDocValues("score")
		tag := lf.Reader.SortedDocValues("tag")
		for doc := range lf.Reader.MaxDoc() {
			if lf.Live != nil && !lf.Live.Get(doc) {
				continue
			}
			var sd index.StoredDoc
			if err := r.Document(leaf, doc, &sd); err != nil {
				t.Fatal(err)
			}
			d := dvDoc{source: string(sd.Source), ver: r.DocVersion(leaf, doc)}
			if price != nil {
				if v, ok := price.Get(doc); ok {
					d.price = &v
				}
			}
			if score != nil {
				if v, ok := score.Get(doc); ok {
					f := document.Float64FromSortable(v)
					d.score = &f
				}
			}
			if tag != nil {
				if o := tag.Ord(doc); o >= 0 {
					v := string(tag.LookupOrd(o))
					d.tag = &v
				}
			}
			if _, dup := got[string(sd.ID)]; dup {
				t.Fatalf("id %s live twice", sd.ID)
			}
			got[string(sd.ID)] = d
		}
	}
	return got
}

func sameDVDocs(a, b map[string]dvDoc) bool {
	return maps.EqualFunc(a, b, func(x, y dvDoc) bool {
		eq := func(p, q *int64) bool { return p == nil && q == nil || p != nil && q != nil && *p == *q }
		eqf := func(p, q *float64) bool { return p == nil && q == nil || p != nil && q != nil && *p == *q }
		eqs := func(p, q *string) bool { return p == nil && q == nil || p != nil && q != nil && *p == *q }
		return x.source == y.source && eq(x.price, y.price) && eqf(x.score, y.score) && eqs(x.tag, y.tag) && x.ver == y.ver
	})
}

// checkSortAndRange: sorting by the updated field and a range over it
// agree with the model.
func checkSortAndRange(t testing.TB, r *Reader, model map[string]dvDoc, lo, hi int64) {
	t.Helper()
	ctx := context.Background()
	td, err := r.Searcher().Search(ctx, &search.MatchAllQuery{}, search.Request{Size: 1000,
		Sort: []search.SortField{{Type: search.SortByNumeric, Field: "price"}, {Type: search.SortByDoc}}})
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	for _, h := range td.Hits {
		if !h.SortValues[0].Missing {
			got = append(got, h.SortValues[0].Int)
		}
	}
	var want []int64
	inRange := 0
	for _, d := range model {
		if d.price != nil {
			want = append(want, *d.price)
			if *d.price >= lo && *d.price <= hi {
				inRange++
			}
		}
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("sorted by price: got %v, want %v", got, want)
	}
	td, err = r.Searcher().Search(ctx, &search.NumericDocValuesRangeQuery{Field: "price", Lower: lo, Upper: hi}, search.Request{Size: 0})
	if err != nil {
		t.Fatal(err)
	}
	if td.TotalHits != int64(inRange) {
		t.Fatalf("price in [%d, %d]: %d hits, want %d", lo, hi, td.TotalHits, inRange)
	}
	checkKeywordSortAndTerm(t, r, model, fmt.Sprintf("t%d", lo%8))
}

// checkKeywordSortAndTerm: sorting by the updatable keyword, a term
// filter and a range over it agree with the model.
func checkKeywordSortAndTerm(t testing.TB, r *Reader, model map[string]dvDoc, term string) {
	t.Helper()
	ctx := context.Background()
	td, err := r.Searcher().Search(ctx, &search.MatchAllQuery{}, search.Request{Size: 1000,
		Sort: []search.SortField{{Type: search.SortByKeyword, Field: "tag"}, {Type: search.SortByDoc}}})
	if err != nil {
		t.Fatal(err)
	}
	var got, want []string
	for _, h := range td.Hits {
		if !h.SortValues[0].Missing {
			got = append(got, string(h.SortValues[0].Bytes))
		}
	}
	matching, below := 0, 0
	for _, d := range model {
		if d.tag != nil {
			want = append(want, *d.tag)
			if *d.tag == term {
				matching++
			}
			if *d.tag < term {
				below++
			}
		}
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("sorted by tag: got %q, want %q", got, want)
	}
	for _, c := range []struct {
		q    search.Query
		want int
	}{
		{&search.SortedDocValuesSetQuery{Field: "tag", Terms: [][]byte{[]byte(term)}}, matching},
		{&search.SortedDocValuesRangeQuery{Field: "tag", Upper: []byte(term)}, below},
	} {
		td, err := r.Searcher().Search(ctx, c.q, search.Request{Size: 0})
		if err != nil {
			t.Fatal(err)
		}
		if td.TotalHits != int64(c.want) {
			t.Fatalf("%v: %d hits, want %d", c.q, td.TotalHits, c.want)
		}
	}
}

// TestDocValuesUpdatesModel: random histories of index, delete, in-place
// update, refresh, commit, merges (a policy that merges every other
// segment) and reopen after a crash (close without commit: the translog
// replays) against an in-memory model. Every refresh's reader agrees with
// the model — sources, doc values, sort and range over the updated
// field — and a reader opened earlier still shows its model.
func TestDocValuesUpdatesModel(t *testing.T) {
	ctx := context.Background()
	seeds := uint64(25)
	if testing.Short() {
		seeds = 5
	}
	var merges, reopened, writeOuts int64
	for seed := range seeds {
		rng := rand.New(rand.NewPCG(seed, 18))
		dir := t.TempDir()
		p, err := mergepolicy.NewTieredMergePolicy(mergepolicy.Options{SegmentsPerTier: 2, FloorSegmentBytes: 1 << 10})
		if err != nil {
			t.Fatal(err)
		}
		opts := Options{Parser: updatableMapping(t), MergePolicy: p}
		if seed%2 == 1 {
			// Every refresh writes the updates out (served from the
			// generation file, later ones layered over it on the heap).
			opts.dvShare = 1
		}
		e := mustOpenDurable(t, dir, opts)
		model := map[string]dvDoc{}
		type pinned struct {
			r     *Reader
			model map[string]dvDoc
		}
		var old []pinned
		var history []string
		fail := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("seed %d: %s\nhistory: %v", seed, fmt.Sprintf(format, args...), history)
		}
		check := func() {
			t.Helper()
			if _, err := e.Refresh(ctx); err != nil {
				fail("refresh: %v", err)
			}
			r := e.Acquire()
			if got := readerDVDocs(t, r); !sameDVDocs(got, model) {
				r.Release()
				fail("reader\n got %v\nwant %v", got, model)
			}
			lo := rng.Int64N(100)
			checkSortAndRange(t, r, model, lo, lo+rng.Int64N(100))
			if rng.IntN(4) == 0 {
				old = append(old, pinned{r, maps.Clone(model)})
			} else {
				r.Release()
			}
		}
		// cond makes a third of the writes conditional, on the model's
		// version of id (they must apply) or on another (they must be
		// refused with the model's current version, changing nothing).
		cond := func(id string) (c *DocVersion, refuse bool) {
			d, ok := model[id]
			switch rng.IntN(6) {
			case 0:
				return &d.ver, !ok
			case 1:
				return &DocVersion{SeqNo: d.ver.SeqNo - 1, PrimaryTerm: d.ver.PrimaryTerm}, true
			}
			return nil, false
		}
		conflict := func(what, id string, c *DocVersion, refuse bool, err error) bool {
			t.Helper()
			var vc *VersionConflictError
			switch {
			case !refuse:
				return false
			case !errors.As(err, &vc):
				fail("%s %s if %v: want a version conflict, got %v", what, id, *c, err)
			case vc.Found != (model[id].source != "") || vc.Found && vc.Current != model[id].ver:
				fail("%s %s if %v: conflict reports %+v, model has %v", what, id, *c, vc, model[id])
			}
			history = append(history, fmt.Sprintf("%s %s refused", what, id))
			return true
		}
		for range 300 {
			id := fmt.Sprintf("id%d", rng.IntN(12))
			if rng.IntN(10) == 0 { // a realtime get reports the version
				got, found, err := e.GetDocument(ctx, []byte(id), GetOptions{Realtime: true})
				if want, ok := model[id]; err != nil || found != ok || found && got.Version != want.ver {
					fail("get %s: %+v found=%v err=%v, model %v", id, got.Version, found, err, want)
				}
			}
			switch op := rng.IntN(20); {
			case op < 5:
				price := rng.Int64N(200)
				d := dvDoc{source: fmt.Sprintf(`{"title":"t %d","n":%d,"price":%d}`, rng.IntN(5), rng.IntN(5), price), price: &price}
				if rng.IntN(2) == 0 { // tags the index has as terms, or not
					tag := fmt.Sprintf("t%d", rng.IntN(4))
					d.tag = &tag
					d.source = fmt.Sprintf(`{"title":"t %d","n":%d,"price":%d,"tag":%q}`, rng.IntN(5), rng.IntN(5), price, tag)
				}
				if rng.IntN(4) == 0 { // no price: an update gives it one
					d = dvDoc{source: fmt.Sprintf(`{"title":"no price %d"}`, rng.IntN(5))}
				}
				c, refuse := cond(id)
				res, err := e.IndexIf(ctx, []byte(id), nil, []byte(d.source), c)
				if conflict("index", id, c, refuse, err) {
					break
				}
				if err != nil {
					fail("index: %v", err)
				}
				d.ver = DocVersion{SeqNo: res.SeqNo, PrimaryTerm: res.Term}
				model[id] = d
				history = append(history, "index "+id)
			case op < 7:
				c, refuse := cond(id)
				_, err := e.DeleteIf(ctx, []byte(id), c)
				if conflict("delete", id, c, refuse, err) {
					break
				}
				if err != nil {
					fail("delete: %v", err)
				}
				delete(model, id)
				history = append(history, "delete "+id)
			case op < 15:
				price, score := rng.Int64N(200), float64(rng.IntN(1000))/8
				fields := fmt.Sprintf(`{"price":%d}`, price)
				withScore := rng.IntN(3) == 0
				if withScore {
					fields = fmt.Sprintf(`{"price":"%d","score":%g}`, price, score)
				}
				// Tags the segments have and new ones, between them.
				tag := fmt.Sprintf("t%d", rng.IntN(8))
				if rng.IntN(2) == 0 {
					tag = fmt.Sprintf("t%d%c", rng.IntN(4), 'a'+rng.IntN(3))
				}
				withTag := rng.IntN(2) == 0
				if withTag {
					fields = fields[:len(fields)-1] + fmt.Sprintf(`,"tag":%q}`, tag)
				}
				c, refuse := cond(id)
				res, err := e.UpdateDocValuesIf(ctx, []byte(id), []byte(fields), c)
				d, ok := model[id]
				switch {
				case conflict("update", id, c, refuse, err):
				case !ok:
					if !errors.Is(err, ErrDocumentMissing) {
						fail("update of missing %s: %v", id, err)
					}
				case err != nil:
					fail("update %s: %v", id, err)
				default:
					d.price = &price
					if withScore {
						d.score = &score
					}
					if withTag {
						d.tag = &tag
					}
					d.ver = DocVersion{SeqNo: res.SeqNo, PrimaryTerm: res.Term}
					model[id] = d
				}
				history = append(history, fmt.Sprintf("update %s %s", id, fields))
			case op < 17:
				check()
				history = append(history, "refresh")
			case op < 18:
				if _, err := e.Commit(ctx, CommitOptions{}); err != nil {
					fail("commit: %v", err)
				}
				history = append(history, "commit")
			default:
				// Crash: close without committing, then reopen; the
				// translog replays what the last commit lacks.
				for _, o := range old {
					o.r.Release()
				}
				old = nil
				merges += e.Stats().Merges
				writeOuts += e.Stats().DocValuesUpdatesWriteOuts
				if err := e.Close(ctx); err != nil {
					fail("close: %v", err)
				}
				e = mustOpenDurable(t, dir, opts)
				reopened++
				history = append(history, "reopen")
			}
		}
		check()
		for i, o := range old {
			if got := readerDVDocs(t, o.r); !sameDVDocs(got, o.model) {
				fail("reader %d opened earlier changed\n got %v\nwant %v", i, got, o.model)
			}
			o.r.Release()
		}
		merges += e.Stats().Merges
		writeOuts += e.Stats().DocValuesUpdatesWriteOuts
		if err := e.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if merges == 0 || reopened == 0 || writeOuts == 0 {
		t.Fatalf("histories ran %d merges, %d reopens and %d write-outs; the test needs all", merges, reopened, writeOuts)
	}
}

// TestDocValuesUpdatesRAMBudget: updates of many distinct docs with no
// refresh or commit asked for outgrow the doc-values updates' share of the
// RAM budget; the refreshes the buffered updates force write them out, so
// the heap they hold stays within the share, and every value reads back —
// from the generation files, and after a reopen from the commit.
func TestDocValuesUpdatesRAMBudget(t *testing.T) {
	ctx := context.Background()
	const budget = 1 << 20
	const docs, updates = 12000, 36000
	dir := t.TempDir()
	opts := Options{Parser: updatableMapping(t), RAMBufferBytes: budget,
		TranslogOptions: TranslogOptions{Durability: translog.Async}} // no fsync per update
	e := mustOpenDurable(t, dir, opts)
	defer func() { e.Close(ctx) }()
	for i := range docs {
		if _, err := e.Index(ctx, fmt.Appendf(nil, "d%d", i), fmt.Appendf(nil, `{"price":%d}`, i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.Commit(ctx, CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 18))
	model := map[int]int64{}
	var most int64
	for i := range updates {
		d, v := rng.IntN(docs), rng.Int64N(1<<40)
		if _, err := e.UpdateDocValues(ctx, fmt.Appendf(nil, "d%d", d), fmt.Appendf(nil, `{"price":%d}`, v)); err != nil {
			t.Fatal(err)
		}
		model[d] = v
		if i%500 == 0 {
			most = max(most, e.Stats().DocValuesUpdatesBytes)
		}
	}
	if _, err := e.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	st := e.Stats()
	most = max(most, st.DocValuesUpdatesBytes)
	// Without write-outs: 12 bytes for each of the ~11,400 docs updated,
	// for price, _seq_no and _primary_term: ~410 KB.
	if st.DocValuesUpdatesWriteOuts == 0 || most > budget/4 {
		t.Fatalf("%d write-outs; updates held up to %d bytes on the heap, share %d", st.DocValuesUpdatesWriteOuts, most, budget/4)
	}
	check := func(what string) {
		t.Helper()
		r := e.Acquire()
		defer r.Release()
		seen := 0
		for _, lf := range r.Leaves() {
			price := lf.Reader.NumericDocValues("price")
			for doc := range lf.Reader.MaxDoc() {
				if lf.Live != nil && !lf.Live.Get(doc) {
					continue
				}
				var sd index.StoredDoc
				if err := lf.Reader.StoredFields().Document(doc, &sd); err != nil {
					t.Fatal(err)
				}
				var id int
				fmt.Sscanf(string(sd.ID), "d%d", &id)
				want, ok := model[id]
				if !ok {
					want = int64(id)
				}
				if got, _ := price.Get(doc); got != want {
					t.Fatalf("%s: d%d price %d, want %d", what, id, got, want)
				}
				seen++
			}
		}
		if seen != docs {
			t.Fatalf("%s: %d docs, want %d", what, seen, docs)
		}
	}
	check("written out")
	if _, err := e.Commit(ctx, CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(ctx); err != nil {
		t.Fatal(err)
	}
	e = mustOpenDurable(t, dir, opts)
	check("reopened")
	if b := e.Stats().DocValuesUpdatesBytes; b != 0 {
		t.Fatalf("reopened: %d bytes of updates on the heap; the generation files serve them", b)
	}
}

// TestDocValuesUpdatesReplicate: a replica gets in-place updates through
// the primary's checkpoints (the generation files), an old replica reader
// keeps its values, and a promoted replica replays the logged updates
// (ApplyOps) above its commit.
func TestDocValuesUpdatesReplicate(t *testing.T) {
	ctx := context.Background()
	opts := Options{DisableMerges: true, Parser: updatableMapping(t)}
	e := mustOpenDurable(t, t.TempDir(), opts)
	defer e.Close(ctx)
	r := mustOpenReplica(t, t.TempDir(), Options{Parser: updatableMapping(t)})
	for i := range 20 {
		if _, err := e.Index(ctx, fmt.Appendf(nil, "%d", i), fmt.Appendf(nil, `{"title":"x","price":%d}`, i)); err != nil {
			t.Fatal(err)
		}
	}
	sent := replicateFrom(t, e, r, 0)
	checkpointTo(t, e, r)
	before := r.Acquire()
	defer before.Release()
	update := func(id string, price int) {
		t.Helper()
		if _, err := e.UpdateDocValues(ctx, []byte(id), fmt.Appendf(nil, `{"price":%d}`, price)); err != nil {
			t.Fatal(err)
		}
	}
	update("3", 300)
	update("4", 400)
	if _, err := e.UpdateDocValues(ctx, []byte("4"), []byte(`{"tag":"new"}`)); err != nil { // a keyword, with its term table
		t.Fatal(err)
	}
	sent = replicateFrom(t, e, r, sent)
	cp, _ := checkpointTo(t, e, r)
	if !slices.ContainsFunc(cp.Infos.Segments, func(cs CommitSegment) bool { return cs.DocValuesUpdates != "" }) {
		t.Fatalf("checkpoint names no doc-values updates file: %+v", cp.Infos.Segments)
	}
	pr, rr := e.Acquire(), r.Acquire()
	want, got := readerDVDocs(t, pr), readerDVDocs(t, rr)
	pr.Release()
	rr.Release()
	if !sameDVDocs(got, want) || *got["3"].price != 300 || got["4"].tag == nil || *got["4"].tag != "new" {
		t.Fatalf("replica\n got %v\nwant %v", got, want)
	}
	if old := readerDVDocs(t, before); *old["3"].price != 3 {
		t.Fatalf("a replica reader opened before the update reads price %d", *old["3"].price)
	}
	// Updates the replica logged but never got in a checkpoint replay at
	// promotion.
	update("5", 500)
	update("3", 301)
	replicateFrom(t, e, r, sent)
	p, err := r.Promote(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	if _, err := p.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	pr = p.Acquire()
	defer pr.Release()
	promoted := readerDVDocs(t, pr)
	if *promoted["5"].price != 500 || *promoted["3"].price != 301 || *promoted["4"].price != 400 {
		t.Fatalf("promoted replica: %v", promoted)
	}
}

// TestDocValuesUpdatesAddIndexes: a copy of an index by AddIndexes serves
// the values in-place updates set, not the column as written — from a
// committed reader and from one with updates newer than any commit — and
// keeps them across a reopen, without the versions (the source's: the
// copy's docs have none); CurrentSource gives the sources a document copy
// writes. The source's generation files hold its _seq_no updates, which
// the copy does not take, so its updates are held in memory and written
// by the add's commit, not linked.
func TestDocValuesUpdatesAddIndexes(t *testing.T) {
	ctx := context.Background()
	src := mustOpenDurable(t, t.TempDir(), Options{DisableMerges: true, Parser: updatableMapping(t)})
	defer src.Close(ctx)
	for i := range 30 {
		if _, err := src.Index(ctx, fmt.Appendf(nil, "%d", i), fmt.Appendf(nil, `{"title":"x","price":%d}`, i)); err != nil {
			t.Fatal(err)
		}
		if i == 14 {
			if _, err := src.Refresh(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	update := func(id string, fields string) {
		t.Helper()
		if _, err := src.UpdateDocValues(ctx, []byte(id), []byte(fields)); err != nil {
			t.Fatal(err)
		}
	}
	update("3", `{"price":300}`)
	update("20", `{"price":2000,"score":0.5,"tag":"z\"<"}`)
	if _, err := src.Commit(ctx, CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	committed := src.Acquire()
	defer committed.Release()
	update("3", `{"price":301}`) // newer than the commit
	if _, err := src.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	current := src.Acquire()
	defer current.Release()

	for _, tt := range []struct {
		name   string
		rd     *Reader
		dvu    int // generation files linked
		price3 int64
	}{
		{"committed", committed, 0, 300},
		{"uncommitted", current, 0, 301},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			dst := mustOpenDurable(t, dir, Options{DisableMerges: true, Parser: updatableMapping(t)})
			res, err := dst.AddIndexes(ctx, tt.rd, AddIndexesOptions{Marker: "m"})
			if err != nil {
				t.Fatal(err)
			}
			// Two segments' core files, and the .dvu files.
			if dvu := res.Linked + res.Copied - 2*len(tt.rd.segs[0].files); dvu != tt.dvu {
				t.Errorf("%d files linked, %d copied, segments have %d core files", res.Linked, res.Copied, len(tt.rd.segs[0].files))
			}
			want := readerDVDocs(t, tt.rd)
			for id, d := range want {
				d.ver = DocVersion{SeqNo: UnassignedSeqNo}
				want[id] = d
			}
			check := func(e *Engine) {
				t.Helper()
				r := e.Acquire()
				defer r.Release()
				got := readerDVDocs(t, r)
				if !sameDVDocs(got, want) || *got["3"].price != tt.price3 || *got["20"].score != 0.5 || *got["20"].tag != `z"<` {
					t.Fatalf("copy\n got %v\nwant %v", got, want)
				}
				checkSortAndRange(t, r, want, 100, 2500)
			}
			check(dst)
			if err := dst.Close(ctx); err != nil {
				t.Fatal(err)
			}
			dst = mustOpenDurable(t, dir, Options{DisableMerges: true, Parser: updatableMapping(t)})
			defer dst.Close(ctx)
			check(dst)
		})
	}

	// A document copy re-indexes CurrentSource: the values as updated.
	wantSrc := map[string]string{"3": `{"title":"x","price":301}`, "20": `{"title":"x","price":2000,"score":0.5,"tag":"z\"\u003c"}`, "4": `{"title":"x","price":4}`}
	for li, lf := range current.Leaves() {
		for doc := range lf.Reader.MaxDoc() {
			var sd index.StoredDoc
			if err := current.Document(li, doc, &sd); err != nil {
				t.Fatal(err)
			}
			want, ok := wantSrc[string(sd.ID)]
			if !ok {
				continue
			}
			got, err := CurrentSource(lf.Reader, doc, sd.Source)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != want {
				t.Errorf("CurrentSource of %s = %s, want %s", sd.ID, got, want)
			}
			delete(wantSrc, string(sd.ID))
		}
	}
	if len(wantSrc) > 0 {
		t.Errorf("ids not found: %v", wantSrc)
	}
}

// TestVersionConflictMessage: the conflict says what the document has,
// and a document of a segment written before versions were stored is
// said to have none rather than seqNo -2 (Elasticsearch's unassigned is
// for a document that does not exist).
func TestVersionConflictMessage(t *testing.T) {
	want := DocVersion{SeqNo: 3, PrimaryTerm: 1}
	for _, tt := range []struct {
		found   bool
		current DocVersion
		says    string
	}{
		{false, DocVersion{}, "[d]: version conflict, required seqNo [3], primary term [1] but no document was found"},
		{true, DocVersion{SeqNo: 6, PrimaryTerm: 1}, "[d]: version conflict, required seqNo [3], primary term [1]. current document has seqNo [6] and primary term [1]"},
		{true, DocVersion{SeqNo: UnassignedSeqNo}, "[d]: version conflict, required seqNo [3], primary term [1]. current document has no version in this index (its segment was written before versions were stored, or copied from another index): write it once without if_seq_no to give it one"},
	} {
		err := checkVersion([]byte("d"), want, tt.found, tt.current)
		if !errors.Is(err, ErrVersionConflict) || err.Error() != tt.says {
			t.Errorf("found=%v current=%v: %v, want %q", tt.found, tt.current, err, tt.says)
		}
	}
}
