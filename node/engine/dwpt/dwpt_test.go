package dwpt

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/sluice-search/sluice/node/engine/document"
	"github.com/sluice-search/sluice/node/engine/index"
)

// model is the obvious in-memory index the DWPT is checked against.
type model struct {
	postings map[string]map[string][]modelPosting // field -> term -> docs
	norms    map[string]map[int]uint8
	numeric  map[string]map[int]int64
	sorted   map[string]map[int]string
	stored   []index.StoredDoc
	types    map[string]document.FieldType
}

type modelPosting struct {
	doc       int
	positions []int
}

func newModel() *model {
	return &model{postings: map[string]map[string][]modelPosting{}, norms: map[string]map[int]uint8{},
		numeric: map[string]map[int]int64{}, sorted: map[string]map[int]string{}, types: map[string]document.FieldType{}}
}

func (m *model) add(doc int, term, field string, pos int, positions bool) {
	if m.postings[field] == nil {
		m.postings[field] = map[string][]modelPosting{}
	}
	ps := m.postings[field][term]
	if len(ps) == 0 || ps[len(ps)-1].doc != doc {
		ps = append(ps, modelPosting{doc: doc})
	}
	if positions {
		ps[len(ps)-1].positions = append(ps[len(ps)-1].positions, pos)
	}
	m.postings[field][term] = ps
}

// randomDoc fills doc with random fields drawn from a small schema and
// records what the model expects.
func randomDoc(r *rand.Rand, doc *document.Document, docID int, m *model) {
	doc.Reset()
	doc.ID = fmt.Appendf(doc.ID, "id-%d", r.IntN(docID+10))
	doc.Source = fmt.Appendf(doc.Source, `{"n":%d}`, docID)
	if r.IntN(3) == 0 {
		doc.Routing = fmt.Appendf(doc.Routing, "tenant-%d", r.IntN(5))
	}
	m.stored = append(m.stored, index.StoredDoc{ID: bytes.Clone(doc.ID), Routing: bytes.Clone(doc.Routing), Source: bytes.Clone(doc.Source)})
	m.add(docID, string(doc.ID), index.IDField, 0, false)
	schema := []struct {
		name string
		typ  document.FieldType
	}{{"title", document.Text}, {"body", document.Text}, {"tag", document.Keyword}, {"n", document.Long}}
	for _, s := range schema {
		if r.IntN(4) == 0 {
			continue // field absent from this doc
		}
		doc.Fields = append(doc.Fields, document.Field{Name: s.name, Type: s.typ})
		fl := &doc.Fields[len(doc.Fields)-1]
		m.types[s.name] = s.typ
		switch s.typ {
		case document.Text:
			pos := int32(r.IntN(3))
			n := r.IntN(30)
			if s.name == "body" {
				n += r.IntN(300)
			}
			for range n {
				term := []byte(fmt.Sprintf("t%d", int(r.ExpFloat64()*20)))
				if r.IntN(50) == 0 {
					term = bytes.Repeat([]byte{'x'}, 100+r.IntN(300)) // two-byte length prefix
				}
				fl.Tokens = append(fl.Tokens, document.Token{Term: term, Position: pos})
				m.add(docID, string(term), s.name, int(pos), true)
				pos += int32(1 + r.IntN(2))
			}
			fl.Length = int32(len(fl.Tokens))
			if len(fl.Tokens) > 0 {
				if m.norms[s.name] == nil {
					m.norms[s.name] = map[int]uint8{}
				}
				m.norms[s.name][docID] = index.EncodeNorm(len(fl.Tokens))
			}
		case document.Keyword:
			var vals []string
			for range 1 + r.IntN(3) {
				v := fmt.Sprintf("k%d", r.IntN(40))
				vals = append(vals, v)
				fl.Keywords = append(fl.Keywords, []byte(v))
				fl.Tokens = append(fl.Tokens, document.Token{Term: []byte(v)})
				m.add(docID, v, s.name, 0, false)
			}
			if m.sorted[s.name] == nil {
				m.sorted[s.name] = map[int]string{}
			}
			m.sorted[s.name][docID] = slices.Min(vals)
		case document.Long:
			v := r.Int64N(1000) - 500
			fl.Numerics = append(fl.Numerics, v)
			fl.Tokens = append(fl.Tokens, document.Token{Term: document.EncodeSortable(nil, v)})
			m.add(docID, string(document.EncodeSortable(nil, v)), s.name, 0, false)
			if m.numeric[s.name] == nil {
				m.numeric[s.name] = map[int]int64{}
			}
			m.numeric[s.name][docID] = v
		}
	}
}

