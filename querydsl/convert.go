package querydsl

import (
	"fmt"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/sluice-search/sluice/node/engine/document"
	"github.com/sluice-search/sluice/node/engine/mapping"
	"github.com/sluice-search/sluice/node/engine/search"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// ParseDate reads a date as the mapping's date fields accept it in queries:
// RFC 3339 (with or without fractional seconds), a zone-less
// yyyy-MM-ddTHH:mm:ss[.SSS] (UTC), or yyyy-MM-dd (midnight UTC); it returns
// epoch milliseconds.
func ParseDate(s string) (int64, error) {
	s = strings.TrimSpace(s)
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UnixMilli(), nil
		}
	}
	return 0, fmt.Errorf("%q is not an RFC 3339 or yyyy-MM-dd date", s)
}

// Sort translates sort keys. An empty list sorts by score. "_shard_doc" is
// the shard-local doc id here; the coordinator makes it unique across
// shards.
func Sort(m *mapping.Mapping, keys []*sluicev1.SortField) ([]search.SortField, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	out := make([]search.SortField, len(keys))
	for i, k := range keys {
		sf := search.SortField{MissingFirst: k.GetMissingFirst()}
		switch k.GetField() {
		case "_score":
			sf.Type = search.SortByScore
			sf.Desc = k.GetOrder() != sluicev1.SortOrder_SORT_ORDER_ASC
		case "_doc", "_shard_doc":
			sf.Type = search.SortByDoc
			sf.Desc = k.GetOrder() == sluicev1.SortOrder_SORT_ORDER_DESC
		case "":
			return nil, invalid("sort", "sort key %d has no field", i)
		default:
			f, ok := m.Field(k.Field)
			switch {
			case !ok:
				// Unmapped on this shard: no doc has a value; sort them
				// all as missing through a field nobody has.
				sf.Type = search.SortByNumeric
			case !f.DocValues:
				return nil, invalid(k.Field, "cannot sort by a [%s] field without doc values", f.Type)
			case f.Type == document.Keyword:
				sf.Type = search.SortByKeyword
			default:
				sf.Type = search.SortByNumeric
			}
			sf.Field = k.Field
			sf.Desc = k.GetOrder() == sluicev1.SortOrder_SORT_ORDER_DESC
		}
		out[i] = sf
	}
	return out, nil
}

// SortValueToProto converts a hit's engine sort value for key f (whose field
// has mapping type t, 0 for _score/_doc) to its public form: doubles as
// double_value, other numerics as long_value.
func SortValueToProto(f search.SortField, t document.FieldType, v search.SortValue) *sluicev1.SortValue {
	switch {
	case v.Missing:
		return &sluicev1.SortValue{}
	case f.Type == search.SortByScore:
		return &sluicev1.SortValue{Kind: &sluicev1.SortValue_Score{Score: v.Float}}
	case f.Type == search.SortByKeyword:
		return &sluicev1.SortValue{Kind: &sluicev1.SortValue_KeywordValue{KeywordValue: v.Bytes}}
	case t == document.Double:
		return &sluicev1.SortValue{Kind: &sluicev1.SortValue_DoubleValue{DoubleValue: document.Float64FromSortable(v.Int)}}
	}
	return &sluicev1.SortValue{Kind: &sluicev1.SortValue_LongValue{LongValue: v.Int}}
}

// SortValueFromProto converts a search_after value for key f back to the
// engine's form.
func SortValueFromProto(f search.SortField, t document.FieldType, v *sluicev1.SortValue) (search.SortValue, error) {
	name := f.Field
	if name == "" {
		name = "search_after"
	}
	switch k := v.GetKind().(type) {
	case nil:
		return search.SortValue{Missing: true}, nil
	case *sluicev1.SortValue_Score:
		if f.Type != search.SortByScore {
			return search.SortValue{}, invalid(name, "search_after gives a score for a sort key that is not _score")
		}
		return search.SortValue{Float: k.Score}, nil
	case *sluicev1.SortValue_KeywordValue:
		if f.Type != search.SortByKeyword {
			return search.SortValue{}, invalid(name, "search_after gives a keyword for a sort key that is not a keyword field")
		}
		return search.SortValue{Bytes: k.KeywordValue}, nil
	case *sluicev1.SortValue_DoubleValue:
		switch {
		case f.Type == search.SortByScore:
			return search.SortValue{Float: float32(k.DoubleValue)}, nil
		case f.Type == search.SortByNumeric && t == document.Double:
			return search.SortValue{Int: document.SortableFloat64(k.DoubleValue)}, nil
		}
		return search.SortValue{}, invalid(name, "search_after gives a double for a sort key that is not a double field")
	case *sluicev1.SortValue_LongValue:
		switch {
		case f.Type == search.SortByScore:
			return search.SortValue{Float: float32(k.LongValue)}, nil
		case f.Type == search.SortByKeyword:
			return search.SortValue{}, invalid(name, "search_after gives a number for a keyword sort key")
		case t == document.Double:
			return search.SortValue{Int: document.SortableFloat64(float64(k.LongValue))}, nil
		}
		return search.SortValue{Int: k.LongValue}, nil
	}
	return search.SortValue{}, invalid(name, "unsupported sort value %T", v.GetKind())
}

