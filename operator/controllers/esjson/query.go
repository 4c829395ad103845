package esjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"

	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// ErrInvalidQuery is wrapped by every query error.
var ErrInvalidQuery = errors.New("invalid query")

// maxDepth bounds bool nesting, so a hostile resource cannot exhaust the
// operator's stack.
const maxDepth = 32

// Query parses a query DSL object; empty input is a nil query (match all).
func Query(raw []byte) (*sluicev1.Query, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil
	}
	v, err := decode(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidQuery, err)
	}
	return query("query", v, 0)
}

func decode(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("trailing data after the query")
	}
	return v, nil
}

func invalid(path, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrInvalidQuery, path, fmt.Sprintf(format, args...))
}

// single returns the one key and value of an object such as {"term": {...}}.
func single(path string, v any) (string, any, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		return "", nil, invalid(path, "must be an object, got %s", kind(v))
	}
	if len(obj) != 1 {
		return "", nil, invalid(path, "must have exactly one key, got %d", len(obj))
	}
	for k, v := range obj {
		return k, v, nil
	}
	panic("unreachable")
}

func query(path string, v any, depth int) (*sluicev1.Query, error) {
	if depth > maxDepth {
		return nil, invalid(path, "nested deeper than %d", maxDepth)
	}
	kind, body, err := single(path, v)
	if err != nil {
		return nil, err
	}
	path += "." + kind
	switch kind {
	case "match_all":
		q := &sluicev1.MatchAllQuery{}
		err := params(path, body, map[string]func(any) error{"boost": float32Param(path, "boost", &q.Boost)})
		return &sluicev1.Query{Kind: &sluicev1.Query_MatchAll{MatchAll: q}}, err
	case "match":
		return match(path, body)
	case "match_phrase":
		return phrase(path, body)
	case "term":
		return term(path, body)
	case "terms":
		return terms(path, body)
	case "range":
		return rangeQuery(path, body)
	case "bool":
		return boolQuery(path, body, depth)
	case "ids":
		q := &sluicev1.IdsQuery{}
		err := params(path, body, map[string]func(any) error{
			"values": stringsParam(path, "values", &q.Values),
			"boost":  float32Param(path, "boost", &q.Boost),
		})
		return &sluicev1.Query{Kind: &sluicev1.Query_Ids{Ids: q}}, err
	default:
		return nil, invalid(path, "unknown query type (supported: match_all, match, match_phrase, term, terms, range, bool, ids)")
	}
}

// params applies the setters of an object's keys; unknown keys are errors.
func params(path string, v any, setters map[string]func(any) error) error {
	obj, ok := v.(map[string]any)
	if !ok {
		return invalid(path, "must be an object, got %s", kind(v))
	}
	for _, k := range sortedKeys(obj) {
		set, ok := setters[k]
		if !ok {
			return invalid(path, "unknown parameter [%s]", k)
		}
		if err := set(obj[k]); err != nil {
			return err
		}
	}
	return nil
}

// fieldBody splits {"field": body} and reports whether body is the long
// form (an object).
func fieldBody(path string, v any) (field string, body any, long bool, err error) {
	field, body, err = single(path, v)
	if err != nil {
		return "", nil, false, err
	}
	_, long = body.(map[string]any)
	return field, body, long, nil
}

func match(path string, v any) (*sluicev1.Query, error) {
	field, body, long, err := fieldBody(path, v)
	if err != nil {
		return nil, err
	}
	q := &sluicev1.MatchQuery{Field: field}
	out := &sluicev1.Query{Kind: &sluicev1.Query_Match{Match: q}}
	path += "." + field
	if !long {
		return out, stringParam(path, "", &q.Query)(body)
	}
	return out, params(path, body, map[string]func(any) error{
		"query": stringParam(path, "query", &q.Query),
		"operator": func(v any) error {
			var op string
			if err := stringParam(path, "operator", &op)(v); err != nil {
				return err
			}
			switch op {
			case "or", "OR":
				q.Operator = sluicev1.MatchOperator_MATCH_OPERATOR_OR
			case "and", "AND":
				q.Operator = sluicev1.MatchOperator_MATCH_OPERATOR_AND
			default:
				return invalid(path+".operator", "must be \"and\" or \"or\", got %q", op)
			}
			return nil
		},
		"minimum_should_match": msmParam(path, &q.MinimumShouldMatch),
		"boost":                float32Param(path, "boost", &q.Boost),
	})
}

