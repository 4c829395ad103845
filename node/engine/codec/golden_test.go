package codec

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sluice-search/sluice/node/engine/codec/codectest"
	"github.com/sluice-search/sluice/node/engine/document"
	"github.com/sluice-search/sluice/node/engine/index"
	"github.com/sluice-search/sluice/node/engine/store"
)

// updateGolden rewrites testdata/golden/v<formatVersion> with the current
// writer. Segments of every earlier version stay checked in, untouched, so
// TestGoldenSegments proves that a segment written by an older release still
// opens and reads the same.
var updateGolden = flag.Bool("update-golden", false, "write testdata/golden/v<formatVersion> with the current format")

// goldenID is the segment ID of every golden segment.
var goldenID = index.SegmentID{0x51, 0x75, 0x69, 0x63, 0x65, 0x67, 0x6f, 0x6c, 0x64, 0x65, 0x6e, 0x2d, 0x73, 0x65, 0x67, 0x31}

// goldenModel is the content of the golden segment written by format
// version v: docs with _id, a keyword field and _source; from version 2 on
// some docs carry a _routing, and there are 300 docs with a text field
// whose postings span several blocks (skip entries, freqs, positions,
// norms), so the postings layout of every version stays covered.
func goldenModel(v int) *codectest.Model {
	docs := 5
	if v >= 2 {
		docs = 300
	}
	m := &codectest.Model{Docs: docs}
	id := &codectest.Field{Info: index.FieldInfo{Name: index.IDField, Type: document.Keyword, IndexOptions: index.IndexDocs}}
	tag := &codectest.Field{Info: index.FieldInfo{Name: "tag", Number: 1, Type: document.Keyword, IndexOptions: index.IndexDocs, DocValues: index.DocValuesSorted},
		SortedValues: [][]byte{[]byte("even"), []byte("odd")}}
	var even, odd []codectest.Posting
	for d := range docs {
		key := []byte("doc-" + strconv.Itoa(d))
		id.Terms = append(id.Terms, codectest.Term{Term: key, Postings: []codectest.Posting{{Doc: d, Freq: 1}}})
		sd := index.StoredDoc{ID: key, Source: fmt.Appendf(nil, `{"n":%d,"tag":%q}`, d, []string{"even", "odd"}[d%2])}
		if v >= 2 && d%2 == 1 {
			sd.Routing = []byte("tenant-" + strconv.Itoa(d))
		}
		m.Stored = append(m.Stored, sd)
		if d%2 == 0 {
			even = append(even, codectest.Posting{Doc: d, Freq: 1})
		} else {
			odd = append(odd, codectest.Posting{Doc: d, Freq: 1})
		}
		tag.SortedOrds = append(tag.SortedOrds, d%2)
	}
	tag.Terms = []codectest.Term{{Term: []byte("even"), Postings: even}, {Term: []byte("odd"), Postings: odd}}
	m.Fields = []*codectest.Field{id, tag}
	if v >= 2 {
		m.Fields = append(m.Fields, goldenBody(docs))
	}
	m.Finish()
	return m
}

// goldenBody is a deterministic text field: "all" in every doc (three
// blocks: 128, 128 and a tail of 44), "third" in every third doc (one
// block), "one" in a single doc. Freqs and lengths vary independently, so
// a block's competitive (freq, norm) pairs are several.
func goldenBody(docs int) *codectest.Field {
	f := &codectest.Field{Info: index.FieldInfo{Name: "body", Number: 2, Type: document.Text, IndexOptions: index.IndexDocsFreqsPositions, HasNorms: true}}
	all := codectest.Term{Term: []byte("all")}
	third := codectest.Term{Term: []byte("third")}
	one := codectest.Term{Term: []byte("one"), Postings: []codectest.Posting{{Doc: 7, Freq: 2, Positions: []int{1, 4}}}}
	posting := func(d, freq int) codectest.Posting {
		p := codectest.Posting{Doc: d, Freq: freq}
		for i := range freq {
			p.Positions = append(p.Positions, 2*i+d%2)
		}
		return p
	}
	for d := range docs {
		all.Postings = append(all.Postings, posting(d, 1+(d*7)%11))
		if d%3 == 0 {
			third.Postings = append(third.Postings, posting(d, 1+(d*5)%4))
		}
		f.Norms = append(f.Norms, index.EncodeNorm(30+(d*37)%500))
	}
	f.Terms = []codectest.Term{all, one, third}
	return f
}

func goldenInfo(maxDoc int) *index.SegmentInfo {
	return &index.SegmentInfo{Name: "_0", MaxDoc: maxDoc, ID: goldenID}
}

func TestGoldenSegments(t *testing.T) {
	root := filepath.Join("testdata", "golden")
	if *updateGolden {
		dir := filepath.Join(root, "v"+strconv.Itoa(formatVersion))
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		fs, err := store.NewFSDirectory(dir)
		if err != nil {
			t.Fatal(err)
		}
		m := goldenModel(formatVersion)
		writeModel(t, New(Options{}), fs, goldenInfo(m.MaxDoc()), m)
		fs.Close()
	}
	versions, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, e := range versions {
		v, err := strconv.Atoi(strings.TrimPrefix(e.Name(), "v"))
		if err != nil {
			t.Fatalf("unexpected %s in %s", e.Name(), root)
		}
		seen[v] = true
		t.Run(e.Name(), func(t *testing.T) {
			sr := openGolden(t, v)
			codectest.Check(t, rand.New(rand.NewPCG(1, 2)), goldenModel(v), sr)
			if err := sr.CheckIntegrity(); err != nil {
				t.Fatal(err)
			}
		})
	}
	if !seen[formatVersion] {
		t.Errorf("no golden segment of the current format version %d: run go test -run TestGoldenSegments -update-golden", formatVersion)
	}
}

// openGolden opens the golden segment of format version v from a copy
// (opening must not touch checked-in files); it is closed with the test.
func openGolden(t *testing.T, v int) *segmentReader {
	t.Helper()
	dir := filepath.Join("testdata", "golden", "v"+strconv.Itoa(v))
	tmp := t.TempDir()
	files, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	info := goldenInfo(goldenModel(v).MaxDoc())
	info.Codec = Name
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(dir, f.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tmp, f.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
		info.Files = append(info.Files, f.Name())
	}
	fs, err := store.NewFSDirectory(tmp)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fs.Close() })
	sr, err := openSegment(fs, info)
	if err != nil {
		t.Fatalf("open a version %d segment: %v", v, err)
	}
	t.Cleanup(func() { sr.Close() })
	return sr
}
