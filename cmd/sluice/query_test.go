package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestPrintQuery(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"query DSL, indented", []string{"search", "books", "--print-query", "--query", `{"bool":{"filter":{"term":{"genre":"fiction"}}}}`},
			"{\n  \"bool\": {\n    \"filter\": [\n      {\n        \"term\": {\n          \"genre\": \"fiction\"\n        }\n      }\n    ]\n  }\n}\n"},
		{"protobuf JSON shown as query DSL", []string{"search", "books", "--print-query", "--proto-json",
			`{"range": {"field": "year", "gte": {"longValue": 2000}}}`}, "{\n  \"range\": {\n    \"year\": {\n      \"gte\": 2000\n    }\n  }\n}\n"},
		{"field:value", []string{"search", "books", "title:go", "--print-query"}, "{\n  \"match\": {\n    \"title\": \"go\"\n  }\n}\n"},
		{"free text with --field", []string{"search", "books", "red shoes", "--field", "title", "--print-query"},
			"{\n  \"match\": {\n    \"title\": \"red shoes\"\n  }\n}\n"},
		{"nothing is match_all", []string{"search", "books", "--print-query"}, "{\n  \"match_all\": {}\n}\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// No cluster at this address: none of these needs one.
			out, err := run(t, append(tt.args, "--addr", "127.0.0.1:1")...)
			if err != nil || out != tt.want {
				t.Errorf("got %q, %v\nwant %q", out, err, tt.want)
			}
		})
	}
}

