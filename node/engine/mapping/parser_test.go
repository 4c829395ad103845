package mapping

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sluice-search/sluice/node/engine/analysis/analysistest"
	"github.com/sluice-search/sluice/node/engine/document"
)

// render prints a document's fields in a stable, readable form: numeric
// terms decoded, doubles shown as floats.
func render(d *document.Document) string {
	var sb strings.Builder
	for i, f := range d.Fields {
		if i > 0 {
			sb.WriteString(" | ")
		}
		fmt.Fprintf(&sb, "%s:%s", f.Name, f.Type)
		num := func(v int64) string {
			if f.Type == document.Double {
				return fmt.Sprint(document.Float64FromSortable(v))
			}
			return fmt.Sprint(v)
		}
		for _, t := range f.Tokens {
			if f.Type.Numeric() {
				fmt.Fprintf(&sb, " %s@%d", num(document.DecodeSortable(t.Term)), t.Position)
			} else {
				fmt.Fprintf(&sb, " %s@%d", t.Term, t.Position)
			}
		}
		for _, v := range f.Numerics {
			fmt.Fprintf(&sb, " dv=%s", num(v))
		}
		for _, k := range f.Keywords {
			fmt.Fprintf(&sb, " dv=%s", k)
		}
		if f.Type == document.Text {
			fmt.Fprintf(&sb, " len=%d", f.Length)
		}
	}
	return sb.String()
}

// testFields is the mapping most parser tests use (strict).
var testFields = map[string]Field{
	"title":     NewField(document.Text),
	"jp":        {Type: document.Text, Analyzer: "cjk", Index: true},
	"tag":       NewField(document.Keyword),
	"tag_noidx": {Type: document.Keyword, DocValues: true},
	"tag_nodv":  {Type: document.Keyword, Index: true},
	"n":         NewField(document.Long),
	"n_noidx":   {Type: document.Long, DocValues: true},
	"price":     NewField(document.Double),
	"at":        NewField(document.Date),
	"ok":        NewField(document.Boolean),
	"user.name": NewField(document.Keyword),
	"user.age":  NewField(document.Long),
}

