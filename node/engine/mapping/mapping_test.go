package mapping

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/sluice-search/sluice/node/engine/document"
)

func mustParse(t testing.TB, js string) *Mapping {
	t.Helper()
	m, err := Parse([]byte(js))
	if err != nil {
		t.Fatalf("Parse(%s): %v", js, err)
	}
	return m
}

func TestParseMapping(t *testing.T) {
	m := mustParse(t, `{"dynamic": "strict", "properties": {
		"title": {"type": "text", "analyzer": "cjk"},
		"tag": {"type": "keyword", "doc_values": false},
		"n": {"type": "long", "index": "false"},
		"price": {"type": "double", "store": true},
		"at": {"type": "date"},
		"ok": {"type": "boolean"},
		"user": {"properties": {"name": {"type": "keyword"}, "geo": {"type": "object", "properties": {"lat": {"type": "double"}}}}},
		"a.b": {"type": "long"},
		"empty": {"type": "object"}
	}}`)
	if m.Dynamic() != DynamicStrict {
		t.Errorf("dynamic %v", m.Dynamic())
	}
	want := map[string]Field{
		"title":        {Type: document.Text, Analyzer: "cjk", Index: true},
		"tag":          {Type: document.Keyword, Index: true},
		"n":            {Type: document.Long, DocValues: true},
		"price":        {Type: document.Double, Index: true, DocValues: true, Store: true},
		"at":           NewField(document.Date),
		"ok":           NewField(document.Boolean),
		"user.name":    NewField(document.Keyword),
		"user.geo.lat": NewField(document.Double),
		"a.b":          NewField(document.Long),
	}
	if got := strings.Join(m.Names(), ","); got != "a.b,at,n,ok,price,tag,title,user.geo.lat,user.name" {
		t.Fatalf("names %s", got)
	}
	for name, w := range want {
		if got, ok := m.Field(name); !ok || got != w {
			t.Errorf("%s: got %+v want %+v", name, got, w)
		}
	}
	// Round trip through the ES shape.
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	back := mustParse(t, string(out))
	if back.Dynamic() != m.Dynamic() || back.Len() != m.Len() {
		t.Fatalf("round trip %s", out)
	}
	for _, name := range m.Names() {
		a, _ := m.Field(name)
		b, _ := back.Field(name)
		if a != b {
			t.Errorf("round trip %s: %+v != %+v (%s)", name, a, b, out)
		}
	}
	if !strings.Contains(string(out), `"user":{"properties":{"geo":{"properties":{"lat":{"type":"double"}}}`) {
		t.Errorf("not nested: %s", out)
	}
}

func TestParseMappingErrors(t *testing.T) {
	tests := []struct{ js, field, reason string }{
		{`{"properties": {"a": {"type": "geo_point"}}}`, "a", "no handler for type"},
		{`{"properties": {"a": {}}}`, "a", "no [type]"},
		{`{"properties": {"a": {"type": "text", "analyzer": "nope"}}}`, "a", "analyzer [nope]"},
		{`{"properties": {"a": {"type": "keyword", "analyzer": "standard"}}}`, "a", "only allowed on [text]"},
		{`{"properties": {"a": {"type": "text", "doc_values": true}}}`, "a", "doc_values"},
		{`{"properties": {"a": {"type": "long", "boost": 2}}}`, "a", "unknown parameter [boost]"},
		{`{"properties": {"a": {"type": "long", "index": "yes"}}}`, "a", "[index]"},
		{`{"properties": {"o": {"properties": {"b": {"type": "nope"}}}}}`, "o.b", "no handler"},
		{`{"properties": {"o": {"type": "long", "properties": {}}}}`, "o", "only allowed on objects"},
		{`{"properties": {"a": {"type": "long"}, "a.b": {"type": "long"}}}`, "a", "as an object"},
		{`{"properties": {"a.b": {"type": "long"}, "a": {"properties": {"b": {"type": "long"}}}}}`, "a.b", "mapped twice"},
		{`{"properties": {"_id": {"type": "keyword"}}}`, "_id", "metadata field"},
		{`{"properties": {"a..b": {"type": "keyword"}}}`, "a..b", "empty path segment"},
		{`{"properties": {"a": 1}}`, "a", "expected an object"},
		{`{"dynamic": "sometimes"}`, "", "[dynamic] must be"},
		{`{"settings": {}}`, "", "unknown mapping parameter"},
		{`{"properties": `, "", "unexpected EOF"},
	}
	for _, tt := range tests {
		_, err := Parse([]byte(tt.js))
		var fe *FieldError
		if !errors.As(err, &fe) || !errors.Is(err, ErrInvalidMapping) {
			t.Errorf("%s: got %v, want an invalid-mapping FieldError", tt.js, err)
			continue
		}
		if fe.Field != tt.field || !strings.Contains(fe.Reason, tt.reason) {
			t.Errorf("%s: got field %q reason %q, want %q / %q", tt.js, fe.Field, fe.Reason, tt.field, tt.reason)
		}
	}
}

func TestMerge(t *testing.T) {
	base := mustParse(t, `{"dynamic": "strict", "properties": {"a": {"type": "long"}, "o": {"properties": {"x": {"type": "text"}}}}}`)
	tests := []struct {
		name, update, field, reason string
		wantNames                   string
		wantDynamic                 Dynamic
	}{
		{name: "add", update: `{"properties": {"b": {"type": "keyword"}, "o.y": {"type": "date"}}}`,
			wantNames: "a,b,o.x,o.y", wantDynamic: DynamicStrict},
		{name: "same field again", update: `{"properties": {"a": {"type": "long"}}}`,
			wantNames: "a,o.x", wantDynamic: DynamicStrict},
		{name: "dynamic changes", update: `{"dynamic": false}`, wantNames: "a,o.x", wantDynamic: DynamicFalse},
		{name: "type change", update: `{"properties": {"a": {"type": "keyword"}}}`, field: "a", reason: "from [long] to [keyword]"},
		{name: "analyzer change", update: `{"properties": {"o.x": {"type": "text", "analyzer": "cjk"}}}`, field: "o.x", reason: "[analyzer]"},
		{name: "explicit default analyzer is no change", update: `{"properties": {"o.x": {"type": "text", "analyzer": "standard"}}}`,
			wantNames: "a,o.x", wantDynamic: DynamicStrict},
		{name: "index change", update: `{"properties": {"a": {"type": "long", "index": false}}}`, field: "a", reason: "[index]"},
		{name: "leaf over object", update: `{"properties": {"o": {"type": "keyword"}}}`, field: "o", reason: "object"},
		{name: "object over leaf", update: `{"properties": {"a": {"properties": {"z": {"type": "long"}}}}}`, field: "a", reason: "object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := base.Merge(mustParse(t, tt.update))
			if tt.field != "" {
				var fe *FieldError
				if !errors.As(err, &fe) || !errors.Is(err, ErrConflict) || fe.Field != tt.field || !strings.Contains(fe.Reason, tt.reason) {
					t.Fatalf("got %v, want conflict on %s (%s)", err, tt.field, tt.reason)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if names := strings.Join(got.Names(), ","); names != tt.wantNames || got.Dynamic() != tt.wantDynamic {
				t.Fatalf("got %s %v", names, got.Dynamic())
			}
		})
	}
	if base.Len() != 2 {
		t.Fatal("Merge changed its receiver")
	}
}