func TestQueryFlagErrors(t *testing.T) {
	p := filepath.Join(t.TempDir(), "q.json")
	if err := os.WriteFile(p, []byte(`{"match": {"title": {"query": "x", "fuzziness": 2}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"search", "books", "--query", `{"bool": {"mus": []}}`}, "--query: invalid query: bool.mus: [bool] unknown field [mus]"},
		{[]string{"search", "books", "--query", "@" + p}, "--query: invalid query: match.title.fuzziness: [match] query does not support [fuzziness]"},
		{[]string{"search", "books", "--proto-json", `{"term": {"f": "x"}}`}, "--proto-json: proto:"},
		{[]string{"search", "books", "title:x", "--query", `{"match_all": {}}`}, "give a query string or --query/--proto-json, not both"},
		{[]string{"search", "books", "--query", `{"match_all": {}}`, "--proto-json", `{}`}, "[proto-json query] were all set"},
		{[]string{"scroll", "books", "--query", `{"fuzzy": {"a": "b"}}`}, "--query: invalid query: fuzzy: unknown query [fuzzy]"},
		{[]string{"reindex", "--source", "a", "--dest", "b", "--query", `{"term": {"a": [1]}}`}, "--query: invalid query: term.a: [term] query does not support array of values"},
		{[]string{"search", "books", "--sort", `[{"year": {"missing": 0}}]`}, "--sort: invalid sort: [0].year.missing: [field_sort] missing must be _first or _last"},
		{[]string{"search", "books", "--sort", "year:up"}, "order must be asc or desc"},
		{[]string{"index", "create", "books", "--shards", "2", "--settings", `{"number_of_shards": 2}`}, "--shards and --settings both set it"},
		{[]string{"index", "create", "books", "--settings", `{"index": {"refresh_interval": "1.5s"}}`},
			"--settings: invalid settings: index.refresh_interval: failed to parse setting [index.refresh_interval] with value [1.5s] as a time value"},
		{[]string{"index", "create", "books", "--mapping", `{"properties": {"loc": {"type": "geo_point"}}}`},
			"--mapping: invalid mapping: properties.loc.type: No handler for type [geo_point] declared on field [loc]"},
	}
	for _, tt := range tests {
		_, err := run(t, append(tt.args, "--addr", "127.0.0.1:1")...)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: err = %v, want it to contain %q", tt.args, err, tt.want)
		}
	}
}

// syncBuffer is an output a running command writes while the test reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startDev runs `sluice dev` with one node in this process and returns the
// coordinator's address; the cluster stops when the test ends.
func startDev(t *testing.T) string {
	t.Helper()
	return startDevNodes(t, 1)
}

// devCLI runs the CLI against the coordinator at addr: cli returns what
// it printed and its error, must fails the test on an error.
func devCLI(t *testing.T, addr string) (cli func(...string) (string, error), must func(...string) string) {
	cli = func(args ...string) (string, error) {
		t.Helper()
		return run(t, append(args, "--addr", addr)...)
	}
	must = func(args ...string) string {
		t.Helper()
		out, err := cli(args...)
		if err != nil {
			t.Fatalf("sluice %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	return cli, must
}

// startDevNodes starts `sluice dev` with n data nodes and returns its
// coordinator's address.
func startDevNodes(t *testing.T, n int) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out syncBuffer
	cmd := newRootCmd()
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs([]string{"dev", "--nodes", strconv.Itoa(n), "--data-dir", t.TempDir(), "--listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0"})
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("sluice dev: %v", err)
		}
	})
	addrRE := regexp.MustCompile(`connect here\): (\S+)`)
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if m := addrRE.FindStringSubmatch(out.String()); m != nil {
			return m[1]
		}
		select {
		case err := <-done:
			done <- err
			t.Fatalf("sluice dev ended: %v\n%s", err, out.String())
		default:
		}
	}
	t.Fatalf("sluice dev did not start:\n%s", out.String())
	return ""
}

// hitIDs reads the _id of each hit line, sorted.
func hitIDs(t *testing.T, out string) []string {
	ids := hitOrder(t, out)
	slices.Sort(ids)
	return ids
}

// hitOrder reads the _id of each hit line, in order.
func hitOrder(t *testing.T, out string) []string {
	t.Helper()
	var ids []string
	for line := range strings.Lines(out) {
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var h struct {
			ID string `json:"_id"`
		}
		if err := json.Unmarshal([]byte(line), &h); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		ids = append(ids, h.ID)
	}
	return ids
}

// TestQueryDSLAgainstACluster runs the CLI against `sluice dev`: the same
// query DSL selects the same documents in search, scroll and reindex, and
// protobuf JSON still works.
func TestQueryDSLAgainstACluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	addr := startDev(t)
	cli := func(args ...string) string {
		t.Helper()
		out, err := run(t, append(args, "--addr", addr)...)
		if err != nil {
			t.Fatalf("sluice %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	cli("index", "create", "books", "--shards", "2", "--wait", "--mapping",
		`{"dynamic": "strict", "properties": {"id": {"type": "keyword"}, "title": {"type": "text"}, "year": {"type": "long"}, "meta": {"properties": {"genre": {"type": "keyword"}}}}}`)
	docs := filepath.Join(t.TempDir(), "books.jsonl")
	if err := os.WriteFile(docs, []byte(`{"id": "1", "title": "Go in Action", "year": 2015, "meta": {"genre": "tech"}}
{"id": "2", "title": "The Go Programming Language", "year": 2015, "meta": {"genre": "tech"}}
{"id": "3", "title": "Dune", "year": 1965, "meta": {"genre": "fiction"}}
{"id": "4", "title": "Go Tell It on the Mountain", "year": 1953, "meta": {"genre": "fiction"}}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	cli("bulk", docs, "--index", "books", "--refresh", "wait_for")

	dsl := `{"bool": {"must": {"match": {"title": "go"}}, "filter": [{"range": {"year": {"gte": 2000}}}], "must_not": {"ids": {"values": ["2"]}}}}`
	if got := hitIDs(t, cli("search", "books", "--query", dsl)); !slices.Equal(got, []string{"1"}) {
		t.Errorf("search --query: %v, want [1]", got)
	}
	proto := `{"bool": {"must": [{"match": {"field": "title", "query": "go"}}], "filter": [{"range": {"field": "year", "gte": {"longValue": 2000}}}]}}`
	if got := hitIDs(t, cli("search", "books", "--proto-json", proto)); !slices.Equal(got, []string{"1", "2"}) {
		t.Errorf("search --proto-json: %v, want [1 2]", got)
	}
	// Free text expands to every text field; --print-query shows how.
	if got := cli("search", "books", "go", "--print-query"); !strings.Contains(got, `"should": [`) || !strings.Contains(got, `"title": "go"`) {
		t.Errorf("free text --print-query:\n%s", got)
	}
	if got := hitIDs(t, cli("search", "books", "--query", `{"term": {"meta.genre": "fiction"}}`)); !slices.Equal(got, []string{"3", "4"}) {
		t.Errorf("term on an object's field: %v, want [3 4]", got)
	}
	if got := hitOrder(t, cli("search", "books", "--sort", `[{"year": "asc"}, {"id": {"order": "desc"}}]`)); !slices.Equal(got, []string{"4", "3", "2", "1"}) {
		t.Errorf("--sort as JSON: %v, want [4 3 2 1]", got)
	}
	if got := hitOrder(t, cli("search", "books", "--sort", "year:desc", "--sort", `"id"`)); !slices.Equal(got, []string{"1", "2", "3", "4"}) {
		t.Errorf("--sort mixed forms: %v, want [1 2 3 4]", got)
	}
	scrolled := cli("scroll", "books", "--query", `{"range": {"year": {"lt": 1960}}}`)
	if got := hitIDs(t, scrolled); !slices.Equal(got, []string{"4"}) {
		t.Errorf("scroll --query: %v, want [4]", got)
	}
	if strings.Contains(scrolled, "_score") {
		t.Errorf("a scrolled document has no score:\n%s", scrolled)
	}
	cli("reindex", "--source", "books", "--dest", "fiction", "--query", `{"term": {"meta.genre": {"value": "fiction"}}}`, "--wait")
	cli("refresh", "fiction")
	if got := hitIDs(t, cli("search", "fiction")); !slices.Equal(got, []string{"3", "4"}) {
		t.Errorf("reindex --query copied %v, want [3 4]", got)
	}
	// A mapping printed by index get --mapping creates the same mapping.
	mapping := cli("index", "get", "books", "--mapping")
	var compact bytes.Buffer
	if err := json.Compact(&compact, []byte(mapping)); err != nil {
		t.Fatalf("%v\n%s", err, mapping)
	}
	if want := `{"dynamic":"strict","properties":{"id":{"type":"keyword"},"meta":{"properties":{"genre":{"type":"keyword"}}},"title":{"type":"text"},"year":{"type":"long"}}}`; compact.String() != want {
		t.Errorf("index get --mapping:\n%s\nwant %s", compact.String(), want)
	}
	mappingFile := filepath.Join(t.TempDir(), "mapping.json")
	if err := os.WriteFile(mappingFile, []byte(mapping), 0o644); err != nil {
		t.Fatal(err)
	}
	cli("index", "create", "books-v2", "--mapping", "@"+mappingFile)
	if got := cli("index", "get", "books-v2", "--mapping"); got != mapping {
		t.Errorf("books-v2's mapping:\n%s\nwant\n%s", got, mapping)
	}
	cli("index", "create", "logs", "--replicas", "0", "--settings",
		`{"index": {"number_of_shards": 2, "refresh_interval": "30s", "translog": {"durability": "async"}}}`)
	var info struct {
		Settings struct {
			Shards     int    `json:"number_of_shards"`
			Refresh    string `json:"refresh_interval"`
			Durability string `json:"translog_durability"`
		}
	}
	if err := json.Unmarshal([]byte(cli("index", "get", "logs")), &info); err != nil {
		t.Fatal(err)
	}
	if s := info.Settings; s.Shards != 2 || s.Refresh != "30s" || s.Durability != "async" {
		t.Errorf("index created with --settings: %+v", s)
	}
	// The cluster checks what the parser cannot: the field's type.
	if out, err := run(t, "search", "books", "--query", `{"range": {"year": {"gte": "soon"}}}`, "--addr", addr); err == nil ||
		!strings.Contains(err.Error(), "InvalidArgument") {
		t.Errorf("a range bound the field cannot read: %v\n%s", err, out)
	}
}
