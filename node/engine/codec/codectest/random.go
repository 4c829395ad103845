package codectest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/sluice-search/sluice/node/engine/document"
	"github.com/sluice-search/sluice/node/engine/index"
)

// RandomOptions shape a random model.
type RandomOptions struct {
	Docs int // number of docs (>= 1)
	// SpecialDocFreqs adds one term per listed docFreq (capped at Docs) to
	// every indexed field: the block boundaries 1, 127, 128, 129, ...
	SpecialDocFreqs []int
	RandomTerms     int // random terms per indexed field
	MaxFreq         int // freqs are mostly small, sometimes up to this
	// SourceSize is the typical _source length; some docs get 10x.
	SourceSize int
}

// DefaultSpecialDocFreqs are the postings shapes around block boundaries.
var DefaultSpecialDocFreqs = []int{1, 2, 127, 128, 129, 255, 256, 257, 1000, 4000}

func randTerm(r *rand.Rand, alphabet string, maxLen int) []byte {
	n := r.IntN(maxLen + 1)
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[r.IntN(len(alphabet))]
	}
	return b
}

// pickDocs returns n distinct sorted docs of [0, docs).
func pickDocs(r *rand.Rand, docs, n int) []int {
	n = min(n, docs)
	if n*2 > docs {
		all := r.Perm(docs)[:n]
		slices.Sort(all)
		return all
	}
	set := map[int]bool{}
	for len(set) < n {
		set[r.IntN(docs)] = true
	}
	out := make([]int, 0, n)
	for d := range set {
		out = append(out, d)
	}
	slices.Sort(out)
	return out
}

