package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// TestFailuresInInputOrder: failures reported out of order, from several
// goroutines, print in input order, the first max of them.
func TestFailuresInInputOrder(t *testing.T) {
	f := &failures{max: 3}
	var wg sync.WaitGroup
	for _, line := range []int{9, 4, 7, 1, 12, 5} {
		wg.Go(func() { f.add(line, "bad") })
	}
	wg.Wait()
	var out bytes.Buffer
	f.print(&out)
	want := "line 1: bad\nline 4: bad\nline 5: bad\n(3 more failed lines not shown; --max-errors shows more)\n"
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}

// TestBulkReportsFailures runs sluice bulk against `sluice dev`: one line
// per failed document, in input order, no blank lines; an unknown index is
// one message.
func TestBulkReportsFailures(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	addr := startDev(t)
	if out, err := run(t, "index", "create", "nums", "--mapping", `{"properties": {"n": {"type": "long"}}}`, "--addr", addr); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var in strings.Builder
	for i := range 3000 {
		switch i {
		case 10:
			in.WriteString("[1, 2]\n")
		case 500:
			in.WriteString(`{"n": 1}` + "\n")
		case 1200, 2999:
			in.WriteString(`{"id": "bad", "n": "many"}` + "\n")
		case 2000:
			in.WriteString(`{"id": "x", ` + "\n")
		default:
			in.WriteString(`{"id": "d` + strconv.Itoa(i) + `", "n": ` + strconv.Itoa(i) + "}\n")
		}
	}
	file := filepath.Join(t.TempDir(), "nums.jsonl")
	if err := os.WriteFile(file, []byte(in.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	// Small batches on several workers: the cluster answers out of order.
	out, err := run(t, "bulk", file, "--index", "nums", "--batch-docs", "50", "--workers", "4", "--addr", addr)
	if err == nil || err.Error() != "5 documents failed" {
		t.Errorf("error %v", err)
	}
	var failed []string
	for line := range strings.Lines(out) {
		if strings.TrimSpace(line) == "" {
			t.Errorf("a blank line in\n%s", out)
		}
		if strings.HasPrefix(line, "line ") {
			failed = append(failed, line)
		}
	}
	// The cluster's reason ends with what is wrong with the value.
	const notLong = `failed to parse "many" as [long]` + "\n"
	want := []struct{ prefix, suffix string }{
		{"line 11: not a JSON object but an array\n", ""},
		{"line 501: no \"id\" field\n", ""},
		{"line 1201: id \"bad\": ", notLong},
		{"line 2001: invalid JSON at byte 11: unexpected end of JSON input\n", ""},
		{"line 3000: id \"bad\": ", notLong},
	}
	if len(failed) != len(want) {
		t.Fatalf("failed lines:\n%s", out)
	}
	for i, w := range want {
		if !strings.HasPrefix(failed[i], w.prefix) || !strings.HasSuffix(failed[i], w.suffix) {
			t.Errorf("failure %d: %q, want %q...%q", i, failed[i], w.prefix, w.suffix)
		}
	}
	if !strings.Contains(out, "3000 documents: 2995 created, 0 updated, 5 failed") {
		t.Errorf("summary:\n%s", out)
	}

	out, err = run(t, "bulk", file, "--index", "nope", "--addr", addr)
	if err == nil || err.Error() != "no such index [nope]; create it first: sluice index create nope" || out != "" {
		t.Errorf("unknown index: %v\n%s", err, out)
	}
}

func TestUpdateFields(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string // "" : an error
	}{
		{[]string{"price=12.5", "title=A Title", "ok=true", `tags=["a","b"]`}, `{"ok":true,"price":12.5,"tags":["a","b"],"title":"A Title"}`},
		{[]string{"a.b=1", "a.c=x", "d="}, `{"a":{"b":1,"c":"x"},"d":""}`},
		{[]string{`s="quoted"`}, `{"s":"quoted"}`},
		{[]string{"noequals"}, ""},
		{[]string{"=1"}, ""},
		{[]string{"a=1", "a=2"}, ""},
		{[]string{"a=1", "a.b=2"}, ""},
	} {
		got, err := updateFields(tt.args)
		if tt.want == "" {
			if err == nil {
				t.Errorf("updateFields(%q) = %s, want an error", tt.args, got)
			}
			continue
		}
		if err != nil || string(got) != tt.want {
			t.Errorf("updateFields(%q) = %s, %v; want %s", tt.args, got, err, tt.want)
		}
	}
}

// TestUpdateCmd runs sluice update against `sluice dev`: by id (a partial
// update that re-indexes) and by query in place, then reads the results.
func TestUpdateCmd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	addr := startDev(t)
	mustRun := func(args ...string) string {
		t.Helper()
		out, err := run(t, append(args, "--addr", addr)...)
		if err != nil {
			t.Fatalf("sluice %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	mustRun("index", "create", "products", "--mapping", `{"properties": {"title": {"type": "text"}, "brand": {"type": "keyword"},
		"price": {"type": "double", "index": false, "doc_values": true}}}`)
	var in strings.Builder
	for i := range 20 {
		in.WriteString(`{"id": "p` + strconv.Itoa(i) + `", "title": "product", "brand": "` + []string{"acme", "other"}[i%2] + `", "price": ` + strconv.Itoa(i) + "}\n")
	}
	file := filepath.Join(t.TempDir(), "p.jsonl")
	if err := os.WriteFile(file, []byte(in.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	mustRun("bulk", file, "--index", "products", "--refresh", "wait_for")

	if out := mustRun("update", "products", "--id", "p3", "--id", "p5", "title=renamed", "--wait"); !strings.Contains(out, "2 updated, 0 unchanged, 0 failed") {
		t.Errorf("update by id: %s", out)
	}
	if out := mustRun("get", "products", "p3"); !strings.Contains(out, `"title": "renamed"`) && !strings.Contains(out, `"title":"renamed"`) {
		t.Errorf("p3 after the partial update: %s", out)
	}
	out := mustRun("update", "products", "--in-place", "--query", `{"term": {"brand": "acme"}}`, "price=1000.5", "--wait")
	if !strings.Contains(out, "10 updated, 0 unchanged, 0 failed") {
		t.Errorf("update by query in place: %s", out)
	}
	// The acme products (even ids) sort first by their new price.
	out = mustRun("search", "products", "--sort", "price:desc", "--size", "10")
	for i := 0; i < 20; i += 2 {
		if !strings.Contains(out, `"p`+strconv.Itoa(i)+`"`) {
			t.Errorf("p%d is not among the 10 highest prices:\n%s", i, out)
		}
	}
	// A task that outlasts --timeout goes on: the command said its id
	// before it stopped waiting.
	out, err := run(t, "update", "products", "--in-place", "--query", `{"term": {"brand": "other"}}`, "price=7",
		"--requests-per-second", "2", "--timeout", "1s", "--addr", addr)
	if err == nil || !regexp.MustCompile(`task \S+ started .*sluice tasks get \S+ --wait`).MatchString(out) {
		t.Errorf("a throttled update by query past --timeout: %v\n%s", err, out)
	}
	if _, err := run(t, "update", "products", "--in-place", "--id", "p1", "title=x", "--addr", addr); err == nil {
		t.Error("an in-place update of a text field succeeded")
	}
}