func TestParseDocument(t *testing.T) {
	p, err := NewParser(mustNew(t, DynamicStrict, testFields))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, src, want string }{
		{"text", `{"title": "Hello, World!"}`, "title:text hello@0 world@1 len=2"},
		{"text escapes", `{"title": "caf\u00e9 \"quoted\"\nline"}`, "title:text café@0 quoted@1 line@2 len=3"},
		{"text surrogate pair", `{"title": "\ud83d\ude00 x \ud800"}`, "title:text x@0 len=1"},
		{"text array gap", `{"title": ["a b", "c", null, []]}`, "title:text a@0 b@1 c@102 len=3"},
		{"number as text", `{"title": 42}`, "title:text 42@0 len=1"},
		{"cjk", `{"jp": "東京都"}`, "jp:text 東京@0 京都@1 len=2"},
		{"keyword", `{"tag": "Foo Bar"}`, "tag:keyword Foo Bar@0 dv=Foo Bar"},
		{"keyword array and coercion", `{"tag": ["a", 12, true]}`, "tag:keyword a@0 12@1 true@2 dv=a dv=12 dv=true"},
		{"keyword index false", `{"tag_noidx": "x"}`, "tag_noidx:keyword dv=x"},
		{"keyword doc_values false", `{"tag_nodv": "x"}`, "tag_nodv:keyword x@0"},
		{"long", `{"n": -17}`, "n:long -17@0 dv=-17"},
		{"long coerced", `{"n": ["12", 3.9, -2.5, 1e3]}`, "n:long 12@0 3@1 -2@2 1000@3 dv=12 dv=3 dv=-2 dv=1000"},
		{"long extremes", `{"n": [9223372036854775807, -9223372036854775808]}`,
			"n:long 9223372036854775807@0 -9223372036854775808@1 dv=9223372036854775807 dv=-9223372036854775808"},
		{"long index false", `{"n_noidx": 5}`, "n_noidx:long dv=5"},
		{"double", `{"price": [1.5, -0.25, "3", 7]}`, "price:double 1.5@0 -0.25@1 3@2 7@3 dv=1.5 dv=-0.25 dv=3 dv=7"},
		{"date formats", `{"at": [0, "1970-01-02", "1970-01-01T00:00:01Z", "1970-01-01T01:00:00+01:00", "1970-01-01T00:00:00.123", "86400000", "1971", "1970-02"]}`,
			"at:date 0@0 86400000@1 1000@2 0@3 123@4 86400000@5 31536000000@6 2678400000@7 dv=0 dv=86400000 dv=1000 dv=0 dv=123 dv=86400000 dv=31536000000 dv=2678400000"},
		{"boolean", `{"ok": [true, false, "true", "false", ""]}`, "ok:boolean 1@0 0@1 1@2 0@3 0@4 dv=1 dv=0 dv=1 dv=0 dv=0"},
		{"object flattening", `{"user": {"name": "kim", "age": 3}}`, "user.name:keyword kim@0 dv=kim | user.age:long 3@0 dv=3"},
		{"dotted key", `{"user.name": "kim"}`, "user.name:keyword kim@0 dv=kim"},
		{"array of objects merges values", `{"user": [{"name": "a"}, {"name": "b"}]}`, "user.name:keyword a@0 b@1 dv=a dv=b"},
		{"null ignored", `{"title": null, "user": null, "n": [null]}`, ""},
		{"empty", ` { } `, ""},
		{"field order", `{"n": 1, "title": "x", "tag": "y"}`, "n:long 1@0 dv=1 | title:text x@0 len=1 | tag:keyword y@0 dv=y"},
	}
	var doc document.Document
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			upd, err := p.Parse(&doc, []byte("id1"), []byte(tt.src))
			if err != nil {
				t.Fatal(err)
			}
			if upd != nil {
				t.Fatalf("unexpected update %v", upd.Names())
			}
			if got := render(&doc); got != tt.want {
				t.Fatalf("got  %s\nwant %s", got, tt.want)
			}
			if string(doc.ID) != "id1" || string(doc.Source) != tt.src {
				t.Fatalf("id %q source %q", doc.ID, doc.Source)
			}
		})
	}
}

