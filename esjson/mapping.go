package esjson

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// ErrInvalidMapping is the Kind of every mapping error.
var ErrInvalidMapping = errors.New("invalid mapping")

var mappingDoc = doc{ErrInvalidMapping}

// fieldTypes are the leaf types Sluice maps, by Elasticsearch name.
var fieldTypes = map[string]sluicev1.FieldType{
	"text": sluicev1.FieldType_FIELD_TYPE_TEXT, "keyword": sluicev1.FieldType_FIELD_TYPE_KEYWORD,
	"long": sluicev1.FieldType_FIELD_TYPE_LONG, "double": sluicev1.FieldType_FIELD_TYPE_DOUBLE,
	"date": sluicev1.FieldType_FIELD_TYPE_DATE, "boolean": sluicev1.FieldType_FIELD_TYPE_BOOLEAN,
}

var dynamicNames = map[sluicev1.DynamicMapping]any{
	sluicev1.DynamicMapping_DYNAMIC_MAPPING_TRUE:   true,
	sluicev1.DynamicMapping_DYNAMIC_MAPPING_FALSE:  false,
	sluicev1.DynamicMapping_DYNAMIC_MAPPING_STRICT: "strict",
}

// ParseMapping reads a mapping in Elasticsearch's JSON form:
//
//	{"dynamic": "strict", "properties": {
//	   "title": {"type": "text", "analyzer": "cjk"},
//	   "user":  {"properties": {"id": {"type": "keyword"}}}}}
//
// Objects flatten to dotted names ("user.id"), as Sluice mappings are flat;
// a dotted property name is the same as its nested form. Empty input is a
// nil mapping (every field mapped dynamically). The cluster checks what
// needs its knowledge (analyzer names, reserved field names); everything
// else is checked here, and every problem is an *Error of Kind
// ErrInvalidMapping naming its path.
func ParseMapping(data []byte) (*sluicev1.Mapping, error) {
	v, err := mappingDoc.decodeObject(data, "a mapping")
	if v == nil {
		return nil, err
	}
	m := &sluicev1.Mapping{}
	for _, mb := range v.members {
		switch mb.key {
		case "dynamic":
			d, err := parseDynamic(mb.key, mb.val)
			if err != nil {
				return nil, err
			}
			m.Dynamic = d
		case "properties":
			if m.Properties == nil {
				m.Properties = map[string]*sluicev1.FieldMapping{}
			}
			if err := parseProperties(mb.key, "", mb.val, m.Properties); err != nil {
				return nil, err
			}
		default:
			return nil, mappingDoc.errorf(mb.key, "Root mapping definition has unsupported parameters: [%s] (Sluice reads dynamic and properties)", mb.key)
		}
	}
	return m, nil
}

func parseDynamic(path string, v *value) (sluicev1.DynamicMapping, error) {
	if b, ok := v.boolean(); ok {
		if b {
			return sluicev1.DynamicMapping_DYNAMIC_MAPPING_TRUE, nil
		}
		return sluicev1.DynamicMapping_DYNAMIC_MAPPING_FALSE, nil
	}
	if v.kind == kString && v.text == "strict" {
		return sluicev1.DynamicMapping_DYNAMIC_MAPPING_STRICT, nil
	}
	return 0, mappingDoc.errorf(path, "[dynamic] must be true, false or strict, got %s", describe(v))
}

// parseProperties reads the fields under an object whose dotted name is
// prefix ("" at the root).
func parseProperties(path, prefix string, v *value, out map[string]*sluicev1.FieldMapping) error {
	if v.kind != kObject {
		return mappingDoc.errorf(path, "[properties] must be an object, got %s", v.typeName())
	}
	for _, mb := range v.members {
		if err := parseField(join(path, mb.key), prefix+mb.key, mb.val, out); err != nil {
			return err
		}
	}
	return nil
}

