package dwpt

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/sluice-search/sluice/node/engine/document"
)

// BenchmarkAddDocument inverts ~1 KB text docs (200 tokens from a Zipf-ish
// vocabulary) into one DWPT, starting a new one every 20k docs as a flush
// would. Reported per doc; allocs/op should be ~0 in steady state (only
// amortized growth of tables and new blocks).
func BenchmarkAddDocument(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	zipf := rand.NewZipf(r, 1.1, 1, 50000)
	const nDocs = 512
	docs := make([]document.Document, nDocs)
	for i := range docs {
		d := &docs[i]
		d.ID = fmt.Appendf(nil, "%d", i)
		d.Source = make([]byte, 1024)
		body := document.Field{Name: "body", Type: document.Text}
		for p := range 200 {
			body.Tokens = append(body.Tokens, document.Token{Term: fmt.Appendf(nil, "w%d", zipf.Uint64()), Position: int32(p)})
		}
		body.Length = 200
		title := document.Field{Name: "title", Type: document.Text}
		for p := range 5 {
			title.Tokens = append(title.Tokens, document.Token{Term: fmt.Appendf(nil, "w%d", zipf.Uint64()), Position: int32(p)})
		}
		d.Fields = []document.Field{title, body}
	}
	alloc := NewAllocator(64 << 20)
	d := New(alloc)
	b.ReportAllocs()
	b.SetBytes(1024)
	b.ResetTimer()
	for i := range b.N {
		doc := &docs[i%nDocs]
		doc.ID = fmt.Appendf(doc.ID[:0], "%d", i)
		if _, err := d.AddDocument(doc); err != nil {
			b.Fatal(err)
		}
		if d.NumDocs() == 20000 {
			d.Release()
			d = New(alloc)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/205, "ns/token")
}

// BenchmarkSortTerms sorts the body field's ~50k distinct terms, as a flush
// does once per field.
func BenchmarkSortTerms(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	d := New(nil)
	var doc document.Document
	for i := range 5000 {
		doc.Reset()
		doc.ID = fmt.Appendf(doc.ID, "%d", i)
		doc.Fields = append(doc.Fields, document.Field{Name: "body", Type: document.Text})
		for p := range 100 {
			doc.Fields[0].Tokens = append(doc.Fields[0].Tokens, document.Token{Term: fmt.Appendf(nil, "w%d", r.IntN(200000)), Position: int32(p)})
		}
		if _, err := d.AddDocument(&doc); err != nil {
			b.Fatal(err)
		}
	}
	f := d.byName["body"]
	b.ResetTimer()
	for range b.N {
		sortTermIDs(&f.terms)
	}
	b.ReportMetric(float64(f.terms.size()), "terms")
}
