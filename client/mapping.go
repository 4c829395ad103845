package client

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// ParseMapping reads a mapping in Elasticsearch's JSON form:
//
//	{"dynamic": "strict", "properties": {
//	   "title": {"type": "text", "analyzer": "cjk"},
//	   "user":  {"properties": {"id": {"type": "keyword"}}}}}
//
// Objects flatten to dotted names ("user.id"), as Sluice mappings are flat.
func ParseMapping(data []byte) (*sluicev1.Mapping, error) {
	var raw struct {
		Dynamic    json.RawMessage            `json:"dynamic"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("mapping: %w", err)
	}
	m := &sluicev1.Mapping{Properties: map[string]*sluicev1.FieldMapping{}}
	switch d := strings.Trim(string(raw.Dynamic), `"`); d {
	case "":
	case "true":
		m.Dynamic = sluicev1.DynamicMapping_DYNAMIC_MAPPING_TRUE
	case "false":
		m.Dynamic = sluicev1.DynamicMapping_DYNAMIC_MAPPING_FALSE
	case "strict":
		m.Dynamic = sluicev1.DynamicMapping_DYNAMIC_MAPPING_STRICT
	default:
		return nil, fmt.Errorf("mapping: dynamic: want true, false or \"strict\", got %s", raw.Dynamic)
	}
	if err := parseProperties("", raw.Properties, m.Properties); err != nil {
		return nil, err
	}
	return m, nil
}

func parseProperties(prefix string, props map[string]json.RawMessage, out map[string]*sluicev1.FieldMapping) error {
	for _, name := range slices.Sorted(maps.Keys(props)) {
		path := prefix + name
		var f struct {
			Type       string                     `json:"type"`
			Analyzer   string                     `json:"analyzer"`
			Index      *bool                      `json:"index"`
			DocValues  *bool                      `json:"doc_values"`
			Properties map[string]json.RawMessage `json:"properties"`
		}
		dec := json.NewDecoder(bytes.NewReader(props[name]))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&f); err != nil {
			return fmt.Errorf("mapping: field [%s]: %w", path, err)
		}
		if f.Properties != nil {
			if f.Type != "" && f.Type != "object" {
				return fmt.Errorf("mapping: field [%s]: type [%s] cannot have properties", path, f.Type)
			}
			if err := parseProperties(path+".", f.Properties, out); err != nil {
				return err
			}
			continue
		}
		t, ok := sluicev1.FieldType_value["FIELD_TYPE_"+strings.ToUpper(f.Type)]
		if !ok || f.Type == "" || f.Type == "unspecified" {
			return fmt.Errorf("mapping: field [%s]: unknown type [%s]", path, f.Type)
		}
		out[path] = &sluicev1.FieldMapping{Type: sluicev1.FieldType(t), Analyzer: f.Analyzer, Index: f.Index, DocValues: f.DocValues}
	}
	return nil
}