func parseField(path, name string, v *value, out map[string]*sluicev1.FieldMapping) error {
	if v.kind != kObject {
		return mappingDoc.errorf(path, "the mapping of field [%s] must be an object, got %s", name, v.typeName())
	}
	typ := "object" // as in Elasticsearch, a field without a type is an object
	for _, mb := range v.members {
		if mb.key == "type" {
			if mb.val.kind != kString {
				return mappingDoc.errorf(join(path, "type"), "[type] of field [%s] must be a string, got %s", name, mb.val.typeName())
			}
			typ = mb.val.text
		}
	}
	unknown := func(key string) string {
		return fmt.Sprintf("unknown parameter [%s] on mapper [%s] of type [%s]", key, name, typ)
	}
	ignore := func(string, *value) error { return nil }
	if typ == "object" {
		return mappingDoc.params(path, v, unknown, map[string]setter{
			"type": ignore,
			"properties": func(path string, v *value) error {
				return parseProperties(path, name+".", v, out)
			},
			"dynamic": func(path string, _ *value) error {
				return mappingDoc.errorf(path, "[dynamic] on object [%s] is not supported: Sluice's dynamic setting applies to the whole mapping", name)
			},
		})
	}
	t, ok := fieldTypes[typ]
	if !ok {
		return mappingDoc.errorf(join(path, "type"), "No handler for type [%s] declared on field [%s] (Sluice maps %s and object)",
			typ, name, strings.Join(slices.Sorted(maps.Keys(fieldTypes)), ", "))
	}
	f := &sluicev1.FieldMapping{Type: t}
	flag := func(dst **bool) setter {
		return func(path string, v *value) error {
			b, ok := v.boolean()
			if !ok {
				return mappingDoc.errorf(path, "Failed to parse value [%s] as only [true] or [false] are allowed", describe(v))
			}
			*dst = &b
			return nil
		}
	}
	setters := map[string]setter{
		"type":  ignore,
		"index": flag(&f.Index),
		// Sluice reads field values from _source and stores nothing apart:
		// store false is what it does, store true it cannot do.
		"store": func(path string, v *value) error {
			if b, ok := v.boolean(); !ok || b {
				return mappingDoc.errorf(path, "[store] is not supported (field values are read from _source); only false is accepted, got %s", describe(v))
			}
			return nil
		},
	}
	if t == sluicev1.FieldType_FIELD_TYPE_TEXT {
		setters["analyzer"] = func(path string, v *value) error {
			if v.kind != kString {
				return mappingDoc.errorf(path, "[analyzer] must be a string, got %s", v.typeName())
			}
			f.Analyzer = v.text
			return nil
		}
	} else {
		setters["doc_values"] = flag(&f.DocValues)
	}
	if err := mappingDoc.params(path, v, unknown, setters); err != nil {
		return err
	}
	if _, dup := out[name]; dup {
		return mappingDoc.errorf(path, "field [%s] is mapped twice (once dotted, once nested)", name)
	}
	out[name] = f
	return nil
}

// MarshalMapping writes m in Elasticsearch's JSON form, objects nested
// under "properties", with the parameters m sets; ParseMapping reads it
// back to an equal message. doc_values false on a text field, its only
// value, is left out. A nil mapping is {}.
func MarshalMapping(m *sluicev1.Mapping) ([]byte, error) {
	out := obj{}
	if d := m.GetDynamic(); d != sluicev1.DynamicMapping_DYNAMIC_MAPPING_UNSPECIFIED {
		name, ok := dynamicNames[d]
		if !ok {
			return nil, fmt.Errorf("%w: unknown dynamic setting %v", ErrInvalidMapping, d)
		}
		out = append(out, kv{"dynamic", name})
	}
	if m.GetProperties() == nil {
		return marshal(out), nil
	}
	props := obj{}
	for _, name := range slices.Sorted(maps.Keys(m.GetProperties())) {
		leaf, err := fieldJSON(name, m.GetProperties()[name])
		if err != nil {
			return nil, err
		}
		props = insertField(props, name, leaf)
	}
	return marshal(append(out, kv{"properties", props})), nil
}

func fieldJSON(name string, f *sluicev1.FieldMapping) (obj, error) {
	var typ string
	for n, t := range fieldTypes {
		if t == f.GetType() {
			typ = n
		}
	}
	if typ == "" {
		return nil, fmt.Errorf("%w: field [%s]: unknown type %v", ErrInvalidMapping, name, f.GetType())
	}
	leaf := obj{{"type", typ}}
	if f.GetAnalyzer() != "" {
		if f.GetType() != sluicev1.FieldType_FIELD_TYPE_TEXT {
			return nil, fmt.Errorf("%w: field [%s]: an analyzer on a [%s] field", ErrInvalidMapping, name, typ)
		}
		leaf = append(leaf, kv{"analyzer", f.GetAnalyzer()})
	}
	if f.Index != nil {
		leaf = append(leaf, kv{"index", f.GetIndex()})
	}
	if f.DocValues != nil {
		switch {
		case f.GetType() != sluicev1.FieldType_FIELD_TYPE_TEXT:
			leaf = append(leaf, kv{"doc_values", f.GetDocValues()})
		case f.GetDocValues():
			return nil, fmt.Errorf("%w: field [%s]: doc values on a [text] field", ErrInvalidMapping, name)
		}
	}
	return leaf, nil
}

// insertField puts the leaf of a dotted name into nested objects. Names
// come sorted, so "a" comes before "a.b": when a prefix is a leaf already
// (a mapping the cluster rejects, but one JSON can say), the rest stays
// dotted.
func insertField(props obj, name string, leaf obj) obj {
	head, rest, nested := strings.Cut(name, ".")
	if nested {
		for i, m := range props {
			if m.key != head {
				continue
			}
			o := m.val.(obj)
			if sub, ok := objectProps(o); ok {
				props[i].val = obj{{"properties", insertField(sub, rest, leaf)}}
				return props
			}
		}
		if !hasKey(props, head) {
			return append(props, kv{head, obj{{"properties", insertField(obj{}, rest, leaf)}}})
		}
	}
	return append(props, kv{name, leaf})
}

// objectProps returns the properties of an object mapping, false for a
// leaf.
func objectProps(o obj) (obj, bool) {
	if len(o) == 1 && o[0].key == "properties" {
		return o[0].val.(obj), true
	}
	return nil, false
}

func hasKey(o obj, key string) bool {
	return slices.ContainsFunc(o, func(m kv) bool { return m.key == key })
}
