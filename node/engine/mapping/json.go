package mapping

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sluice-search/sluice/node/engine/document"
)

// Parse reads a mapping in Elasticsearch's shape:
//
//	{"dynamic": "strict", "properties": {
//	    "title": {"type": "text", "analyzer": "standard"},
//	    "user": {"properties": {"name": {"type": "keyword"}}}}}
//
// Objects flatten to dotted paths ("user.name"); a dotted property name is
// the same as the nested form. Unknown parameters are errors naming the
// field.
func Parse(data []byte) (*Mapping, error) {
	var top map[string]json.RawMessage
	if err := strictUnmarshal(data, &top); err != nil {
		return nil, fieldErr(ErrInvalidMapping, "", "%v", err)
	}
	dynamic := DynamicDefault
	fields := map[string]Field{}
	for key, raw := range top {
		switch key {
		case "dynamic":
			d, err := parseDynamic(raw)
			if err != nil {
				return nil, fieldErr(ErrInvalidMapping, "", "%v", err)
			}
			dynamic = d
		case "properties":
			if err := parseProperties("", raw, fields); err != nil {
				return nil, err
			}
		default:
			return nil, fieldErr(ErrInvalidMapping, "", "unknown mapping parameter [%s]", key)
		}
	}
	return New(dynamic, fields)
}

func strictUnmarshal(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("trailing data after the mapping")
	}
	return nil
}

func parseDynamic(raw json.RawMessage) (Dynamic, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return 0, err
	}
	switch v {
	case true, "true":
		return DynamicTrue, nil
	case false, "false":
		return DynamicFalse, nil
	case "strict":
		return DynamicStrict, nil
	}
	return 0, fmt.Errorf("[dynamic] must be true, false or strict, got %s", raw)
}

func parseProperties(prefix string, raw json.RawMessage, out map[string]Field) error {
	var props map[string]json.RawMessage
	if err := json.Unmarshal(raw, &props); err != nil {
		return fieldErr(ErrInvalidMapping, strings.TrimSuffix(prefix, "."), "[properties] must be an object: %v", err)
	}
	for name, def := range props {
		path := prefix + name
		if err := validName(path); err != nil {
			return err
		}
		var params map[string]json.RawMessage
		if err := json.Unmarshal(def, &params); err != nil || params == nil {
			return fieldErr(ErrInvalidMapping, path, "expected an object of mapping parameters")
		}
		if err := parseField(path, params, out); err != nil {
			return err
		}
	}
	return nil
}

func parseField(path string, params map[string]json.RawMessage, out map[string]Field) error {
	var typ string
	if raw, ok := params["type"]; ok {
		if err := json.Unmarshal(raw, &typ); err != nil {
			return fieldErr(ErrInvalidMapping, path, "[type] must be a string")
		}
	}
	if sub, ok := params["properties"]; ok || typ == "object" {
		if typ != "" && typ != "object" {
			return fieldErr(ErrInvalidMapping, path, "[properties] is only allowed on objects, not [%s]", typ)
		}
		for key := range params {
			if key != "type" && key != "properties" {
				return fieldErr(ErrInvalidMapping, path, "unknown parameter [%s] on object", key)
			}
		}
		if !ok {
			return nil // an empty object mapping holds no fields
		}
		return parseProperties(path+".", sub, out)
	}
	if typ == "" {
		return fieldErr(ErrInvalidMapping, path, "no [type] specified")
	}
	t, ok := document.ParseFieldType(typ)
	if !ok {
		return fieldErr(ErrInvalidMapping, path, "no handler for type [%s]", typ)
	}
	f := NewField(t)
	for key, raw := range params {
		var err error
		switch key {
		case "type":
		case "analyzer":
			err = json.Unmarshal(raw, &f.Analyzer)
		case "index":
			f.Index, err = parseBool(raw)
		case "doc_values":
			f.DocValues, err = parseBool(raw)
		case "store":
			f.Store, err = parseBool(raw)
		default:
			return fieldErr(ErrInvalidMapping, path, "unknown parameter [%s] on mapper of type [%s]", key, typ)
		}
		if err != nil {
			return fieldErr(ErrInvalidMapping, path, "[%s]: %v", key, err)
		}
	}
	if _, dup := out[path]; dup {
		return fieldErr(ErrInvalidMapping, path, "mapped twice")
	}
	out[path] = f
	return nil
}

// parseBool accepts a JSON boolean or the strings "true" and "false", as
// Elasticsearch does for mapping parameters.
func parseBool(raw json.RawMessage) (bool, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return false, err
	}
	switch v {
	case true, "true":
		return true, nil
	case false, "false":
		return false, nil
	}
	return false, fmt.Errorf("expected true or false, got %s", raw)
}

// MarshalJSON writes the mapping in Elasticsearch's nested shape with only
// the parameters that differ from their defaults, so Parse(MarshalJSON(m))
// equals m.
func (m *Mapping) MarshalJSON() ([]byte, error) {
	type object = map[string]any
	top := object{}
	if m.dynamic != DynamicDefault {
		top["dynamic"] = m.dynamic.String()
	}
	props := object{}
	for _, name := range m.Names() {
		f := m.fields[name]
		parent := props
		parts := strings.Split(name, ".")
		for _, p := range parts[:len(parts)-1] {
			obj, ok := parent[p].(object)
			if !ok {
				obj = object{"properties": object{}}
				parent[p] = obj
			}
			parent = obj["properties"].(object)
		}
		def := NewField(f.Type)
		leaf := object{"type": f.Type.String()}
		if f.Analyzer != "" {
			leaf["analyzer"] = f.Analyzer
		}
		if f.Index != def.Index {
			leaf["index"] = f.Index
		}
		if f.DocValues != def.DocValues {
			leaf["doc_values"] = f.DocValues
		}
		if f.Store {
			leaf["store"] = true
		}
		parent[parts[len(parts)-1]] = leaf
	}
	top["properties"] = props
	return json.Marshal(top)
}