func TestRandomAgainstModel(t *testing.T) {
	for _, numDocs := range []int{1, 7, 300, 2000} {
		seed := rand.Uint64()
		t.Run(fmt.Sprintf("docs=%d/seed=%d", numDocs, seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 1))
			d := New(NewAllocator(1 << 20))
			defer d.Release()
			m := newModel()
			var doc document.Document
			for i := range numDocs {
				randomDoc(r, &doc, i, m)
				got, err := d.AddDocument(&doc)
				if err != nil || got != i {
					t.Fatalf("AddDocument %d: got %d, %v", i, got, err)
				}
			}
			checkAgainstModel(t, r, d, m)
		})
	}
}

func checkAgainstModel(t *testing.T, r *rand.Rand, d *DWPT, m *model) {
	t.Helper()
	if d.MaxDoc() != len(m.stored) {
		t.Fatalf("MaxDoc %d want %d", d.MaxDoc(), len(m.stored))
	}
	fis := d.FieldInfos()
	if fis.ByNumber(0).Name != index.IDField || fis.ByNumber(0).IndexOptions != index.IndexDocs {
		t.Fatalf("field 0 is %+v, want _id docs-only", fis.ByNumber(0))
	}
	for field, terms := range m.postings {
		fi := fis.ByName(field)
		if fi == nil {
			t.Fatalf("field %q missing from FieldInfos", field)
		}
		if field != index.IDField && fi.Type != m.types[field] {
			t.Fatalf("field %q type %v want %v", field, fi.Type, m.types[field])
		}
		checkTerms(t, r, d.Terms(field), terms, fi.IndexOptions)
	}
	for field, norms := range m.norms {
		nr := d.Norms(field)
		for doc := range d.MaxDoc() {
			if got := nr.Norm(doc); got != norms[doc] {
				t.Fatalf("norm %s doc %d: %d want %d", field, doc, got, norms[doc])
			}
		}
	}
	for field, vals := range m.numeric {
		dv := d.NumericDocValues(field)
		for doc := range d.MaxDoc() {
			want, wantOK := vals[doc]
			if got, ok := dv.Get(doc); ok != wantOK || got != want {
				t.Fatalf("numeric %s doc %d: %d,%v want %d,%v", field, doc, got, ok, want, wantOK)
			}
		}
	}
	for field, vals := range m.sorted {
		dv := d.SortedDocValues(field)
		distinct := map[string]bool{}
		for _, v := range vals {
			distinct[v] = true
		}
		if dv.ValueCount() != len(distinct) {
			t.Fatalf("sorted %s: %d values want %d", field, dv.ValueCount(), len(distinct))
		}
		for ord := 1; ord < dv.ValueCount(); ord++ {
			if bytes.Compare(dv.LookupOrd(ord-1), dv.LookupOrd(ord)) >= 0 {
				t.Fatalf("sorted %s: ords out of order at %d", field, ord)
			}
		}
		for doc := range d.MaxDoc() {
			want, wantOK := vals[doc]
			ord := dv.Ord(doc)
			if !wantOK {
				if ord != -1 {
					t.Fatalf("sorted %s doc %d: ord %d, want none", field, doc, ord)
				}
				continue
			}
			if ord < 0 || string(dv.LookupOrd(ord)) != want {
				t.Fatalf("sorted %s doc %d: ord %d want %q", field, doc, ord, want)
			}
		}
	}
	sf := d.StoredFields()
	var sd index.StoredDoc
	for doc, want := range m.stored {
		if err := sf.Document(doc, &sd); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(sd.ID, want.ID) || !bytes.Equal(sd.Routing, want.Routing) || !bytes.Equal(sd.Source, want.Source) {
			t.Fatalf("stored doc %d: %q %q %q want %q %q %q", doc, sd.ID, sd.Routing, sd.Source, want.ID, want.Routing, want.Source)
		}
	}
}

