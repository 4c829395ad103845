package main

import (
	"bytes"
	"os"
	"path/filepath"
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
