package mapping

import (
	"errors"
	"testing"

	"github.com/sluice-search/sluice/node/engine/document"
)

func TestParseDocValuesUpdate(t *testing.T) {
	dv := func(tp document.FieldType) Field { f := NewField(tp); f.Index = false; return f }
	m, err := New(DynamicTrue, map[string]Field{
		"price": dv(document.Double), "a.n": dv(document.Long), "day": dv(document.Date), "ok": dv(document.Boolean),
		"tag": dv(document.Keyword), "n": NewField(document.Long), "title": NewField(document.Text),
		"kw": NewField(document.Keyword),
	})
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewParser(m)
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.ParseDocValuesUpdate([]byte(`{"price":"2.5","a":{"n":7},"day":"2024-01-01","ok":true,"tag":"red"}`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"price": document.SortableFloat64(2.5), "a.n": 7, "day": 1704067200000, "ok": 1, "tag": 0}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for _, u := range got {
		if u.Field == "tag" && string(u.Keyword) != "red" {
			t.Fatalf("tag = %q, want red", u.Keyword)
		}
		if want[u.Field] != u.Value {
			t.Fatalf("%s = %d, want %d", u.Field, u.Value, want[u.Field])
		}
	}
	for _, tc := range []struct {
		in    string
		field string
		kind  error
	}{
		{`{"n":1}`, "n", ErrNotUpdatable},
		{`{"kw":"x"}`, "kw", ErrNotUpdatable},
		{`{"tag":["x","y"]}`, "tag", ErrDocument},
		{`{"title":"x"}`, "title", ErrNotUpdatable},
		{`{"nope":1}`, "nope", ErrDocument},
		{`{"price":null}`, "", ErrDocument},
		{`{}`, "", ErrDocument},
		{`{"price":[1,2]}`, "price", ErrDocument},
		{`{"price":"abc"}`, "price", ErrDocument},
		{`[1]`, "", ErrDocument},
	} {
		_, err := p.ParseDocValuesUpdate([]byte(tc.in))
		var fe *FieldError
		if !errors.Is(err, tc.kind) || !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("%s: err %v, want %v naming [%s]", tc.in, err, tc.kind, tc.field)
		}
	}
	// The mapping is still dynamic for documents.
	if _, err := p.Parse(&document.Document{}, []byte("1"), []byte(`{"new":1}`)); err != nil {
		t.Fatal(err)
	}
}
