package sample

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/sluice-search/sluice/client"
	"github.com/sluice-search/sluice/esjson"
)

func generate(t *testing.T, k Kind, n int, seed uint64) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := Write(&buf, k, n, seed); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestDocumentsFitTheirMapping: every line is a JSON object with a unique
// id and exactly the fields of the kind's mapping, each of a JSON type
// its mapping type reads.
func TestDocumentsFitTheirMapping(t *testing.T) {
	for _, k := range Kinds {
		t.Run(k.Name, func(t *testing.T) {
			m, err := esjson.ParseMapping([]byte(k.Mapping))
			if err != nil {
				t.Fatal(err)
			}
			fields := slices.Sorted(maps.Keys(m.GetProperties()))
			ids := map[string]bool{}
			sc := bufio.NewScanner(bytes.NewReader(generate(t, k, 5000, 3)))
			n := 0
			for sc.Scan() {
				n++
				var doc map[string]any
				if err := json.Unmarshal(sc.Bytes(), &doc); err != nil {
					t.Fatalf("line %d: %v: %s", n, err, sc.Bytes())
				}
				if got := slices.Sorted(maps.Keys(doc)); !slices.Equal(got, fields) {
					t.Fatalf("line %d has fields %v, the mapping %v", n, got, fields)
				}
				id := doc["id"].(string)
				if ids[id] {
					t.Fatalf("line %d: id %s again", n, id)
				}
				ids[id] = true
				for name, v := range doc {
					want := map[string]string{"text": "string", "keyword": "string", "date": "string", "long": "number",
						"double": "number", "boolean": "bool"}[client.EnumName(m.GetProperties()[name].GetType())]
					got := fmt.Sprintf("%T", v)
					if arr, ok := v.([]any); ok && name == "tags" {
						for _, e := range arr {
							if _, ok := e.(string); !ok {
								t.Fatalf("line %d: %s holds %v", n, name, v)
							}
						}
						continue
					}
					if map[string]string{"string": "string", "float64": "number", "bool": "bool"}[got] != want {
						t.Fatalf("line %d: %s is %v (%s), its mapping wants a %s", n, name, v, got, want)
					}
				}
			}
			if n != 5000 {
				t.Errorf("%d lines, want 5000", n)
			}
		})
	}
}

// TestDeterministic: the same kind, count and seed give the same bytes
// (README quotes them); another seed gives others; a prefix of a longer
// run is the shorter run.
func TestDeterministic(t *testing.T) {
	for _, k := range Kinds {
		a, b := generate(t, k, 1000, 1), generate(t, k, 1000, 1)
		if !bytes.Equal(a, b) {
			t.Errorf("%s: two runs differ", k.Name)
		}
		if bytes.Equal(a, generate(t, k, 1000, 2)) {
			t.Errorf("%s: seeds 1 and 2 give the same documents", k.Name)
		}
		if !bytes.HasPrefix(generate(t, k, 2000, 1), a) {
			t.Errorf("%s: 1000 documents are not the start of 2000", k.Name)
		}
	}
}

// TestGolden pins the documents of seed 1, so a change to them (which
// changes the README's outputs) is deliberate.
func TestGolden(t *testing.T) {
	for _, tc := range []struct {
		kind, first, sum string
	}{
		{"products", `{"id":"p000001","sku":"OUT-NO-4854","title":"Windproof Waxed Canvas Sleeping Bag",`,
			"98e233f56b2b6a252440c117c43e4911792f2596aaaefd9b8f773fb3ddfe0f64"},
		{"logs", `{"id":"l0000001","timestamp":"2026-03-02T08:00:00.271Z","level":"info",`,
			"6cce60edf8ee79888c65814d149659921f860d9d7691ba6653209ded8c664059"},
	} {
		k, err := KindNamed(tc.kind)
		if err != nil {
			t.Fatal(err)
		}
		out := generate(t, k, 20000, 1)
		if !bytes.HasPrefix(out, []byte(tc.first)) {
			t.Errorf("%s starts %.120s, want %s", tc.kind, out, tc.first)
		}
		if sum := fmt.Sprintf("%x", sha256.Sum256(out)); sum != tc.sum {
			t.Errorf("%s: sha256 %s, want %s", tc.kind, sum, tc.sum)
		}
	}
	if _, err := KindNamed("wiki"); err == nil || err.Error() != `no sample kind "wiki" (there are products, logs)` {
		t.Errorf("unknown kind: %v", err)
	}
}

func BenchmarkWrite(b *testing.B) {
	for _, k := range Kinds {
		b.Run(k.Name, func(b *testing.B) {
			var buf bytes.Buffer
			for b.Loop() {
				buf.Reset()
				if err := Write(&buf, k, 1000, 1); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*1000)/b.Elapsed().Seconds(), "docs/s")
		})
	}
}
