package codec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/sluice-search/sluice/node/engine/codec/codectest"
	"github.com/sluice-search/sluice/node/engine/index"
	"github.com/sluice-search/sluice/node/engine/store"
)

func newInfo(r *rand.Rand, name string, maxDoc int) *index.SegmentInfo {
	info := &index.SegmentInfo{Name: name, MaxDoc: maxDoc}
	for i := range info.ID {
		info.ID[i] = byte(r.Uint32())
	}
	return info
}

func writeModel(t testing.TB, c *Codec, dir store.Directory, info *index.SegmentInfo, m index.LeafReader) {
	t.Helper()
	if err := c.WriteSegment(context.Background(), dir, info, m, store.IOContext{Kind: store.IOFlush}); err != nil {
		t.Fatal(err)
	}
}

func TestConformance(t *testing.T) {
	r := codectest.Rand(t)
	type tc struct {
		name string
		opts codectest.RandomOptions
		c    Options
		dir  func() store.Directory
	}
	fsDir := func() store.Directory {
		d, err := store.NewFSDirectory(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	ramDir := func() store.Directory { return store.NewRAMDirectory() }
	std := codectest.RandomOptions{Docs: 5000, SpecialDocFreqs: codectest.DefaultSpecialDocFreqs, RandomTerms: 300, MaxFreq: 300, SourceSize: 400}
	if raceEnabled {
		std.Docs, std.RandomTerms = 1500, 100
	}
	cases := []tc{
		{"fs-zstd", std, Options{StoredCompression: CompressionZstd}, fsDir},
		{"ram-s2-smallblocks", std, Options{StoredBlockSize: 1000}, ramDir},
		{"one-doc", codectest.RandomOptions{Docs: 1, SpecialDocFreqs: []int{1}, RandomTerms: 3, MaxFreq: 3, SourceSize: 10}, Options{}, ramDir},
		{"no-docs", codectest.RandomOptions{Docs: 0, RandomTerms: 0, MaxFreq: 1}, Options{}, ramDir},
		{"small", codectest.RandomOptions{Docs: 300, SpecialDocFreqs: []int{127, 128, 129, 256}, RandomTerms: 50, MaxFreq: 20, SourceSize: 50}, Options{}, ramDir},
	}
	if codectest.LongMode() {
		big := std
		big.Docs, big.RandomTerms = 60000, 5000
		big.SpecialDocFreqs = append(big.SpecialDocFreqs, 20000, 59999)
		cases = append(cases, tc{"long", big, Options{}, fsDir})
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := codectest.Random(r, tc.opts)
			if tc.name == "small" {
				// A field declared with norms whose source has none.
				m.Fields[len(m.Fields)-1].Info.HasNorms = true
				m.Finish()
			}
			dir := tc.dir()
			defer dir.Close()
			c := New(tc.c)
			info := newInfo(r, fmt.Sprintf("_%d", i), m.MaxDoc())
			writeModel(t, c, dir, info, m)
			if info.Codec != Name || len(info.Files) == 0 {
				t.Fatalf("info not filled in: %+v", info)
			}
			sr, err := c.OpenSegment(dir, info)
			if err != nil {
				t.Fatal(err)
			}
			defer sr.Close()
			codectest.Check(t, r, m, sr)
			if err := c.CheckIntegrity(dir, info); err != nil {
				t.Fatal(err)
			}
			// A reader is a valid source: rewriting it gives the same segment.
			info2 := newInfo(r, fmt.Sprintf("_%d_copy", i), m.MaxDoc())
			writeModel(t, c, dir, info2, sr)
			sr2, err := c.OpenSegment(dir, info2)
			if err != nil {
				t.Fatal(err)
			}
			defer sr2.Close()
			codectest.Check(t, r, m, sr2)
		})
	}
}