func checkTerms(t *testing.T, r *rand.Rand, terms index.Terms, want map[string][]modelPosting, opts index.IndexOptions) {
	t.Helper()
	sortedTerms := make([]string, 0, len(want))
	var sumDF, sumTTF int64
	docs := map[int]bool{}
	for term, ps := range want {
		sortedTerms = append(sortedTerms, term)
		sumDF += int64(len(ps))
		for _, p := range ps {
			docs[p.doc] = true
			sumTTF += int64(max(1, len(p.positions)))
		}
	}
	sort.Strings(sortedTerms)
	if terms.Size() != int64(len(want)) || terms.SumDocFreq() != sumDF || terms.SumTotalTermFreq() != sumTTF || terms.DocCount() != len(docs) {
		t.Fatalf("terms stats: size %d sumDF %d sumTTF %d docCount %d, want %d %d %d %d",
			terms.Size(), terms.SumDocFreq(), terms.SumTotalTermFreq(), terms.DocCount(), len(want), sumDF, sumTTF, len(docs))
	}
	te := terms.Iterator()
	var pe index.PostingsEnum
	i := 0
	for ; te.Next(); i++ {
		if string(te.Term()) != sortedTerms[i] {
			t.Fatalf("term %d: %q want %q", i, te.Term(), sortedTerms[i])
		}
		ps := want[sortedTerms[i]]
		if te.DocFreq() != len(ps) {
			t.Fatalf("term %q docFreq %d want %d", te.Term(), te.DocFreq(), len(ps))
		}
		flags := index.PostingsDocs
		if opts.HasPositions() && r.IntN(2) == 0 {
			flags = index.PostingsPositions
		}
		pe = te.Postings(pe, flags)
		for _, p := range ps {
			if doc := pe.NextDoc(); doc != p.doc {
				t.Fatalf("term %q: doc %d want %d", te.Term(), doc, p.doc)
			}
			if opts.HasFreqs() && pe.Freq() != len(p.positions) {
				t.Fatalf("term %q doc %d: freq %d want %d", te.Term(), p.doc, pe.Freq(), len(p.positions))
			}
			if flags == index.PostingsPositions {
				n := r.IntN(len(p.positions) + 1) // partial reads must not derail the next doc
				for k := range n {
					if got := pe.NextPosition(); got != p.positions[k] {
						t.Fatalf("term %q doc %d pos %d: %d want %d", te.Term(), p.doc, k, got, p.positions[k])
					}
				}
			}
		}
		if doc := pe.NextDoc(); doc != index.NoMoreDocs {
			t.Fatalf("term %q: extra doc %d", te.Term(), doc)
		}
	}
	if i != len(sortedTerms) {
		t.Fatalf("iterated %d terms want %d", i, len(sortedTerms))
	}
	// Seeks: existing terms, and probes between them.
	for range 20 {
		if len(sortedTerms) == 0 {
			break
		}
		target := sortedTerms[r.IntN(len(sortedTerms))]
		if !te.SeekExact([]byte(target)) || string(te.Term()) != target {
			t.Fatalf("SeekExact %q failed", target)
		}
		probe := target + "\x00"
		if te.SeekExact([]byte(probe)) {
			t.Fatalf("SeekExact %q found a missing term", probe)
		}
		k := sort.SearchStrings(sortedTerms, probe)
		switch st := te.SeekCeil([]byte(probe)); {
		case k == len(sortedTerms):
			if st != index.SeekEnd {
				t.Fatalf("SeekCeil %q: %v want end", probe, st)
			}
		case st != index.SeekNotFound || string(te.Term()) != sortedTerms[k]:
			t.Fatalf("SeekCeil %q: %v %q want %q", probe, st, te.Term(), sortedTerms[k])
		}
		if te.SeekCeil([]byte(target)) != index.SeekFound {
			t.Fatalf("SeekCeil %q not found", target)
		}
	}
}

