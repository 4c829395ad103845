package querydsl

import (
	"github.com/sluice-search/sluice/node/engine/document"
	"github.com/sluice-search/sluice/node/engine/index"
	"github.com/sluice-search/sluice/node/engine/mapping"
	"github.com/sluice-search/sluice/node/engine/search"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// DocValueField is one field of a search's docvalue_fields as a shard's
// mapping has it.
type DocValueField struct {
	Name string
	Type document.FieldType // 0: not mapped here; the field has no values
}

// DocValueFields checks docvalue_fields against a mapping (Elasticsearch:
// a field without doc values cannot be loaded; an unmapped one is no
// error and gives no values) and returns them as the shard reads them.
// _seq_no and _primary_term, the columns of every document's version,
// read as longs (what Elasticsearch's seq_no_primary_term returns); a
// document of a segment written before versions were stored has none.
func DocValueFields(m *mapping.Mapping, names []string) ([]DocValueField, error) {
	out := make([]DocValueField, 0, len(names))
	for _, name := range names {
		if name == "" {
			return nil, invalid("docvalue_fields", "a field name is empty")
		}
		f, ok := m.Field(name)
		switch {
		case name == index.SeqNoField || name == index.PrimaryTermField:
			out = append(out, DocValueField{Name: name, Type: document.Long})
		case !ok:
			out = append(out, DocValueField{Name: name})
		case !f.DocValues:
			return nil, invalid(name, "docvalue_fields: [%s] field [%s] has no doc values", f.Type, name)
		default:
			out = append(out, DocValueField{Name: name, Type: f.Type})
		}
	}
	return out, nil
}

// ReadDocValues reads doc's value of each field from leaf — through the
// leaf's layered view, so in-place updates show — typed as sort values
// are; fields without a value for the doc are left out (nil when none).
func ReadDocValues(leaf index.LeafReader, doc int, fields []DocValueField) map[string]*sluicev1.SortValue {
	var out map[string]*sluicev1.SortValue
	put := func(name string, v *sluicev1.SortValue) {
		if out == nil {
			out = make(map[string]*sluicev1.SortValue, len(fields))
		}
		out[name] = v
	}
	for _, f := range fields {
		switch {
		case f.Type == 0:
		case f.Type == document.Keyword:
			if dv := leaf.SortedDocValues(f.Name); dv != nil {
				if ord := dv.Ord(doc); ord >= 0 {
					put(f.Name, SortValueToProto(search.SortField{Type: search.SortByKeyword}, f.Type, search.SortValue{Bytes: append([]byte(nil), dv.LookupOrd(ord)...)}))
				}
			}
		default:
			if dv := leaf.NumericDocValues(f.Name); dv != nil {
				if v, ok := dv.Get(doc); ok {
					put(f.Name, SortValueToProto(search.SortField{Type: search.SortByNumeric}, f.Type, search.SortValue{Int: v}))
				}
			}
		}
	}
	return out
}