func TestLiveDocs(t *testing.T) {
	r := codectest.Rand(t)
	c := New(Options{})
	dir := store.NewRAMDirectory()
	for _, n := range []int{0, 1, 63, 64, 65, 10000} {
		info := newInfo(r, fmt.Sprintf("_%d", n), n)
		live := index.NewFixedBitSetAllSet(n)
		for i := 0; i < n/3; i++ {
			live.Clear(r.IntN(n))
		}
		name, err := c.WriteLiveDocs(dir, info, 3, live, store.IOContext{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.ReadLiveDocs(dir, info, 3)
		if err != nil {
			t.Fatal(err)
		}
		if got.Len() != n || got.Cardinality() != live.Cardinality() {
			t.Fatalf("n=%d: read %d/%d bits", n, got.Cardinality(), got.Len())
		}
		for i := 0; i < n; i++ {
			if got.Get(i) != live.Get(i) {
				t.Fatalf("n=%d bit %d", n, i)
			}
		}
		if n > 0 {
			in, _ := dir.OpenInput(name)
			data := append([]byte(nil), in.Bytes()...)
			data[headerLen(extLiveDocs)+4+r.IntN(len(data)-headerLen(extLiveDocs)-4-footerLen)] ^= 1
			dir.DeleteFile(name)
			out, _ := dir.CreateOutput(name, store.IOContext{})
			out.Write(data)
			out.Close()
			if _, err := c.ReadLiveDocs(dir, info, 3); !errors.Is(err, index.ErrCorrupt) {
				t.Fatalf("n=%d: corrupt live docs read with err %v", n, err)
			}
		}
	}
}

// TestWriteErrorCleansUp: a write that fails midway (aborted merge) leaves
// no files behind.
func TestWriteErrorCleansUp(t *testing.T) {
	r := codectest.Rand(t)
	m := codectest.Random(r, codectest.RandomOptions{Docs: 2000, SpecialDocFreqs: []int{1000}, RandomTerms: 100, MaxFreq: 5, SourceSize: 200})
	dir := store.NewRAMDirectory()
	abort := errors.New("merge aborted")
	budget := 20000
	ioctx := store.IOContext{Kind: store.IOMerge, Throttle: func(n int) error {
		budget -= n
		if budget < 0 {
			return abort
		}
		return nil
	}}
	err := New(Options{}).WriteSegment(context.Background(), dir, newInfo(r, "_9", m.MaxDoc()), m, ioctx)
	if !errors.Is(err, abort) {
		t.Fatalf("err %v, want the abort", err)
	}
	if names, _ := dir.ListAll(); len(names) != 0 {
		t.Fatalf("files left after a failed write: %v", names)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := New(Options{}).WriteSegment(ctx, dir, newInfo(r, "_10", m.MaxDoc()), m, store.IOContext{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled write: %v", err)
	}
}

// digest reads everything through one goroutine's enums and folds it into
// a hash, so concurrent readers can be compared.
func digest(sr index.LeafReader) uint64 {
	h := uint64(14695981039346656037)
	mix := func(v int) { h = (h ^ uint64(v)) * 1099511628211 }
	fis := sr.FieldInfos()
	for n := 0; n < fis.Len(); n++ {
		name := fis.ByNumber(n).Name
		if terms := sr.Terms(name); terms != nil {
			te := terms.Iterator()
			var pe index.PostingsEnum
			for te.Next() {
				pe = te.Postings(pe, index.PostingsPositions)
				for d := pe.NextDoc(); d != index.NoMoreDocs; d = pe.NextDoc() {
					mix(d)
					for i := pe.Freq(); i > 0 && terms.IndexOptions().HasPositions(); i-- {
						mix(pe.NextPosition())
					}
				}
			}
		}
		if nr := sr.Norms(name); nr != nil {
			for d := 0; d < sr.MaxDoc(); d++ {
				mix(int(nr.Norm(d)))
			}
		}
	}
	sf := sr.StoredFields()
	var doc index.StoredDoc
	for d := sr.MaxDoc() - 1; d >= 0; d-- {
		sf.Document(d, &doc)
		mix(len(doc.Source))
	}
	return h
}

// TestConcurrentReaders: one SegmentReader shared by goroutines, each with
// its own enums, reads the same data (run with -race).
func TestConcurrentReaders(t *testing.T) {
	r := codectest.Rand(t)
	m := codectest.Random(r, codectest.RandomOptions{Docs: 800, SpecialDocFreqs: []int{129, 700}, RandomTerms: 50, MaxFreq: 10, SourceSize: 100})
	c := New(Options{})
	dir := store.NewRAMDirectory()
	info := newInfo(r, "_c", m.MaxDoc())
	writeModel(t, c, dir, info, m)
	sr, err := c.OpenSegment(dir, info)
	if err != nil {
		t.Fatal(err)
	}
	defer sr.Close()
	want := digest(m)
	got := make(chan uint64, 4)
	for g := 0; g < 4; g++ {
		go func() { got <- digest(sr) }()
	}
	for g := 0; g < 4; g++ {
		if h := <-got; h != want {
			t.Fatalf("concurrent reader digest %x, want %x", h, want)
		}
	}
}

// TestRandomAccessDocument: the pooled single-document path reads every
// doc right in random order from several goroutines at once, hands out
// buffers the caller owns, and (without the race detector, which makes
// sync.Pool drop items on purpose) allocates nothing once warm.
func TestRandomAccessDocument(t *testing.T) {
	r := codectest.Rand(t)
	m := codectest.Random(r, codectest.RandomOptions{Docs: 600, RandomTerms: 10, MaxFreq: 3, SourceSize: 2000})
	c := New(Options{StoredBlockSize: 4 << 10}) // many blocks
	dir := store.NewRAMDirectory()
	info := newInfo(r, "_r", m.MaxDoc())
	writeModel(t, c, dir, info, m)
	lr, err := c.OpenSegment(dir, info)
	if err != nil {
		t.Fatal(err)
	}
	defer lr.Close()
	dr, ok := lr.(index.DocumentReader)
	if !ok {
		t.Fatal("segment reader does not implement index.DocumentReader")
	}
	seed := r.Uint64()
	errs := make(chan error, 4)
	for g := range 4 {
		go func() {
			gr := rand.New(rand.NewPCG(seed, uint64(g)))
			var kept []index.StoredDoc
			for range 2000 {
				doc := gr.IntN(m.MaxDoc())
				var sd index.StoredDoc
				if err := dr.Document(doc, &sd); err != nil {
					errs <- err
					return
				}
				want := m.Stored[doc]
				if !bytes.Equal(sd.ID, want.ID) || !bytes.Equal(sd.Source, want.Source) || !bytes.Equal(sd.Routing, want.Routing) {
					errs <- fmt.Errorf("doc %d: got id %q, want %q (or its source or routing differs)", doc, sd.ID, want.ID)
					return
				}
				kept = append(kept, sd)
			}
			// Buffers handed out earlier were not overwritten by later reads.
			for _, sd := range kept[:10] {
				if len(sd.ID) == 0 {
					errs <- fmt.Errorf("a kept doc lost its id")
					return
				}
			}
			errs <- nil
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if raceEnabled {
		return
	}
	var sd index.StoredDoc
	i := 0
	allocs := testing.AllocsPerRun(200, func() {
		i = (i + 97) % m.MaxDoc()
		if err := dr.Document(i, &sd); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 0.1 {
		t.Fatalf("%.2f allocations per warm Document, want 0", allocs)
	}
}
