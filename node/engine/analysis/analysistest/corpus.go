// Package analysistest gives tests and benchmarks of the analysis and
// mapping packages real text: the first documents of the shared Wikipedia
// corpus (../shared/corpus/enwiki-1k.jsonl.zst next to the repository, or
// the file named by $SLUICE_CORPUS).
package analysistest

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// Doc is one corpus line: the raw JSON and its decoded fields.
type Doc struct {
	JSON  []byte
	ID    string `json:"id"`
	Title string `json:"title"`
	Body  string `json:"body"`
}

// Path returns the corpus file to read, or "" if there is none.
func Path() string {
	if p := os.Getenv("SLUICE_CORPUS"); p != "" {
		return p
	}
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return ""
	}
	// This file is node/engine/analysis/analysistest/corpus.go in the
	// repository; the corpus lives next to the repository.
	p := filepath.Join(filepath.Dir(file), "..", "..", "..", "..", "..", "shared", "corpus", "enwiki-1k.jsonl.zst")
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

// Corpus returns the first n documents, skipping tb when the corpus is not
// available (benchmarks need real text; unit tests must not depend on it).
func Corpus(tb testing.TB, n int) []Doc {
	tb.Helper()
	p := Path()
	if p == "" {
		tb.Skip("corpus not found; set SLUICE_CORPUS")
	}
	f, err := os.Open(p)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	zr, err := zstd.NewReader(f)
	if err != nil {
		tb.Fatal(err)
	}
	defer zr.Close()
	sc := bufio.NewScanner(zr)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	docs := make([]Doc, 0, n)
	for len(docs) < n && sc.Scan() {
		d := Doc{JSON: append([]byte(nil), sc.Bytes()...)}
		if err := json.Unmarshal(d.JSON, &d); err != nil {
			tb.Fatalf("corpus line %d: %v", len(docs)+1, err)
		}
		docs = append(docs, d)
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return docs
}