func phrase(path string, v any) (*sluicev1.Query, error) {
	field, body, long, err := fieldBody(path, v)
	if err != nil {
		return nil, err
	}
	q := &sluicev1.PhraseQuery{Field: field}
	out := &sluicev1.Query{Kind: &sluicev1.Query_Phrase{Phrase: q}}
	path += "." + field
	if !long {
		return out, stringParam(path, "", &q.Query)(body)
	}
	return out, params(path, body, map[string]func(any) error{
		"query": stringParam(path, "query", &q.Query),
		"slop": func(v any) error {
			n, err := intValue(path+".slop", v)
			if err != nil {
				return err
			}
			if n < 0 || n > math.MaxInt32 {
				return invalid(path+".slop", "must be from 0 to %d, got %d", math.MaxInt32, n)
			}
			q.Slop = int32(n)
			return nil
		},
		"boost": float32Param(path, "boost", &q.Boost),
	})
}

func term(path string, v any) (*sluicev1.Query, error) {
	field, body, long, err := fieldBody(path, v)
	if err != nil {
		return nil, err
	}
	q := &sluicev1.TermQuery{Field: field}
	out := &sluicev1.Query{Kind: &sluicev1.Query_Term{Term: q}}
	path += "." + field
	if !long {
		q.Value, err = value(path, body)
		return out, err
	}
	err = params(path, body, map[string]func(any) error{
		"value": valueParam(path+".value", &q.Value),
		"boost": float32Param(path, "boost", &q.Boost),
	})
	if err == nil && q.Value == nil {
		err = invalid(path, "value is required")
	}
	return out, err
}

func terms(path string, v any) (*sluicev1.Query, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, invalid(path, "must be an object, got %s", kind(v))
	}
	q := &sluicev1.TermsQuery{}
	for _, k := range sortedKeys(obj) {
		if k == "boost" {
			if err := float32Param(path, "boost", &q.Boost)(obj[k]); err != nil {
				return nil, err
			}
			continue
		}
		if q.Field != "" {
			return nil, invalid(path, "names two fields, [%s] and [%s]", q.Field, k)
		}
		q.Field = k
		list, ok := obj[k].([]any)
		if !ok {
			return nil, invalid(path+"."+k, "must be an array of values, got %s", kind(obj[k]))
		}
		for i, e := range list {
			fv, err := value(fmt.Sprintf("%s.%s[%d]", path, k, i), e)
			if err != nil {
				return nil, err
			}
			q.Values = append(q.Values, fv)
		}
	}
	if q.Field == "" {
		return nil, invalid(path, "names no field")
	}
	return &sluicev1.Query{Kind: &sluicev1.Query_Terms{Terms: q}}, nil
}

func rangeQuery(path string, v any) (*sluicev1.Query, error) {
	field, body, err := single(path, v)
	if err != nil {
		return nil, err
	}
	q := &sluicev1.RangeQuery{Field: field}
	path += "." + field
	err = params(path, body, map[string]func(any) error{
		"gt":    valueParam(path+".gt", &q.Gt),
		"gte":   valueParam(path+".gte", &q.Gte),
		"lt":    valueParam(path+".lt", &q.Lt),
		"lte":   valueParam(path+".lte", &q.Lte),
		"boost": float32Param(path, "boost", &q.Boost),
	})
	return &sluicev1.Query{Kind: &sluicev1.Query_Range{Range: q}}, err
}