func TestDeleteIDUpto(t *testing.T) {
	d := New(nil)
	var doc document.Document
	add := func(id string) int {
		doc.Reset()
		doc.ID = append(doc.ID, id...)
		n, err := d.AddDocument(&doc)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	add("a")             // 0
	add("b")             // 1
	upto := add("a") + 1 // 2: an update of a at this point must delete 0 and 2...
	add("a")             // 3: ...but not the a added after it
	if n := d.DeleteID([]byte("a"), upto); n != 2 {
		t.Fatalf("deleted %d want 2", n)
	}
	if n := d.DeleteID([]byte("a"), upto); n != 0 {
		t.Fatalf("second delete deleted %d", n)
	}
	if d.DeleteID([]byte("zz"), 4) != 0 || !d.HasID([]byte("b")) || d.HasID([]byte("zz")) {
		t.Fatal("missing id handling")
	}
	live := d.LiveDocs()
	for doc, want := range []bool{false, true, false, true} {
		if live.Get(doc) != want {
			t.Fatalf("doc %d live=%v want %v", doc, live.Get(doc), want)
		}
	}
	if live.Len() != 4 || d.DelCount() != 2 {
		t.Fatalf("len %d delCount %d", live.Len(), d.DelCount())
	}
}

func TestRejectsInvalidDocuments(t *testing.T) {
	long := strings.Repeat("x", MaxTermLength+1)
	tests := []struct {
		name string
		doc  document.Document
	}{
		{"empty id", document.Document{}},
		{"reserved field", document.Document{ID: []byte("1"), Fields: []document.Field{{Name: "_id", Type: document.Keyword}}}},
		{"duplicate field", document.Document{ID: []byte("1"), Fields: []document.Field{{Name: "a", Type: document.Keyword}, {Name: "a", Type: document.Keyword}}}},
		{"bad type", document.Document{ID: []byte("1"), Fields: []document.Field{{Name: "a", Type: 99}}}},
		{"type conflict", document.Document{ID: []byte("1"), Fields: []document.Field{{Name: "k", Type: document.Long}}}},
		{"long term", document.Document{ID: []byte("1"), Fields: []document.Field{{Name: "t", Type: document.Text, Tokens: []document.Token{{Term: []byte(long)}}}}}},
		{"long routing", document.Document{ID: []byte("1"), Routing: []byte(long)}},
		{"positions backwards", document.Document{ID: []byte("1"), Fields: []document.Field{{Name: "t", Type: document.Text,
			Tokens: []document.Token{{Term: []byte("a"), Position: 3}, {Term: []byte("b"), Position: 1}}}}}},
	}
	d := New(nil)
	if _, err := d.AddDocument(&document.Document{ID: []byte("0"), Fields: []document.Field{{Name: "k", Type: document.Keyword}}}); err != nil {
		t.Fatal(err)
	}
	before := d.RAMBytesUsed()
	for _, tc := range tests {
		if _, err := d.AddDocument(&tc.doc); !errors.Is(err, ErrInvalidDocument) {
			t.Fatalf("%s: err = %v", tc.name, err)
		}
	}
	if d.NumDocs() != 1 || d.RAMBytesUsed() != before {
		t.Fatalf("rejected docs changed the DWPT: %d docs", d.NumDocs())
	}
	// A field that was validated in a rejected doc is usable by the next.
	ok := document.Document{ID: []byte("2"), Fields: []document.Field{{Name: "k", Type: document.Keyword}}}
	if _, err := d.AddDocument(&ok); err != nil {
		t.Fatal(err)
	}
}

func TestSliceChainsLongStreams(t *testing.T) {
	// One term in many docs with many positions crosses every slice level
	// and several blocks.
	d := New(nil)
	var doc document.Document
	for i := range 5000 {
		doc.Reset()
		doc.ID = fmt.Appendf(doc.ID, "%d", i)
		doc.Fields = append(doc.Fields, document.Field{Name: "t", Type: document.Text})
		for p := range 1 + i%7 {
			doc.Fields[0].Tokens = append(doc.Fields[0].Tokens, document.Token{Term: []byte("x"), Position: int32(p * 1000)})
		}
		if _, err := d.AddDocument(&doc); err != nil {
			t.Fatal(err)
		}
	}
	te := d.Terms("t").Iterator()
	if !te.SeekExact([]byte("x")) {
		t.Fatal("term missing")
	}
	pe := te.Postings(nil, index.PostingsPositions)
	for i := range 5000 {
		if pe.NextDoc() != i || pe.Freq() != 1+i%7 {
			t.Fatalf("doc %d: got %d freq %d", i, pe.DocID(), pe.Freq())
		}
		for p := range pe.Freq() {
			if got := pe.NextPosition(); got != p*1000 {
				t.Fatalf("doc %d pos %d: %d", i, p, got)
			}
		}
	}
	if pe.NextDoc() != index.NoMoreDocs {
		t.Fatal("extra docs")
	}
}

// TestRAMBytesUsedTracksHeap checks the flush policy's view of a DWPT's
// memory against what the Go heap actually grew by.
func TestRAMBytesUsedTracksHeap(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	var doc document.Document
	m := newModel() // only to drive randomDoc
	var before, after runtime.MemStats
	// Two GCs empty the recycling pools (a sync.Pool keeps a victim
	// generation): arrays other tests released must not be reused here,
	// or the DWPT would grow without the heap growing.
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&before)
	d := New(nil)
	for i := range 4000 {
		randomDoc(r, &doc, i, m)
		m.stored, m.postings = m.stored[:0], map[string]map[string][]modelPosting{} // keep the model small
		if _, err := d.AddDocument(&doc); err != nil {
			t.Fatal(err)
		}
	}
	m = nil
	runtime.GC()
	runtime.ReadMemStats(&after)
	heap := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	got := d.RAMBytesUsed()
	ratio := float64(got) / float64(heap)
	t.Logf("RAMBytesUsed %d, heap growth %d (ratio %.2f)", got, heap, ratio)
	if ratio < 0.8 || ratio > 1.25 {
		t.Fatalf("RAMBytesUsed %d vs heap growth %d: ratio %.2f", got, heap, ratio)
	}
	runtime.KeepAlive(d)
}