func TestParseDocumentErrors(t *testing.T) {
	p, err := NewParser(mustNew(t, DynamicStrict, testFields))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, src, field, reason string
		kind                     error
	}{
		{"string into long", `{"n": "abc"}`, "n", `"abc" as [long]`, ErrDocument},
		{"hex string into long", `{"n": "0x10"}`, "n", "as [long]", ErrDocument},
		{"bool into long", `{"n": true}`, "n", "true as [long]", ErrDocument},
		{"long overflow", `{"n": 9223372036854775808}`, "n", "as [long]", ErrDocument},
		{"double overflow", `{"price": 1e400}`, "price", "as [double]", ErrDocument},
		{"NaN string into double", `{"price": "NaN"}`, "price", "as [double]", ErrDocument},
		{"bad date", `{"at": "2015-13-01"}`, "at", "as [date]", ErrDocument},
		{"bad date day", `{"at": "2015-02-29"}`, "at", "as [date]", ErrDocument},
		{"bad date text", `{"at": "yesterday"}`, "at", "as [date]", ErrDocument},
		{"number into boolean", `{"ok": 1}`, "ok", "as [boolean]", ErrDocument},
		{"string into boolean", `{"ok": "yes"}`, "ok", "as [boolean]", ErrDocument},
		{"object into keyword", `{"tag": {"a": 1}}`, "tag", "got an object", ErrDocument},
		{"object into text in array", `{"title": ["x", {"a": 1}]}`, "title", "got an object", ErrDocument},
		{"value into object", `{"user": "kim"}`, "user", "concrete value", ErrDocument},
		{"strict", `{"nope": 1}`, "nope", "strict", ErrStrict},
		{"strict nested", `{"user": {"nick": "k"}}`, "user.nick", "strict", ErrStrict},
		{"invalid JSON in field", `{"title": "abc}`, "title", "unterminated string", ErrDocument},
		{"invalid JSON number", `{"n": 01}`, "n", "invalid JSON", ErrDocument},
		{"trailing comma", `{"n": 1,}`, "", "expected a key", ErrDocument},
		{"trailing data", `{"n": 1} x`, "", "data after the document", ErrDocument},
		{"trailing NUL", "{\"n\": 1}\x00\xff", "", "data after the document", ErrDocument},
		{"not an object", `[1]`, "", "must be a JSON object", ErrDocument},
		{"empty source", ``, "", "must be a JSON object", ErrDocument},
		{"control char", "{\"title\": \"a\tb\"}", "title", "control character", ErrDocument},
		{"metadata field", `{"_id": "x"}`, "_id", "metadata field", ErrDocument},
		{"_seq_no", `{"_seq_no": 1}`, "_seq_no", "metadata field", ErrDocument},
		{"empty key", `{"": 1}`, "", "cannot be empty", ErrDocument},
		{"immense keyword", `{"tag": "` + strings.Repeat("x", MaxTermLength+1) + `"}`, "tag", "more than", ErrDocument},
		{"deep nesting", `{"title": ` + strings.Repeat("[", 300) + strings.Repeat("]", 300) + `}`, "title", "nested too deeply", ErrDocument},
		{"invalid UTF-8 in a value", "{\"title\": \"a\xffb\"}", "title", "not valid UTF-8", ErrDocument},
		{"invalid UTF-8 after an escape", "{\"title\": \"\\u00e9 \xc3\"}", "title", "not valid UTF-8", ErrDocument},
		{"invalid UTF-8 in a key", "{\"user\": {\"n\xffck\": \"k\"}}", "user", "not valid UTF-8", ErrDocument},
		{"a surrogate encoded as UTF-8", "{\"title\": \"\xed\xa0\x80\"}", "title", "not valid UTF-8", ErrDocument},
	}
	var doc document.Document
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := p.Parse(&doc, []byte("id"), []byte(tt.src))
			var fe *FieldError
			if !errors.As(err, &fe) || !errors.Is(err, tt.kind) {
				t.Fatalf("got %v, want a %v FieldError", err, tt.kind)
			}
			if fe.Field != tt.field || !strings.Contains(fe.Reason, tt.reason) {
				t.Fatalf("got field %q reason %q; want %q / %q", fe.Field, fe.Reason, tt.field, tt.reason)
			}
		})
	}
	for _, id := range []string{"", strings.Repeat("i", MaxIDLength+1)} {
		if _, err := p.Parse(&doc, []byte(id), []byte(`{}`)); !errors.Is(err, ErrDocument) {
			t.Errorf("id of %d bytes: got %v", len(id), err)
		}
	}
}

