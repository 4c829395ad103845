// Package sample generates realistic documents for a first session with
// Sluice, with nothing but the repository: product catalog entries (text
// to search, keywords to filter and aggregate on, prices, stock, ratings,
// dates) and web-server log lines. `sluice sample` writes them as JSON
// lines that `sluice bulk` loads.
//
// Generation is deterministic: the same kind, count and seed always give
// the same bytes, so a walkthrough's outputs can be quoted and checked.
// Text is drawn from fixed English word lists with skewed (Zipf-like)
// popularity, so some brands, categories and words are common and most
// are rare, as in real catalogs and logs. It is fast (hundreds of
// thousands of documents a second) and uses no network.
//
// The benchmark corpus is another thing: the shared Wikipedia extract
// (bench/corpus), of which this is no stand-in for measurements.
package sample

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
)

// Kind is a kind of sample document.
type Kind struct {
	// Name is the name `sluice sample` takes.
	Name string
	// Doc describes the documents in a sentence.
	Doc string
	// Mapping is the Elasticsearch mapping of the documents, as
	// `sluice index create --mapping` takes it.
	Mapping string
	// newGen returns the writer of document i (0-based) of a run.
	newGen func(rng *rand.Rand) func(w *docWriter, i int)
}

// Kinds are the kinds of documents there are, the default first.
var Kinds = []Kind{products, logs}

// KindNamed returns the kind called name.
func KindNamed(name string) (Kind, error) {
	var names []string
	for _, k := range Kinds {
		if k.Name == name {
			return k, nil
		}
		names = append(names, k.Name)
	}
	return Kind{}, fmt.Errorf("no sample kind %q (there are %s)", name, strings.Join(names, ", "))
}

// Write writes n documents of kind k generated from seed to w, one JSON
// object a line.
func Write(w io.Writer, k Kind, n int, seed uint64) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	dw := &docWriter{w: bw}
	gen := k.newGen(rand.New(rand.NewPCG(seed, 0x53a11ce)))
	for i := range n {
		gen(dw, i)
		if dw.err != nil {
			return dw.err
		}
	}
	return bw.Flush()
}

// docWriter writes one JSON object a line, fields in the order given.
type docWriter struct {
	w     *bufio.Writer
	first bool
	err   error
	buf   bytes.Buffer
	enc   *json.Encoder
}

func (d *docWriter) begin() { d.w.WriteByte('{'); d.first = true }

func (d *docWriter) end() {
	if _, err := d.w.WriteString("}\n"); err != nil && d.err == nil {
		d.err = err
	}
}

func (d *docWriter) key(k string) {
	if !d.first {
		d.w.WriteByte(',')
	}
	d.first = false
	d.str(k)
	d.w.WriteByte(':')
}

func (d *docWriter) str(s string) {
	if d.enc == nil {
		d.enc = json.NewEncoder(&d.buf)
		d.enc.SetEscapeHTML(false) // "Alder & Oak", not "Alder \u0026 Oak"
	}
	d.buf.Reset()
	_ = d.enc.Encode(s) // a string always encodes
	d.w.Write(bytes.TrimSuffix(d.buf.Bytes(), []byte("\n")))
}

func (d *docWriter) field(k string, v any) {
	d.key(k)
	switch x := v.(type) {
	case string:
		d.str(x)
	case []string:
		d.w.WriteByte('[')
		for i, s := range x {
			if i > 0 {
				d.w.WriteByte(',')
			}
			d.str(s)
		}
		d.w.WriteByte(']')
	default:
		fmt.Fprint(d.w, x)
	}
}

// skewed draws indices below n with Zipf-like skew: 0 is the most
// common, then 1, and so on.
type skewed struct {
	rng *rand.Rand
	cum []float64 // cumulative weights, normalized
}

func newSkewed(rng *rand.Rand, n int, skew float64) *skewed {
	s := &skewed{rng: rng, cum: make([]float64, n)}
	total := 0.0
	for i := range n {
		total += 1 / math.Pow(float64(i+1), skew)
		s.cum[i] = total
	}
	for i := range s.cum {
		s.cum[i] /= total
	}
	return s
}

func (s *skewed) index() int {
	i, _ := slices.BinarySearch(s.cum, s.rng.Float64())
	return min(i, len(s.cum)-1)
}

// picker draws strings from a list with skew.
type picker struct {
	*skewed
	list []string
}

func newPicker(rng *rand.Rand, list []string, skew float64) picker {
	return picker{newSkewed(rng, len(list), skew), list}
}

func (p picker) pick() string { return p.list[p.index()] }

// distinct draws up to n different entries.
func (p picker) distinct(n int) []string {
	out := []string{}
	for tries := 0; len(out) < n && tries < 4*n; tries++ {
		if s := p.pick(); !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}
