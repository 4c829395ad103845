package esjson

import (
	"errors"
	"fmt"
	"strings"

	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// ErrInvalidSort is the Kind of every sort error.
var ErrInvalidSort = errors.New("invalid sort")

var sortDoc = doc{ErrInvalidSort}

// ParseSort reads the sort of an Elasticsearch search: a list of keys, each
// a field name ("year", "_score", "_doc", "_shard_doc"), {"<field>":
// "asc"|"desc"} or {"<field>": {"order": ..., "missing": "_first"|"_last"}};
// a single key needs no list. Empty input is no sort (by score).
func ParseSort(data []byte) ([]*sluicev1.SortField, error) {
	v, err := sortDoc.decode(data)
	if v == nil {
		return nil, err
	}
	return parseSort("", v)
}

// parseSort reads a decoded sort at path.
func parseSort(base string, v *value) ([]*sluicev1.SortField, error) {
	keys := []*value{v}
	if v.kind == kArray {
		keys = v.elems
	}
	var out []*sluicev1.SortField
	for i, k := range keys {
		path := base
		if v.kind == kArray {
			path = index(base, i)
		}
		switch k.kind {
		case kString:
			sf, err := parseSortKey(path, k.text, nil)
			if err != nil {
				return nil, err
			}
			out = append(out, sf)
		case kObject:
			// One object may hold several keys, in order.
			for _, m := range k.members {
				sf, err := parseSortKey(join(path, m.key), m.key, m.val)
				if err != nil {
					return nil, err
				}
				out = append(out, sf)
			}
		default:
			return nil, sortDoc.errorf(path, "a sort key must be a field name or an object, got %s", k.typeName())
		}
	}
	return out, nil
}

// parseSortKey reads the key of field; v is its order or options, nil for
// a key given by name alone.
func parseSortKey(path, field string, v *value) (*sluicev1.SortField, error) {
	sf := &sluicev1.SortField{Field: field}
	if field == "" {
		return nil, sortDoc.errorf(path, "a sort key needs a field name")
	}
	if strings.HasPrefix(field, "_") && field != "_score" && field != "_doc" && field != "_shard_doc" {
		return nil, sortDoc.errorf(path, "[%s] sort is not supported (Sluice sorts by fields with doc values, _score, _doc and _shard_doc)", field)
	}
	switch {
	case v == nil:
		return sf, nil
	case v.kind == kString:
		return sf, sortOrder(path, v, sf)
	}
	parser := "field_sort"
	if strings.HasPrefix(field, "_") {
		parser = field
	}
	setters := map[string]setter{"order": func(path string, v *value) error { return sortOrder(path, v, sf) }}
	if parser == "field_sort" {
		setters["missing"] = func(path string, v *value) error {
			switch {
			case v.kind == kString && v.text == "_first":
				sf.MissingFirst = true
			case v.kind == kString && v.text == "_last":
			default:
				return sortDoc.errorf(path, "[field_sort] missing must be _first or _last (Sluice has no custom missing value), got %s", describe(v))
			}
			return nil
		}
	}
	return sf, sortDoc.params(path, v, func(key string) string { return fmt.Sprintf("[%s] unknown field [%s]", parser, key) }, setters)
}

func sortOrder(path string, v *value, sf *sluicev1.SortField) error {
	switch v.lowerOneOf("asc", "desc") {
	case "asc":
		sf.Order = sluicev1.SortOrder_SORT_ORDER_ASC
	case "desc":
		sf.Order = sluicev1.SortOrder_SORT_ORDER_DESC
	default:
		return sortDoc.errorf(path, "Unknown SortOrder [%s]: use asc or desc", describe(v))
	}
	return nil
}