func TestDynamic(t *testing.T) {
	src := `{"title": "x", "views": 3, "score": 1.5, "ok": true, "missing": null, "obj": {"k": "v", "deep": {"n": [1, 2]}}}`
	tests := []struct {
		dynamic         Dynamic
		want, newFields string
	}{
		{DynamicDefault,
			"title:keyword x@0 dv=x | views:long 3@0 dv=3 | score:double 1.5@0 dv=1.5 | ok:boolean 1@0 dv=1 | obj.k:text v@0 len=1 | obj.deep.n:long 1@0 2@1 dv=1 dv=2",
			"obj.deep.n:long obj.k:text ok:boolean score:double views:long"},
		{DynamicFalse, "title:keyword x@0 dv=x", ""},
	}
	for _, tt := range tests {
		m := mustNew(t, tt.dynamic, map[string]Field{"title": NewField(document.Keyword)})
		p, err := NewParser(m)
		if err != nil {
			t.Fatal(err)
		}
		var doc document.Document
		upd, err := p.Parse(&doc, []byte("1"), []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		if got := render(&doc); got != tt.want {
			t.Fatalf("got  %s\nwant %s", got, tt.want)
		}
		var newFields []string
		if upd != nil {
			for _, n := range upd.Names() {
				f, _ := upd.Field(n)
				newFields = append(newFields, n+":"+f.Type.String())
			}
		}
		if got := strings.Join(newFields, " "); got != tt.newFields {
			t.Fatalf("update %q want %q", got, tt.newFields)
		}
		if upd == nil {
			continue
		}
		// The caller merges the update; the next document maps the same
		// fields without reporting them again.
		merged, err := m.Merge(upd)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.SetMapping(merged); err != nil {
			t.Fatal(err)
		}
		if upd, err := p.Parse(&doc, []byte("2"), []byte(src)); err != nil || upd != nil {
			t.Fatalf("after merge: update %v err %v", upd, err)
		}
		if got := render(&doc); got != tt.want {
			t.Fatalf("after merge got %s", got)
		}
		// A document that maps a now-known field differently fails...
		if _, err := p.Parse(&doc, []byte("3"), []byte(`{"views": "many"}`)); !errors.Is(err, ErrDocument) {
			t.Fatalf("views as text: %v", err)
		}
		// ...and two parsers racing on a new field conflict at merge time.
		upd1, _ := p.Parse(&doc, []byte("4"), []byte(`{"fresh": 1}`))
		upd2, _ := p.Parse(&doc, []byte("5"), []byte(`{"fresh": "one"}`))
		next, err := merged.Merge(upd1)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := next.Merge(upd2); !errors.Is(err, ErrConflict) {
			t.Fatalf("racing dynamic types: %v", err)
		}
	}
	// Within one document, the first value's type wins.
	p, _ := NewParser(mustNew(t, DynamicDefault, nil))
	var doc document.Document
	if _, err := p.Parse(&doc, []byte("1"), []byte(`{"a": [1, "x"]}`)); !errors.Is(err, ErrDocument) {
		t.Fatalf("mixed array: %v", err)
	}
	if _, err := p.Parse(&doc, []byte("1"), []byte(`{"a": [1, {"b": 1}]}`)); !errors.Is(err, ErrDocument) {
		t.Fatalf("value then object: %v", err)
	}
	if _, err := p.Parse(&doc, []byte("1"), []byte(`{"a": {"b": 1}, "a": 2}`)); !errors.Is(err, ErrDocument) {
		t.Fatalf("object then value: %v", err)
	}
	if _, err := p.Parse(&doc, []byte("1"), []byte(`{"a.": 1}`)); !errors.Is(err, ErrDocument) {
		t.Fatalf("bad dynamic name: %v", err)
	}
}

func TestParseRefusesInvalidUTF8ID(t *testing.T) {
	p, err := NewParser(mustNew(t, DynamicTrue, testFields))
	if err != nil {
		t.Fatal(err)
	}
	var doc document.Document
	_, err = p.Parse(&doc, []byte("a\xff"), []byte(`{"title": "x"}`))
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "_id" || !errors.Is(err, ErrDocument) {
		t.Fatalf("invalid UTF-8 _id: %v", err)
	}
	// Valid UTF-8 from escapes, and every Unicode plane, parse.
	if _, err := p.Parse(&doc, []byte("é"), []byte(`{"title": "\u00e9 \ud83d\ude00 😀 東京 \ud800"}`)); err != nil {
		t.Fatal(err)
	}
}

// TestParseLimits: new dynamic fields are held to the mapping's limits
// (Elasticsearch's index.mapping.*.limit), counted as Elasticsearch does;
// the document is refused naming the first field past a limit, and no
// update comes back. Fields already mapped are not re-checked.
func TestParseLimits(t *testing.T) {
	base := map[string]Field{"a": NewField(document.Keyword)}
	many := func(n int) string {
		var b strings.Builder
		b.WriteString("{")
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `"f%d": %d`, i, i)
		}
		b.WriteString("}")
		return b.String()
	}
	tests := []struct {
		name   string
		limits Limits
		src    string
		field  string // "" when the document fits
	}{
		{"fields up to the limit", Limits{TotalFields: 5}, many(4), ""},
		{"one field past the limit", Limits{TotalFields: 5}, many(5), "f4"},
		{"objects count", Limits{TotalFields: 3}, `{"o": {"x": 1, "y": 2}}`, "o.y"},
		{"50,000 new fields, default limit", Limits{}, many(50000), "f999"},
		{"depth at the limit", Limits{Depth: 3}, `{"x": {"y": {"z": 1}}}`, ""},
		{"a field past the depth limit", Limits{Depth: 3}, `{"x": {"y": {"z": {"w": 1}}}}`, "x.y.z"},
		{"an empty object past the depth limit", Limits{Depth: 2}, `{"x": {"y": {}}}`, "x.y"},
		{"default depth", Limits{}, strings.Repeat(`{"o": `, 21) + "1" + strings.Repeat("}", 21), strings.TrimSuffix(strings.Repeat("o.", 20), ".")},
		{"name at the length limit", Limits{FieldNameLength: 8}, `{"abcdefgh": 1}`, ""},
		{"name past the length limit", Limits{FieldNameLength: 8}, `{"abcdefghi": 1}`, "abcdefghi"},
		{"path past the length limit", Limits{FieldNameLength: 8}, `{"abc": {"defgh": 1}}`, "abc.defgh"},
		{"default name length", Limits{}, `{"` + strings.Repeat("n", 257) + `": 1}`, strings.Repeat("n", 257)},
	}
	var doc document.Document
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := NewParser(mustNew(t, DynamicTrue, base).WithLimits(tt.limits))
			if err != nil {
				t.Fatal(err)
			}
			upd, err := p.Parse(&doc, []byte("1"), []byte(tt.src))
			if tt.field == "" {
				if err != nil || upd == nil {
					t.Fatalf("%v %v", upd, err)
				}
				if _, err := p.Mapping().Merge(upd); err != nil {
					t.Fatal(err)
				}
				return
			}
			var fe *FieldError
			if !errors.As(err, &fe) || !errors.Is(err, ErrLimit) || fe.Field != tt.field || upd != nil {
				t.Fatalf("got %v (update %v), want ErrLimit on %q", err, upd, tt.field)
			}
		})
	}
	// A mapping already past a lowered limit still parses its fields.
	p, err := NewParser(mustNew(t, DynamicTrue, map[string]Field{"x": NewField(document.Long), "y": NewField(document.Long)}).WithLimits(Limits{TotalFields: 1}))
	if err != nil {
		t.Fatal(err)
	}
	if upd, err := p.Parse(&doc, []byte("1"), []byte(`{"x": 1, "y": 2}`)); err != nil || upd != nil {
		t.Fatalf("known fields under a lowered limit: %v %v", upd, err)
	}
	// Objects and arrays nest up to maxNesting in an ignored part.
	p, _ = NewParser(mustNew(t, DynamicFalse, nil))
	deep := strings.Repeat(`{"o": [`, maxNesting/2-1) + "1" + strings.Repeat("]}", maxNesting/2-1)
	if _, err := p.Parse(&doc, []byte("1"), []byte(deep)); err != nil {
		t.Fatalf("ignored nesting within the cap: %v", err)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"title": "Hello", "n": 1, "price": 2.5, "at": "2015-01-01", "ok": true, "tag": ["a", "b"]}`,
		`{"user": {"name": "x", "age": "7"}, "new": {"x": [1, null, {"y": 1.5e3}]}}`,
		`{"title": "\u00e9\ud83d\ude00", "jp": "東京都"}`,
		`{"a": [[[]]], "b": {}, "c": -0.0}`,
		"{\"t\xff\": \"\xc3(\", \"k\": \"\\u00e9\xed\xa0\x80\"}",
		`{"a": {"b": {"c": {"d": {"e": {"f": {"g": {"h": {"i": {"j": {"k": {"l": {"m": {"n": {"o": {"p": {"q": {"r": {"s": {"t": {"u": 1}}}}}}}}}}}}}}}}}}}}}`,
	} {
		f.Add(s, false)
		f.Add(s, true)
	}
	ps, _ := NewParser(mustNew(f, DynamicStrict, testFields))
	pd, _ := NewParser(mustNew(f, DynamicTrue, testFields))
	var doc document.Document
	f.Fuzz(func(t *testing.T, src string, dynamic bool) {
		p := ps
		if dynamic {
			p = pd
		}
		upd, err := p.Parse(&doc, []byte("id"), []byte(src))
		if err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("error is not a FieldError: %v", err)
			}
			return
		}
		// Bytes that are not UTF-8 can only stand in strings of valid JSON.
		if !utf8.ValidString(src) {
			t.Fatalf("accepted a source that is not valid UTF-8: %q", src)
		}
		if upd != nil {
			lim := p.Mapping().Limits()
			if p.Mapping().Total()+upd.Total() > lim.TotalFields {
				t.Fatalf("update of %d past the total fields limit", upd.Total())
			}
			for _, name := range upd.Names() {
				if err := lim.CheckName(name, false); err != nil {
					t.Fatalf("update past a limit: %v", err)
				}
			}
		}
		seen := map[string]bool{}
		for _, fl := range doc.Fields {
			if seen[fl.Name] {
				t.Fatalf("field %s twice", fl.Name)
			}
			seen[fl.Name] = true
			mf, ok := p.Mapping().Field(fl.Name)
			if !ok && upd != nil {
				mf, ok = upd.Field(fl.Name)
			}
			if !ok || mf.Type != fl.Type {
				t.Fatalf("field %s of type %s is not mapped so", fl.Name, fl.Type)
			}
			prev := int32(-1)
			for _, tk := range fl.Tokens {
				if fl.Type.Numeric() && len(tk.Term) != 8 || !fl.Type.Numeric() && !utf8.Valid(tk.Term) {
					t.Fatalf("field %s: bad term %q", fl.Name, tk.Term)
				}
				if tk.Position <= prev {
					t.Fatalf("field %s: positions not increasing", fl.Name)
				}
				prev = tk.Position
			}
		}
	})
}

func BenchmarkParse(b *testing.B) {
	benchmarkParse(b, mustNew(b, DynamicStrict, map[string]Field{
		"id": NewField(document.Keyword), "title": NewField(document.Text), "body": NewField(document.Text)}))
}

// BenchmarkParseScan measures the JSON scan alone: every field unmapped
// and ignored (dynamic false), so nothing is analysed.
func BenchmarkParseScan(b *testing.B) { benchmarkParse(b, mustNew(b, DynamicFalse, nil)) }

func benchmarkParse(b *testing.B, m *Mapping) {
	docs := analysistest.Corpus(b, 5000)
	p, err := NewParser(m)
	if err != nil {
		b.Fatal(err)
	}
	var n int64
	for _, d := range docs {
		n += int64(len(d.JSON))
	}
	b.SetBytes(n / int64(len(docs)))
	b.ReportAllocs()
	var doc document.Document
	i := 0
	for b.Loop() {
		d := docs[i%len(docs)]
		if _, err := p.Parse(&doc, []byte(d.ID), d.JSON); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "docs/s")
}
