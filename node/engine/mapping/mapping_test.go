package mapping

import (
	"errors"
	"strings"
	"testing"

	"github.com/sluice-search/sluice/node/engine/document"
)

func mustNew(t testing.TB, dynamic Dynamic, fields map[string]Field) *Mapping {
	t.Helper()
	m, err := New(dynamic, fields)
	if err != nil {
		t.Fatalf("New(%v): %v", fields, err)
	}
	return m
}

func TestNew(t *testing.T) {
	m := mustNew(t, DynamicStrict, map[string]Field{
		"title":        {Type: document.Text, Analyzer: "cjk", Index: true},
		"n":            {Type: document.Long, DocValues: true},
		"user.geo.lat": NewField(document.Double),
		"user.name":    NewField(document.Keyword),
	})
	if m.Dynamic() != DynamicStrict || m.Len() != 4 {
		t.Fatalf("dynamic %v, %d fields", m.Dynamic(), m.Len())
	}
	if got := strings.Join(m.Names(), ","); got != "n,title,user.geo.lat,user.name" {
		t.Fatalf("names %s", got)
	}
	if f, ok := m.Field("user.geo.lat"); !ok || f != (Field{Type: document.Double, Index: true, DocValues: true}) {
		t.Errorf("user.geo.lat: %+v, %v", f, ok)
	}
	if _, ok := m.Field("user"); ok {
		t.Error("an object is not a field")
	}
}

// TestNewErrors covers what the engine checks of every mapping, however it
// was written; the JSON form is esjson's to check.
func TestNewErrors(t *testing.T) {
	tests := []struct {
		name          string
		fields        map[string]Field
		field, reason string
	}{
		{"unknown analyzer", map[string]Field{"a": {Type: document.Text, Analyzer: "nope"}}, "a", "analyzer [nope]"},
		{"analyzer on keyword", map[string]Field{"a": {Type: document.Keyword, Analyzer: "standard"}}, "a", "only allowed on [text]"},
		{"doc values on text", map[string]Field{"a": {Type: document.Text, DocValues: true}}, "a", "doc_values"},
		{"unknown type", map[string]Field{"a": {Type: 99}}, "a", "unknown type"},
		{"value and object", map[string]Field{"a": NewField(document.Long), "a.b": NewField(document.Long)}, "a", "as an object"},
		{"metadata field", map[string]Field{"_id": NewField(document.Keyword)}, "_id", "metadata field"},
		{"empty segment", map[string]Field{"a..b": NewField(document.Keyword)}, "a..b", "empty path segment"},
		{"empty name", map[string]Field{"": NewField(document.Keyword)}, "", "cannot be empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(DynamicDefault, tt.fields)
			var fe *FieldError
			if !errors.As(err, &fe) || !errors.Is(err, ErrInvalidMapping) {
				t.Fatalf("got %v, want an invalid-mapping FieldError", err)
			}
			if fe.Field != tt.field || !strings.Contains(fe.Reason, tt.reason) {
				t.Errorf("got field %q reason %q, want %q / %q", fe.Field, fe.Reason, tt.field, tt.reason)
			}
		})
	}
	if _, err := New(DynamicStrict+1, nil); !errors.Is(err, ErrInvalidMapping) {
		t.Errorf("unknown dynamic: %v", err)
	}
}

func TestMerge(t *testing.T) {
	base := mustNew(t, DynamicStrict, map[string]Field{"a": NewField(document.Long), "o.x": NewField(document.Text)})
	tests := []struct {
		name          string
		dynamic       Dynamic
		update        map[string]Field
		field, reason string
		wantNames     string
		wantDynamic   Dynamic
	}{
		{name: "add", update: map[string]Field{"b": NewField(document.Keyword), "o.y": NewField(document.Date)},
			wantNames: "a,b,o.x,o.y", wantDynamic: DynamicStrict},
		{name: "same field again", update: map[string]Field{"a": NewField(document.Long)},
			wantNames: "a,o.x", wantDynamic: DynamicStrict},
		{name: "dynamic changes", dynamic: DynamicFalse, wantNames: "a,o.x", wantDynamic: DynamicFalse},
		{name: "type change", update: map[string]Field{"a": NewField(document.Keyword)}, field: "a", reason: "from [long] to [keyword]"},
		{name: "analyzer change", update: map[string]Field{"o.x": {Type: document.Text, Analyzer: "cjk", Index: true}}, field: "o.x", reason: "[analyzer]"},
		{name: "explicit default analyzer is no change", update: map[string]Field{"o.x": {Type: document.Text, Analyzer: "standard", Index: true}},
			wantNames: "a,o.x", wantDynamic: DynamicStrict},
		{name: "index change", update: map[string]Field{"a": {Type: document.Long, DocValues: true}}, field: "a", reason: "[index]"},
		{name: "store change", update: map[string]Field{"a": {Type: document.Long, Index: true, DocValues: true, Store: true}}, field: "a", reason: "[store]"},
		{name: "leaf over object", update: map[string]Field{"o": NewField(document.Keyword)}, field: "o", reason: "object"},
		{name: "object over leaf", update: map[string]Field{"a.z": NewField(document.Long)}, field: "a", reason: "object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := base.Merge(mustNew(t, tt.dynamic, tt.update))
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