// TestRecycledArraysStartClean: DWPTs built after others were released take
// their pages, hash tables and chunks from the pools (recycle.go); stale
// contents must never show through.
func TestRecycledArraysStartClean(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 2))
	alloc := NewAllocator(1 << 20)
	// Enough docs for several full pages of doc rows and terms.
	for gen, numDocs := range []int{9000, 5000, 9000, 300} {
		d := New(alloc)
		m := newModel()
		var doc document.Document
		for i := range numDocs {
			randomDoc(r, &doc, i, m)
			if _, err := d.AddDocument(&doc); err != nil {
				t.Fatalf("generation %d doc %d: %v", gen, i, err)
			}
		}
		checkAgainstModel(t, r, d, m)
		d.Release()
	}
}

func TestIdleReleaseDue(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var r idleRelease
	r.last.Store(t0.UnixNano())
	if r.due(t0.Add(time.Hour), time.Second) {
		t.Fatal("due with nothing pooled")
	}
	r.pooled.Store(true)
	for _, tt := range []struct {
		after time.Duration
		want  bool
	}{
		{500 * time.Millisecond, false}, // still indexing
		{time.Second, true},             // idle long enough: release
		{2 * time.Second, false},        // released once per idle period
	} {
		if got := r.due(t0.Add(tt.after), time.Second); got != tt.want {
			t.Errorf("due %v after the last put = %v, want %v", tt.after, got, tt.want)
		}
	}
	r.pooled.Store(true) // pooled again: another release
	if !r.due(t0.Add(3*time.Second), time.Second) {
		t.Error("not due after pooling again")
	}
}
