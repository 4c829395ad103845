package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

func TestInlineOrFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "q.json")
	if err := os.WriteFile(p, []byte(`{"match_all":{}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		value, want, err string
	}{
		{value: `{"term":{}}`, want: `{"term":{}}`},
		{value: "@" + p, want: `{"match_all":{}}`},
		{value: "@" + p + ".missing", err: "--query: open"},
	}
	for _, tc := range tests {
		got, err := inlineOrFile("query", tc.value)
		if tc.err != "" {
			if err == nil || !strings.HasPrefix(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want prefix %q", tc.value, err, tc.err)
			}
			continue
		}
		if err != nil || string(got) != tc.want {
			t.Errorf("%q: got %q, %v", tc.value, got, err)
		}
	}
}

func TestPrintHitsRouting(t *testing.T) {
	resp := &sluicev1.SearchResponse{Total: &sluicev1.TotalHits{Value: 2}, Hits: []*sluicev1.Hit{
		{Index: "logs", Id: "a", Score: 1.5, Routing: "tenant-7", Source: []byte(`{"x":1}`)},
		{Index: "logs", Id: "b", Score: 1, Source: []byte(`{"x":2}`)},
	}}
	var out bytes.Buffer
	if err := printHits(&out, io.Discard, resp); err != nil {
		t.Fatal(err)
	}
	want := `{"_index":"logs","_id":"a","_score":1.5,"_routing":"tenant-7","_source":{"x":1}}
{"_index":"logs","_id":"b","_score":1,"_source":{"x":2}}
`
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}

func TestLineKeys(t *testing.T) {
	for _, tt := range []struct {
		line, idField, routingField string
		id, routing, err            string
	}{
		{`{"id":"a1","t":"x"}`, "id", "", "a1", "", ""},
		{`{"isbn":978,"t":"x"}`, "isbn", "", "978", "", ""},
		{`{"id":"a1","tenant":"t7"}`, "id", "tenant", "a1", "t7", ""},
		{`{"id":"a1","tenant":42}`, "id", "tenant", "a1", "42", ""},
		{`{"id":"a1"}`, "id", "tenant", "a1", "", ""}, // no routing: routed by id
		{`{"tenant":"t7"}`, "", "tenant", "", "t7", ""},
		{`{"t":"x"}`, "id", "", "", "", `no "id" field`},
		{`{"id":"a1","tenant":{"x":1}}`, "id", "tenant", "", "", `field "tenant" is not a string or a number`},
		{`[1,2]`, "id", "", "", "", "not a JSON object"},
	} {
		id, routing, err := lineKeys([]byte(tt.line), tt.idField, tt.routingField)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: err %v, want %q", tt.line, err, tt.err)
			}
			continue
		}
		if err != nil || id != tt.id || routing != tt.routing {
			t.Errorf("%s: (%q, %q, %v), want (%q, %q)", tt.line, id, routing, err, tt.id, tt.routing)
		}
	}
}
