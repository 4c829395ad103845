// Package corpus reads benchmark documents: the shared Wikipedia corpus
// (JSON lines {"id","title","body"}, optionally zstd-compressed) or, when no
// file is at hand, a deterministic generated corpus of the same shape.
package corpus

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/klauspost/compress/zstd"

	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// Doc is one benchmark document. Source is its JSON line, which is what is
// indexed as _source.
type Doc struct {
	ID     string
	Title  string
	Body   string
	Source []byte
}

// Mapping is the mapping of the corpus's documents: id a keyword, title
// and body text.
func Mapping() *sluicev1.Mapping {
	return &sluicev1.Mapping{Properties: map[string]*sluicev1.FieldMapping{
		"id":    {Type: sluicev1.FieldType_FIELD_TYPE_KEYWORD},
		"title": {Type: sluicev1.FieldType_FIELD_TYPE_TEXT},
		"body":  {Type: sluicev1.FieldType_FIELD_TYPE_TEXT},
	}}
}

// TextBytes is the plain-text size (title + body), the unit of MB/s figures,
// as in the peers' harnesses.
func (d Doc) TextBytes() int { return len(d.Title) + len(d.Body) }

// DefaultPath finds ../shared/corpus/enwiki-1k.jsonl.zst (or the unpacked
// .jsonl) relative to dir or its parents; "" if there is none.
func DefaultPath(dir string) string {
	for d := dir; ; d = filepath.Dir(d) {
		for _, name := range []string{"enwiki-1k.jsonl", "enwiki-1k.jsonl.zst"} {
			p := filepath.Join(d, "..", "shared", "corpus", name)
			if _, err := os.Stat(p); err == nil {
				return filepath.Clean(p)
			}
		}
		if filepath.Dir(d) == d {
			return ""
		}
	}
}

// Reader streams documents from a JSON-lines file.
type Reader struct {
	f    *os.File
	zr   *zstd.Decoder
	sc   *bufio.Scanner
	line int
}

// Open opens a .jsonl or .jsonl.zst file.
func Open(path string) (*Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open corpus: %w", err)
	}
	r := &Reader{f: f}
	var src io.Reader = f
	if strings.HasSuffix(path, ".zst") {
		r.zr, err = zstd.NewReader(f)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("open corpus %s: %w", path, err)
		}
		src = r.zr
	}
	r.sc = bufio.NewScanner(src)
	r.sc.Buffer(make([]byte, 1<<20), 64<<20)
	return r, nil
}

// Next returns the next document, or io.EOF.
func (r *Reader) Next() (Doc, error) {
	for r.sc.Scan() {
		r.line++
		line := bytes.TrimSpace(r.sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var v struct{ ID, Title, Body string }
		if err := json.Unmarshal(line, &v); err != nil {
			return Doc{}, fmt.Errorf("corpus line %d: %w", r.line, err)
		}
		if v.ID == "" {
			return Doc{}, fmt.Errorf("corpus line %d: no id", r.line)
		}
		return Doc{ID: v.ID, Title: v.Title, Body: v.Body, Source: append([]byte(nil), line...)}, nil
	}
	if err := r.sc.Err(); err != nil {
		return Doc{}, fmt.Errorf("corpus line %d: %w", r.line+1, err)
	}
	return Doc{}, io.EOF
}

// Close releases the file.
func (r *Reader) Close() error {
	if r.zr != nil {
		r.zr.Close()
	}
	return r.f.Close()
}

// Load reads up to limit documents (all if limit <= 0) from path, or
// generates limit documents (default 50,000) with seed 1 when path is "".
// It reports which it did in the returned description.
func Load(path string, limit int) (docs []Doc, desc string, err error) {
	if path == "" {
		n := limit
		if n <= 0 {
			n = 50_000
		}
		return Generate(n, 1), fmt.Sprintf("generated corpus (%d docs, seed 1)", n), nil
	}
	r, err := Open(path)
	if err != nil {
		return nil, "", err
	}
	defer r.Close()
	for limit <= 0 || len(docs) < limit {
		d, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, "", err
		}
		docs = append(docs, d)
	}
	return docs, fmt.Sprintf("%s (first %d docs)", filepath.Base(path), len(docs)), nil
}

// SourceBytes is the total size of docs' JSON sources.
func SourceBytes(docs []Doc) int64 {
	var n int64
	for _, d := range docs {
		n += int64(len(d.Source))
	}
	return n
}
