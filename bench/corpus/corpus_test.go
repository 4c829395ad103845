package corpus

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

func TestGenerateDeterministicAndWellFormed(t *testing.T) {
	a, b := Generate(200, 3), Generate(200, 3)
	ids := map[string]bool{}
	for i := range a {
		if a[i].ID != b[i].ID || string(a[i].Source) != string(b[i].Source) {
			t.Fatalf("doc %d differs between runs", i)
		}
		if ids[a[i].ID] {
			t.Fatalf("duplicate id %s", a[i].ID)
		}
		ids[a[i].ID] = true
		if len(a[i].Body) < 1024 || len(a[i].Body) > 1100 {
			t.Fatalf("body length %d", len(a[i].Body))
		}
		var v map[string]string
		if err := json.Unmarshal(a[i].Source, &v); err != nil || v["id"] != a[i].ID || v["body"] != a[i].Body {
			t.Fatalf("source of doc %d does not round-trip: %v", i, err)
		}
	}
	if string(Generate(1, 4)[0].Source) == string(a[0].Source) {
		t.Fatal("seed has no effect")
	}
}

func TestReadPlainAndZstd(t *testing.T) {
	docs := Generate(50, 1)
	dir := t.TempDir()
	plain := filepath.Join(dir, "c.jsonl")
	f, err := os.Create(plain)
	if err != nil {
		t.Fatal(err)
	}
	zf, err := os.Create(plain + ".zst")
	if err != nil {
		t.Fatal(err)
	}
	zw, err := zstd.NewWriter(zf)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		line := append(append([]byte(nil), d.Source...), '\n')
		f.Write(line)
		zw.Write(line)
	}
	f.Close()
	zw.Close()
	zf.Close()
	for _, p := range []string{plain, plain + ".zst"} {
		got, desc, err := Load(p, 20)
		if err != nil || len(got) != 20 || desc == "" {
			t.Fatalf("%s: %d docs, %v", p, len(got), err)
		}
		for i := range got {
			if got[i].ID != docs[i].ID || got[i].Body != docs[i].Body || string(got[i].Source) != string(docs[i].Source) {
				t.Fatalf("%s: doc %d differs", p, i)
			}
		}
		all, _, err := Load(p, 0)
		if err != nil || len(all) != 50 {
			t.Fatalf("%s: load all: %d, %v", p, len(all), err)
		}
	}
}

func TestBadLineIsReportedWithItsNumber(t *testing.T) {
	p := filepath.Join(t.TempDir(), "bad.jsonl")
	os.WriteFile(p, []byte("{\"id\":\"1\",\"body\":\"x\"}\n{\"id\": oops}\n"), 0o644)
	r, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	_, err = r.Next()
	if err == nil || errors.Is(err, io.EOF) || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("want a line-2 error, got %v", err)
	}
}