func boolQuery(path string, v any, depth int) (*sluicev1.Query, error) {
	q := &sluicev1.BoolQuery{}
	clauses := func(name string, dst *[]*sluicev1.Query) func(any) error {
		return func(v any) error {
			list, ok := v.([]any)
			if !ok {
				list = []any{v} // Elasticsearch takes one clause without a list
			}
			for i, e := range list {
				c, err := query(fmt.Sprintf("%s.%s[%d]", path, name, i), e, depth+1)
				if err != nil {
					return err
				}
				*dst = append(*dst, c)
			}
			return nil
		}
	}
	err := params(path, v, map[string]func(any) error{
		"must":                 clauses("must", &q.Must),
		"should":               clauses("should", &q.Should),
		"must_not":             clauses("must_not", &q.MustNot),
		"filter":               clauses("filter", &q.Filter),
		"minimum_should_match": msmParam(path, &q.MinimumShouldMatch),
		"boost":                float32Param(path, "boost", &q.Boost),
	})
	return &sluicev1.Query{Kind: &sluicev1.Query_Bool{Bool: q}}, err
}

// value converts a JSON scalar: strings stay strings, integral numbers are
// longs, other numbers doubles; the cluster converts to the field's type.
func value(path string, v any) (*sluicev1.FieldValue, error) {
	switch x := v.(type) {
	case string:
		return &sluicev1.FieldValue{Kind: &sluicev1.FieldValue_StringValue{StringValue: x}}, nil
	case bool:
		return &sluicev1.FieldValue{Kind: &sluicev1.FieldValue_BoolValue{BoolValue: x}}, nil
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return &sluicev1.FieldValue{Kind: &sluicev1.FieldValue_LongValue{LongValue: n}}, nil
		}
		f, err := x.Float64()
		if err != nil || math.IsInf(f, 0) {
			return nil, invalid(path, "number %s out of range", x)
		}
		return &sluicev1.FieldValue{Kind: &sluicev1.FieldValue_DoubleValue{DoubleValue: f}}, nil
	default:
		return nil, invalid(path, "must be a string, number or boolean, got %s", kind(v))
	}
}

func valueParam(path string, dst **sluicev1.FieldValue) func(any) error {
	return func(v any) error {
		fv, err := value(path, v)
		*dst = fv
		return err
	}
}

func stringParam(path, name string, dst *string) func(any) error {
	if name != "" {
		path += "." + name
	}
	return func(v any) error {
		s, ok := v.(string)
		if !ok {
			return invalid(path, "must be a string, got %s", kind(v))
		}
		*dst = s
		return nil
	}
}

func stringsParam(path, name string, dst *[]string) func(any) error {
	path += "." + name
	return func(v any) error {
		list, ok := v.([]any)
		if !ok {
			return invalid(path, "must be an array of strings, got %s", kind(v))
		}
		for i, e := range list {
			s, ok := e.(string)
			if !ok {
				return invalid(fmt.Sprintf("%s[%d]", path, i), "must be a string, got %s", kind(e))
			}
			*dst = append(*dst, s)
		}
		return nil
	}
}

// msmParam takes minimum_should_match as a number or a string ("75%").
func msmParam(path string, dst *string) func(any) error {
	path += ".minimum_should_match"
	return func(v any) error {
		switch x := v.(type) {
		case string:
			*dst = x
		case json.Number:
			if _, err := x.Int64(); err != nil {
				return invalid(path, "must be an integer or a string, got %s", x)
			}
			*dst = x.String()
		default:
			return invalid(path, "must be an integer or a string, got %s", kind(v))
		}
		return nil
	}
}

func float32Param(path, name string, dst *float32) func(any) error {
	path += "." + name
	return func(v any) error {
		n, ok := v.(json.Number)
		if !ok {
			return invalid(path, "must be a number, got %s", kind(v))
		}
		f, err := n.Float64()
		if err != nil || math.Abs(f) > math.MaxFloat32 {
			return invalid(path, "number %s out of range", n)
		}
		*dst = float32(f)
		return nil
	}
}

func intValue(path string, v any) (int64, error) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, invalid(path, "must be an integer, got %s", kind(v))
	}
	i, err := n.Int64()
	if err != nil {
		return 0, invalid(path, "must be an integer, got %s", n)
	}
	return i, nil
}

func kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	default:
		return fmt.Sprintf("%T", v)
	}
}

// sortedKeys makes errors deterministic when an object has several bad keys.
func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