// Random builds a random model: one field per index-options level (one of
// them sparse, in few docs), an _id field of singletons, a numeric and a
// sorted doc-values field, a dense/sparse numeric field, and stored _id and
// _source for every doc, with a _routing for about a third of them. The
// empty term is included: Lucene allows it and so does the FST.
func Random(r *rand.Rand, o RandomOptions) *Model {
	m := &Model{Docs: o.Docs}
	add := func(info index.FieldInfo) *Field {
		info.Number = len(m.Fields)
		f := &Field{Info: info}
		m.Fields = append(m.Fields, f)
		return f
	}
	// _id: every doc, one unique term each (docFreq 1), docs only.
	id := add(index.FieldInfo{Name: index.IDField, Type: document.Keyword, IndexOptions: index.IndexDocs})
	m.Stored = make([]index.StoredDoc, o.Docs)
	for d := 0; d < o.Docs; d++ {
		key := []byte(fmt.Sprintf("id-%06d-%x", d, r.Uint32()))
		id.Terms = append(id.Terms, Term{Term: key, Postings: []Posting{{Doc: d, Freq: 1}}})
		srcLen := r.IntN(o.SourceSize + 1)
		if r.IntN(50) == 0 {
			srcLen *= 10
		}
		src := make([]byte, srcLen)
		for i := range src {
			src[i] = "abcdefghij {}\":,"[r.IntN(16)] // compressible, like JSON
		}
		m.Stored[d] = index.StoredDoc{ID: key, Source: src}
	}
	type spec struct {
		name   string
		opts   index.IndexOptions
		norms  bool
		sparse bool // only in a few docs
	}
	for _, s := range []spec{
		{"keyword", index.IndexDocs, false, false},
		{"freqs", index.IndexDocsFreqs, false, false},
		{"body", index.IndexDocsFreqsPositions, true, false},
		{"title", index.IndexDocsFreqsPositions, true, true},
	} {
		typ := document.Text
		if s.opts == index.IndexDocs {
			typ = document.Keyword
		}
		f := add(index.FieldInfo{Name: s.name, Type: typ, IndexOptions: s.opts, HasNorms: s.norms})
		universe := o.Docs
		docsOf := func(n int) []int { return pickDocs(r, o.Docs, n) }
		if s.sparse {
			universe = max(1, o.Docs/20)
			sub := pickDocs(r, o.Docs, universe)
			docsOf = func(n int) []int {
				idx := pickDocs(r, len(sub), n)
				for i := range idx {
					idx[i] = sub[idx[i]]
				}
				return idx
			}
		}
		seen := map[string]bool{}
		addTerm := func(term []byte, docs []int) {
			if seen[string(term)] || len(docs) == 0 {
				return
			}
			seen[string(term)] = true
			t := Term{Term: term}
			for _, d := range docs {
				p := Posting{Doc: d, Freq: 1}
				if s.opts.HasFreqs() {
					p.Freq = 1 + r.IntN(3)
					if r.IntN(20) == 0 {
						p.Freq = 1 + r.IntN(o.MaxFreq)
					}
				}
				if s.opts.HasPositions() {
					pos := 0
					for i := 0; i < p.Freq; i++ {
						pos += r.IntN(10) // 0: repeated position (synonyms)
						p.Positions = append(p.Positions, pos)
					}
				}
				t.Postings = append(t.Postings, p)
			}
			f.Terms = append(f.Terms, t)
		}
		addTerm([]byte{}, docsOf(1+r.IntN(5)))
		addTerm([]byte("all"), docsOf(universe)) // dense: every doc
		for i, df := range o.SpecialDocFreqs {
			addTerm([]byte(fmt.Sprintf("df%05d-%d", df, i)), docsOf(df))
		}
		for i := 0; i < o.RandomTerms; i++ {
			term := randTerm(r, "abcdez\x00\xff", 6)
			df := 1 + r.IntN(4)
			if r.IntN(10) == 0 && universe > 0 { // an empty segment has no docs to pick
				df = 1 + r.IntN(universe)
			}
			addTerm(term, docsOf(df))
		}
		if s.norms {
			length := make([]int, o.Docs)
			for _, t := range f.Terms {
				for _, p := range t.Postings {
					length[p.Doc] += p.Freq
				}
			}
			f.Norms = make([]uint8, o.Docs)
			for d, l := range length {
				if l > 0 {
					f.Norms[d] = index.EncodeNorm(l * (1 + r.IntN(3)))
				}
			}
		}
	}
	numeric := func(name string, density int, gen func() int64) {
		f := add(index.FieldInfo{Name: name, Type: document.Long, DocValues: index.DocValuesNumeric})
		f.Numeric, f.HasNumeric = make([]int64, o.Docs), make([]bool, o.Docs)
		for d := 0; d < o.Docs; d++ {
			if r.IntN(100) < density {
				f.Numeric[d], f.HasNumeric[d] = gen(), true
			}
		}
	}
	numeric("price", 100, func() int64 { return 1000 + 25*r.Int64N(1000) }) // gcd 25
	numeric("flag", 60, func() int64 { return r.Int64N(3) - 1 })            // table
	numeric("rare", 3, func() int64 { return r.Int64() - r.Int64() })       // sparse, full width
	numeric("date", 90, func() int64 { return 1_700_000_000_000 + r.Int64N(1<<40) })
	sorted := add(index.FieldInfo{Name: "tag", Type: document.Keyword, IndexOptions: index.IndexDocs, DocValues: index.DocValuesSorted})
	values := map[string]bool{}
	for i := 0; i < 1+r.IntN(50); i++ {
		values[string(randTerm(r, "pqrs", 5))] = true
	}
	for v := range values {
		sorted.SortedValues = append(sorted.SortedValues, []byte(v))
	}
	slices.SortFunc(sorted.SortedValues, bytes.Compare)
	sorted.SortedOrds = make([]int, o.Docs)
	byTerm := map[int][]int{}
	for d := range sorted.SortedOrds {
		sorted.SortedOrds[d] = -1
		if r.IntN(10) < 8 {
			ord := r.IntN(len(sorted.SortedValues))
			sorted.SortedOrds[d] = ord
			byTerm[ord] = append(byTerm[ord], d)
		}
	}
	for ord, docs := range byTerm {
		t := Term{Term: sorted.SortedValues[ord]}
		for _, d := range docs {
			t.Postings = append(t.Postings, Posting{Doc: d, Freq: 1})
		}
		sorted.Terms = append(sorted.Terms, t)
	}
	// _routing on about a third of the docs, drawn last so the rest of the
	// model does not depend on it; sometimes long (a multi-byte length).
	for d := range m.Stored {
		if r.IntN(3) == 0 {
			n := 1 + r.IntN(12)
			if r.IntN(20) == 0 {
				n = 100 + r.IntN(300)
			}
			m.Stored[d].Routing = randTerm(r, "tenant-0123456789", n)
			if len(m.Stored[d].Routing) == 0 {
				m.Stored[d].Routing = []byte("t")
			}
		}
	}
	m.Finish()
	return m
}