// ValidateSort rejects sort keys on fields the mapping lacks (Elasticsearch:
// "No mapping found for [x] in order to sort on") or cannot sort by.
func ValidateSort(m *mapping.Mapping, sort []*sluicev1.SortField) error {
	for _, f := range sort {
		switch name := f.GetField(); name {
		case "_score", "_doc", "_shard_doc", "":
		default:
			if _, ok := m.Field(name); !ok {
				return &Error{Field: name, Reason: "no mapping found for the field to sort on"}
			}
		}
	}
	_, err := Sort(m, sort)
	return err
}

// FieldTypes returns the mapping type of each sort key's field (0 for
// _score, _doc and unmapped fields), for the value conversions.
func FieldTypes(m *mapping.Mapping, keys []search.SortField) []document.FieldType {
	out := make([]document.FieldType, len(keys))
	for i, k := range keys {
		if k.Field != "" {
			if f, ok := m.Field(k.Field); ok {
				out[i] = f.Type
			}
		}
	}
	return out
}

var (
	typeToProto = map[document.FieldType]sluicev1.FieldType{
		document.Text: sluicev1.FieldType_FIELD_TYPE_TEXT, document.Keyword: sluicev1.FieldType_FIELD_TYPE_KEYWORD,
		document.Long: sluicev1.FieldType_FIELD_TYPE_LONG, document.Double: sluicev1.FieldType_FIELD_TYPE_DOUBLE,
		document.Date: sluicev1.FieldType_FIELD_TYPE_DATE, document.Boolean: sluicev1.FieldType_FIELD_TYPE_BOOLEAN,
	}
	dynamicToProto = map[mapping.Dynamic]sluicev1.DynamicMapping{
		mapping.DynamicDefault: sluicev1.DynamicMapping_DYNAMIC_MAPPING_UNSPECIFIED,
		mapping.DynamicTrue:    sluicev1.DynamicMapping_DYNAMIC_MAPPING_TRUE,
		mapping.DynamicFalse:   sluicev1.DynamicMapping_DYNAMIC_MAPPING_FALSE,
		mapping.DynamicStrict:  sluicev1.DynamicMapping_DYNAMIC_MAPPING_STRICT,
	}
)

// MappingFromProto builds an engine mapping from the public form; nil is an
// empty dynamic mapping. Problems wrap mapping.ErrInvalidMapping.
func MappingFromProto(pm *sluicev1.Mapping) (*mapping.Mapping, error) {
	dyn := mapping.DynamicDefault
	for d, p := range dynamicToProto {
		if p == pm.GetDynamic() {
			dyn = d
		}
	}
	fields := make(map[string]mapping.Field, len(pm.GetProperties()))
	for name, fm := range pm.GetProperties() {
		var t document.FieldType
		for dt, p := range typeToProto {
			if p == fm.GetType() {
				t = dt
			}
		}
		if t == 0 {
			return nil, fmt.Errorf("%w: field [%s]: unknown type %v", mapping.ErrInvalidMapping, name, fm.GetType())
		}
		f := mapping.NewField(t)
		f.Analyzer = fm.GetAnalyzer()
		if fm.Index != nil {
			f.Index = fm.GetIndex()
		}
		if fm.DocValues != nil {
			f.DocValues = fm.GetDocValues()
		}
		fields[name] = f
	}
	return mapping.New(dyn, fields)
}

// MappingLimits are the mapping limits of index settings (zero fields:
// the defaults).
func MappingLimits(s *sluicev1.IndexSettings) mapping.Limits {
	return mapping.Limits{TotalFields: int(s.GetMappingTotalFieldsLimit()), Depth: int(s.GetMappingDepthLimit()),
		FieldNameLength: int(s.GetMappingFieldNameLengthLimit())}
}

// SameMapping reports whether two mappings index documents alike: equal in
// the canonical form MappingToProto gives (defaults filled, fields sorted),
// however they were declared. A segment copy needs it of its source and
// destination.
func SameMapping(a, b *mapping.Mapping) bool {
	if a == nil || b == nil {
		return a == b
	}
	return proto.Equal(MappingToProto(a), MappingToProto(b))
}

// MappingToProto is the inverse of MappingFromProto; index and doc_values
// are always set, so a round trip is exact.
func MappingToProto(m *mapping.Mapping) *sluicev1.Mapping {
	pm := &sluicev1.Mapping{Dynamic: dynamicToProto[m.Dynamic()], Properties: make(map[string]*sluicev1.FieldMapping, m.Len())}
	for _, name := range m.Names() {
		f, _ := m.Field(name)
		idx, dv := f.Index, f.DocValues
		pm.Properties[name] = &sluicev1.FieldMapping{Type: typeToProto[f.Type], Analyzer: f.Analyzer, Index: &idx, DocValues: &dv}
	}
	return pm
}
