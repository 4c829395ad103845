package esjson

import (
	"errors"
	"testing"

	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

func field(t sluicev1.FieldType) *sluicev1.FieldMapping { return &sluicev1.FieldMapping{Type: t} }

func flag(b bool) *bool { return &b }

const (
	fText    = sluicev1.FieldType_FIELD_TYPE_TEXT
	fKeyword = sluicev1.FieldType_FIELD_TYPE_KEYWORD
	fLong    = sluicev1.FieldType_FIELD_TYPE_LONG
	fDouble  = sluicev1.FieldType_FIELD_TYPE_DOUBLE
	fDate    = sluicev1.FieldType_FIELD_TYPE_DATE
	fBoolean = sluicev1.FieldType_FIELD_TYPE_BOOLEAN
)

var mappingCases = []jsonCase[*sluicev1.Mapping]{
	{"empty", `{}`, &sluicev1.Mapping{}, ""},
	{"dynamic only", `{"dynamic":"strict"}`, &sluicev1.Mapping{Dynamic: sluicev1.DynamicMapping_DYNAMIC_MAPPING_STRICT}, ""},
	{"dynamic false as a string", `{"dynamic":"false"}`, &sluicev1.Mapping{Dynamic: sluicev1.DynamicMapping_DYNAMIC_MAPPING_FALSE}, `{"dynamic":false}`},
	{"dynamic true", `{"dynamic":true,"properties":{}}`,
		&sluicev1.Mapping{Dynamic: sluicev1.DynamicMapping_DYNAMIC_MAPPING_TRUE, Properties: map[string]*sluicev1.FieldMapping{}}, ""},
	{"every type", `{"properties":{"at":{"type":"date"},"n":{"type":"long"},"ok":{"type":"boolean"},"price":{"type":"double"},"tag":{"type":"keyword"},"title":{"type":"text"}}}`,
		&sluicev1.Mapping{Properties: map[string]*sluicev1.FieldMapping{"title": field(fText), "tag": field(fKeyword), "n": field(fLong),
			"price": field(fDouble), "at": field(fDate), "ok": field(fBoolean)}}, ""},
	{"parameters", `{"properties":{"body":{"type":"text","analyzer":"cjk","index":false},"tag":{"type":"keyword","index":"true","doc_values":false,"store":false}}}`,
		&sluicev1.Mapping{Properties: map[string]*sluicev1.FieldMapping{
			"body": {Type: fText, Analyzer: "cjk", Index: flag(false)},
			"tag":  {Type: fKeyword, Index: flag(true), DocValues: flag(false)}}},
		`{"properties":{"body":{"type":"text","analyzer":"cjk","index":false},"tag":{"type":"keyword","index":true,"doc_values":false}}}`},
	{"objects flatten", `{"properties":{"user":{"properties":{"geo":{"type":"object","properties":{"lat":{"type":"double"}}},"name":{"type":"keyword"}}}}}`,
		&sluicev1.Mapping{Properties: map[string]*sluicev1.FieldMapping{"user.name": field(fKeyword), "user.geo.lat": field(fDouble)}},
		`{"properties":{"user":{"properties":{"geo":{"properties":{"lat":{"type":"double"}}},"name":{"type":"keyword"}}}}}`},
	{"dotted names are nested names", `{"properties":{"a.b":{"type":"long"},"a":{"properties":{"c":{"type":"long"}}}}}`,
		&sluicev1.Mapping{Properties: map[string]*sluicev1.FieldMapping{"a.b": field(fLong), "a.c": field(fLong)}},
		`{"properties":{"a":{"properties":{"b":{"type":"long"},"c":{"type":"long"}}}}}`},
	{"empty object holds no field", `{"properties":{"o":{"type":"object"},"p":{}}}`, &sluicev1.Mapping{Properties: map[string]*sluicev1.FieldMapping{}},
		`{"properties":{}}`},
	// The cluster rejects a name that is a value and an object; JSON can
	// still say it, so it round-trips with the longer name kept dotted.
	{"value and object", `{"properties":{"a":{"type":"long"},"a.b":{"type":"long"}}}`,
		&sluicev1.Mapping{Properties: map[string]*sluicev1.FieldMapping{"a": field(fLong), "a.b": field(fLong)}}, ""},
}

func TestParseMapping(t *testing.T) {
	testParse(t, mappingCases, ParseMapping)
	if m, err := ParseMapping(nil); m != nil || err != nil {
		t.Errorf("ParseMapping(nil) = %v, %v; want nil, nil", m, err)
	}
}

func TestMarshalMapping(t *testing.T) {
	testMarshal(t, mappingCases, ParseMapping, MarshalMapping)
	// The cluster's canonical form sets every flag; text's doc_values
	// false, its only value, is left out.
	canonical := &sluicev1.Mapping{Properties: map[string]*sluicev1.FieldMapping{
		"t": {Type: fText, Index: flag(true), DocValues: flag(false)}, "k": {Type: fKeyword, Index: flag(true), DocValues: flag(true)}}}
	out, err := MarshalMapping(canonical)
	if want := `{"properties":{"k":{"type":"keyword","index":true,"doc_values":true},"t":{"type":"text","index":true}}}`; err != nil || string(out) != want {
		t.Errorf("canonical: got %s, %v; want %s", out, err, want)
	}
	for _, bad := range []*sluicev1.Mapping{
		{Properties: map[string]*sluicev1.FieldMapping{"a": {}}},
		{Properties: map[string]*sluicev1.FieldMapping{"a": {Type: fKeyword, Analyzer: "standard"}}},
		{Properties: map[string]*sluicev1.FieldMapping{"a": {Type: fText, DocValues: flag(true)}}},
		{Dynamic: 7},
	} {
		if _, err := MarshalMapping(bad); !errors.Is(err, ErrInvalidMapping) {
			t.Errorf("MarshalMapping(%v): err = %v, want ErrInvalidMapping", bad, err)
		}
	}
}

func TestParseMappingErrors(t *testing.T) {
	tests := []errorCase{
		{"not an object", `[]`, "", "a mapping must be an object, got an array"},
		{"root parameter", `{"_source":{"enabled":false}}`, "_source", "Root mapping definition has unsupported parameters: [_source]"},
		{"typed mapping", `{"_doc":{"properties":{}}}`, "_doc", "unsupported parameters: [_doc]"},
		{"bad dynamic", `{"dynamic":"runtime"}`, "dynamic", `[dynamic] must be true, false or strict, got "runtime"`},
		{"properties not an object", `{"properties":[]}`, "properties", "[properties] must be an object, got an array"},
		{"field not an object", `{"properties":{"a":"text"}}`, "properties.a", "the mapping of field [a] must be an object, got a string"},
		{"unknown type", `{"properties":{"a":{"type":"geo_point"}}}`, "properties.a.type", "No handler for type [geo_point] declared on field [a] (Sluice maps boolean, date, double, keyword, long, text and object)"},
		{"nested type", `{"properties":{"o":{"properties":{"b":{"type":"nested"}}}}}`, "properties.o.properties.b.type", "No handler for type [nested] declared on field [o.b]"},
		{"type not a string", `{"properties":{"a":{"type":1}}}`, "properties.a.type", "[type] of field [a] must be a string, got a number"},
		{"unknown parameter", `{"properties":{"a":{"type":"long","boost":2}}}`, "properties.a.boost", "unknown parameter [boost] on mapper [a] of type [long]"},
		{"multi-fields", `{"properties":{"a":{"type":"text","fields":{"raw":{"type":"keyword"}}}}}`, "properties.a.fields", "unknown parameter [fields] on mapper [a] of type [text]"},
		{"analyzer on keyword", `{"properties":{"a":{"type":"keyword","analyzer":"standard"}}}`, "properties.a.analyzer", "unknown parameter [analyzer] on mapper [a] of type [keyword]"},
		{"doc_values on text", `{"properties":{"a":{"type":"text","doc_values":true}}}`, "properties.a.doc_values", "unknown parameter [doc_values] on mapper [a] of type [text]"},
		{"properties on a value", `{"properties":{"a":{"type":"long","properties":{}}}}`, "properties.a.properties", "unknown parameter [properties] on mapper [a] of type [long]"},
		{"parameter on object", `{"properties":{"o":{"enabled":false}}}`, "properties.o.enabled", "unknown parameter [enabled] on mapper [o] of type [object]"},
		{"dynamic on object", `{"properties":{"o":{"dynamic":"strict","properties":{}}}}`, "properties.o.dynamic", "applies to the whole mapping"},
		{"bad boolean", `{"properties":{"a":{"type":"long","index":"yes"}}}`, "properties.a.index", `Failed to parse value ["yes"] as only [true] or [false] are allowed`},
		{"analyzer not a string", `{"properties":{"a":{"type":"text","analyzer":1}}}`, "properties.a.analyzer", "[analyzer] must be a string"},
		{"store true", `{"properties":{"a":{"type":"long","store":true}}}`, "properties.a.store", "[store] is not supported"},
		{"mapped twice", `{"properties":{"a.b":{"type":"long"},"a":{"properties":{"b":{"type":"long"}}}}}`, "properties.a.properties.b", "field [a.b] is mapped twice"},
		{"duplicate key", `{"properties":{"a":{"type":"long"},"a":{"type":"text"}}}`, "", "duplicate field 'a'"},
		{"syntax", `{"properties": `, "", "invalid JSON"},
	}
	testErrors(t, tests, ParseMapping, ErrInvalidMapping)
}
