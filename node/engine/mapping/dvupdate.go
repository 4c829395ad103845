package mapping

import (
	"errors"
	"slices"

	"github.com/sluice-search/sluice/node/engine/document"
)

// ErrNotUpdatable: an in-place doc-values update names a field that cannot
// be updated in place.
var ErrNotUpdatable = errors.New("field cannot be updated in place")

// DocValueUpdate is one field's new value in an in-place doc-values update
// (the engine's update_doc_values): Value in the column's int64 form (a
// double as document.SortableFloat64 bits, a date as epoch millis, a
// boolean as 0/1), or for a keyword field Keyword, the term (as the
// mapping normalizes it).
type DocValueUpdate struct {
	Field   string
	Type    document.FieldType
	Value   int64
	Keyword []byte
}

// Updatable reports whether a field can be updated in place: a numeric or
// keyword field with doc values and no terms (index: false, doc_values:
// true). Terms cannot be changed without re-indexing the document, so an
// indexed field would match its old value.
func (f Field) Updatable() bool {
	return (f.Type.Numeric() || f.Type == document.Keyword) && f.DocValues && !f.Index
}

// ParseDocValuesUpdate reads an in-place update: a JSON object of mapped
// field names (dotted paths, or nested objects) to one scalar value each,
// converted as a document's values are. Every field must be Updatable
// (ErrNotUpdatable naming it otherwise); unmapped fields, null, arrays and
// an empty object are errors wrapping ErrDocument.
func (p *Parser) ParseDocValuesUpdate(fields []byte) ([]DocValueUpdate, error) {
	// A field the mapping lacks has no column: parse as strict, through a
	// copy (the mapping is shared; the parser is this goroutine's), made
	// once per mapping; the scratch document is reused too, so only the
	// result is allocated.
	m := p.m
	if p.strictOf != m {
		strict := *m
		strict.dynamic = DynamicStrict
		p.strict, p.strictOf = &strict, m
	}
	p.m = p.strict
	doc := &p.dvDoc
	_, err := p.Parse(doc, []byte("_update"), fields)
	p.m = m
	if err != nil {
		var fe *FieldError
		if errors.As(err, &fe) && errors.Is(err, ErrStrict) {
			return nil, fieldErr(ErrDocument, fe.Field, "no such field in the mapping")
		}
		return nil, err
	}
	if len(doc.Fields) == 0 {
		return nil, fieldErr(ErrDocument, "", "an update needs at least one field with a value (null cannot be set in place)")
	}
	out := make([]DocValueUpdate, 0, len(doc.Fields))
	for _, df := range doc.Fields {
		f, _ := p.m.Field(df.Name)
		switch {
		case !f.Updatable():
			return nil, fieldErr(ErrNotUpdatable, df.Name, "only numeric and keyword fields mapped with index: false and doc_values: true can be updated in place; [%s] is %s", f.Type, describeField(f))
		case f.Type == document.Keyword:
			if len(df.Keywords) != 1 {
				return nil, fieldErr(ErrDocument, df.Name, "an in-place update sets one value, got %d", len(df.Keywords))
			}
			// Cloned: the scratch document's arena is reused.
			out = append(out, DocValueUpdate{Field: df.Name, Type: f.Type, Keyword: slices.Clone(df.Keywords[0])})
			continue
		case len(df.Numerics) != 1:
			return nil, fieldErr(ErrDocument, df.Name, "an in-place update sets one value, got %d", len(df.Numerics))
		}
		out = append(out, DocValueUpdate{Field: df.Name, Type: f.Type, Value: df.Numerics[0]})
	}
	return out, nil
}

func describeField(f Field) string {
	switch {
	case f.Index && f.DocValues:
		return "indexed (index: true)"
	case f.Index:
		return "indexed without doc values"
	case !f.DocValues:
		return "without doc values"
	}
	return "not numeric or keyword"
}
