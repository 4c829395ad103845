package esjson

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"google.golang.org/protobuf/types/known/durationpb"

	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// ErrInvalidSearch is the Kind of every search body error outside the
// query and the sort (which keep their own kinds, with paths from the
// body: "query.bool.must", "sort[0]").
var ErrInvalidSearch = errors.New("invalid search request")

var searchDoc = doc{ErrInvalidSearch}

// Search is the body of an Elasticsearch search (_search, the first
// request of a scroll) as Sluice reads it.
type Search struct {
	// Request holds query, from, size, sort, search_after, pit,
	// track_total_hits, timeout and "_source": false; indices and routing
	// come from the URL.
	Request *sluicev1.SearchRequest
	// Slice is a sliced scroll's part ("slice": {"id", "max"}).
	Slice *sluicev1.Slice
	// NoTotal: "track_total_hits": false (or 0); Elasticsearch then
	// leaves hits.total out of the response.
	NoTotal bool
	// SourceIncludes and SourceExcludes filter _source: "_source":
	// "pattern", ["a", "b.*"] or {"includes": [...], "excludes": [...]}.
	SourceIncludes, SourceExcludes []string
	// SeqNoPrimaryTerm: "seq_no_primary_term": true, each hit's _seq_no
	// and _primary_term.
	SeqNoPrimaryTerm bool
}

// unsupportedSearchKeys are the search body parts of Elasticsearch that
// Sluice lacks, with what to do instead where there is something.
var unsupportedSearchKeys = map[string]string{
	"aggs":             "aggregations are not supported",
	"aggregations":     "aggregations are not supported",
	"highlight":        "highlighting is not supported",
	"suggest":          "suggesters are not supported",
	"collapse":         "field collapsing is not supported",
	"post_filter":      "post_filter is not supported (it filters after aggregations, which Sluice lacks): put the filter in query.bool.filter",
	"rescore":          "rescoring is not supported",
	"script_fields":    "scripts are not supported",
	"runtime_mappings": "runtime fields are not supported",
	"stored_fields":    "stored_fields is not supported: every document is returned as its _source",
	"fields":           "the fields option is not supported: read fields from _source",
	"min_score":        "min_score is not supported",
	"explain":          "explain is not supported",
	"version":          "Sluice keeps no _version counter: ask for seq_no_primary_term (each hit's _seq_no and _primary_term)",
	"profile":          "profiling is not supported",
	"indices_boost":    "indices_boost is not supported",
	"knn":              "kNN search is not supported",
	"retriever":        "retrievers are not supported",
	"rank":             "rank is not supported",
	"terminate_after":  "terminate_after is not supported",
	"stats":            "stats groups are not supported",
	"ext":              "search extensions are not supported",
	"pinned":           "pinned queries are not supported",
}

// ParseSearch reads a search body: query, from, size, sort, search_after,
// pit {id, keep_alive}, track_total_hits (true, false or a count),
// timeout, _source (false, true, includes and excludes), docvalue_fields
// (names, no wildcards or format), seq_no_primary_term, slice and
// track_scores (false only). Anything else is an error: the parts of
// Elasticsearch that Sluice lacks (aggs, highlight, ...) say so. Empty
// input is a search of everything.
func ParseSearch(data []byte) (*Search, error) {
	s := &Search{Request: &sluicev1.SearchRequest{}}
	v, err := searchDoc.decodeObject(data, "a search request body")
	if v == nil {
		return s, err
	}
	r := s.Request
	err = searchDoc.params("", v, func(key string) string {
		if why, ok := unsupportedSearchKeys[key]; ok {
			return fmt.Sprintf("[%s] is not supported by Sluice: %s", key, why)
		}
		return fmt.Sprintf("Unknown key for a search request body [%s]", key)
	}, map[string]setter{
		"query": func(path string, v *value) (err error) {
			r.Query, err = parseQuery(path, v, 0)
			return err
		},
		"from": func(path string, v *value) error {
			n, err := nonNegative(path, "from", v)
			r.From = n
			return err
		},
		"size": func(path string, v *value) error {
			n, err := nonNegative(path, "size", v)
			r.Size = &n
			return err
		},
		"sort": func(path string, v *value) (err error) {
			r.Sort, err = parseSort(path, v)
			return err
		},
		"search_after": func(path string, v *value) (err error) {
			r.SearchAfter, err = parseSearchAfter(path, v)
			return err
		},
		"pit": func(path string, v *value) error {
			r.Pit = &sluicev1.PointInTime{}
			err := searchDoc.params(path, v, unknownField("pit"), map[string]setter{
				"id": func(path string, v *value) error {
					if v.kind != kString || v.text == "" {
						return searchDoc.errorf(path, "[pit] id must be a non-empty string, got %s", describe(v))
					}
					r.Pit.Id = v.text
					return nil
				},
				"keep_alive": func(path string, v *value) (err error) {
					r.Pit.KeepAlive, err = timeParam(path, "keep_alive", v)
					return err
				},
			})
			if err == nil && r.Pit.Id == "" {
				err = searchDoc.errorf(path, "[pit] requires an id")
			}
			return err
		},
		"track_total_hits": func(path string, v *value) error {
			if b, ok := v.boolean(); ok {
				s.NoTotal = !b
				if b {
					r.TrackTotalHits = -1
				}
				return nil
			}
			n, ok := v.int(32)
			switch {
			case !ok || n < -1:
				return searchDoc.errorf(path, "[track_total_hits] must be true, false or a count, got %s", describe(v))
			case n == 0:
				s.NoTotal = true
			default:
				r.TrackTotalHits = int32(n)
			}
			return nil
		},
		"track_scores": func(path string, v *value) error {
			if b, ok := v.boolean(); !ok || b {
				return searchDoc.errorf(path, "[track_scores] is not supported by Sluice: hits sorted by fields have no score (sort by _score as well to get one)")
			}
			return nil
		},
		"timeout": func(path string, v *value) (err error) {
			r.Timeout, err = timeParam(path, "timeout", v)
			return err
		},
		"_source": func(path string, v *value) error { return s.parseSource(path, v) },
		"docvalue_fields": func(path string, v *value) (err error) {
			r.DocvalueFields, err = parseDocValueFields(path, v)
			return err
		},
		"seq_no_primary_term": func(path string, v *value) error {
			b, ok := v.boolean()
			if !ok {
				return searchDoc.errorf(path, "[seq_no_primary_term] must be a boolean, got %s", describe(v))
			}
			s.SeqNoPrimaryTerm = b
			return nil
		},
		"slice": func(path string, v *value) error {
			s.Slice = &sluicev1.Slice{}
			hasID, hasMax := false, false
			err := searchDoc.params(path, v, func(key string) string {
				if key == "field" {
					return "[slice] field is not supported by Sluice: slices divide documents by _id"
				}
				return fmt.Sprintf("[slice] unknown field [%s]", key)
			}, map[string]setter{
				"id": func(path string, v *value) error {
					n, err := nonNegative(path, "slice.id", v)
					s.Slice.Id, hasID = n, true
					return err
				},
				"max": func(path string, v *value) error {
					n, err := nonNegative(path, "slice.max", v)
					s.Slice.Max, hasMax = n, true
					return err
				},
			})
			switch {
			case err != nil:
				return err
			case !hasID || !hasMax:
				return searchDoc.errorf(path, "[slice] requires id and max")
			case s.Slice.Max < 1 || s.Slice.Id >= s.Slice.Max:
				return searchDoc.errorf(path, "[slice] id must be in [0, max) and max > 0, got id %d and max %d", s.Slice.Id, s.Slice.Max)
			}
			return nil
		},
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// ParseCount reads the body of a _count: only a query.
func ParseCount(data []byte) (*sluicev1.Query, error) {
	v, err := searchDoc.decodeObject(data, "a count request body")
	if v == nil {
		return nil, err
	}
	var q *sluicev1.Query
	err = searchDoc.params("", v, func(key string) string {
		return fmt.Sprintf("request does not support [%s]: a count takes a query only", key)
	}, map[string]setter{
		"query": func(path string, v *value) (err error) {
			q, err = parseQuery(path, v, 0)
			return err
		},
	})
	return q, err
}

// parseDocValueFields reads docvalue_fields: field names, or objects
// {"field": name}. Wildcards and format are refused: Sluice returns each
// named column as its values are (sluicev1.Hit.fields).
func parseDocValueFields(path string, v *value) ([]string, error) {
	if v.kind != kArray {
		return nil, searchDoc.errorf(path, "[docvalue_fields] must be an array of field names, got %s", v.typeName())
	}
	out := []string{}
	for i, e := range v.elems {
		epath := index(path, i)
		name := e.text
		if e.kind == kObject {
			name = ""
			err := searchDoc.params(epath, e, func(key string) string {
				if key == "format" {
					return "[docvalue_fields] format is not supported by Sluice: values are returned as stored (dates as epoch milliseconds)"
				}
				return fmt.Sprintf("[docvalue_fields] unknown field [%s]", key)
			}, map[string]setter{"field": func(path string, v *value) error {
				if v.kind != kString {
					return searchDoc.errorf(path, "[docvalue_fields] field must be a string, got %s", v.typeName())
				}
				name = v.text
				return nil
			}})
			if err != nil {
				return nil, err
			}
		} else if e.kind != kString {
			return nil, searchDoc.errorf(epath, "[docvalue_fields] entries must be field names or {\"field\": name}, got %s", e.typeName())
		}
		switch {
		case name == "":
			return nil, searchDoc.errorf(epath, "[docvalue_fields] requires a field name")
		case strings.ContainsAny(name, "*?"):
			return nil, searchDoc.errorf(epath, "[docvalue_fields] wildcards are not supported by Sluice: name each field")
		}
		out = append(out, name)
	}
	return out, nil
}

// parseSource reads _source: a boolean, one pattern, a list of patterns
// (includes) or {"includes": ..., "excludes": ...}.
func (s *Search) parseSource(path string, v *value) error {
	patterns := func(path string, v *value) ([]string, error) {
		if v.kind == kString {
			return []string{v.text}, nil
		}
		if v.kind != kArray {
			return nil, searchDoc.errorf(path, "[_source] patterns must be a string or an array of strings, got %s", v.typeName())
		}
		out := []string{}
		for i, e := range v.elems {
			if e.kind != kString {
				return nil, searchDoc.errorf(index(path, i), "[_source] patterns must be strings, got %s", e.typeName())
			}
			out = append(out, e.text)
		}
		return out, nil
	}
	if b, ok := v.boolean(); ok && v.kind == kBool {
		if !b {
			s.Request.FetchSource = &b
		}
		return nil
	}
	if v.kind != kObject {
		var err error
		s.SourceIncludes, err = patterns(path, v)
		return err
	}
	inc := func(path string, v *value) (err error) {
		s.SourceIncludes, err = patterns(path, v)
		return err
	}
	exc := func(path string, v *value) (err error) {
		s.SourceExcludes, err = patterns(path, v)
		return err
	}
	return searchDoc.params(path, v, unknownField("_source"), map[string]setter{
		"includes": inc, "include": inc, "excludes": exc, "exclude": exc,
	})
}

func nonNegative(path, name string, v *value) (int32, error) {
	n, ok := v.int(32)
	if !ok || n < 0 {
		return 0, searchDoc.errorf(path, "[%s] must be a non-negative integer, got %s", name, describe(v))
	}
	return int32(n), nil
}

func timeParam(path, name string, v *value) (*durationpb.Duration, error) {
	if v.kind != kString {
		return nil, searchDoc.errorf(path, "[%s] must be a time value such as \"1m\", got %s", name, describe(v))
	}
	d, err := ParseTimeValue(v.text)
	if err != nil {
		return nil, searchDoc.errorf(path, "failed to parse [%s] value [%s] as a time value: %v", name, v.text, err)
	}
	return durationpb.New(d), nil
}

// parseSearchAfter reads search_after values as hits' sort values were
// written (MarshalSortValues): strings are keywords, integral numbers longs,
// other numbers doubles, null a missing value. The cluster converts each
// to its sort key's type (a long to a double field's, or a score).
func parseSearchAfter(path string, v *value) (*sluicev1.SearchAfter, error) {
	if v.kind != kArray {
		return nil, searchDoc.errorf(path, "[search_after] must be an array of sort values, got %s", v.typeName())
	}
	out := &sluicev1.SearchAfter{}
	for i, e := range v.elems {
		sv := &sluicev1.SortValue{}
		switch e.kind {
		case kNull:
		case kString:
			sv.Kind = &sluicev1.SortValue_KeywordValue{KeywordValue: []byte(e.text)}
		case kBool:
			n := int64(0)
			if e.b {
				n = 1
			}
			sv.Kind = &sluicev1.SortValue_LongValue{LongValue: n}
		case kNumber:
			if n, err := strconv.ParseInt(e.text, 10, 64); err == nil {
				sv.Kind = &sluicev1.SortValue_LongValue{LongValue: n}
				break
			}
			f, err := strconv.ParseFloat(e.text, 64)
			if err != nil || math.IsInf(f, 0) {
				return nil, searchDoc.errorf(index(path, i), "[search_after] number %s is out of range", e.text)
			}
			sv.Kind = &sluicev1.SortValue_DoubleValue{DoubleValue: f}
		default:
			return nil, searchDoc.errorf(index(path, i), "[search_after] values must be strings, numbers, booleans or null, got %s", e.typeName())
		}
		out.Values = append(out.Values, sv)
	}
	return out, nil
}

// MarshalSortValues writes a hit's sort values as a JSON array, as
// Elasticsearch does and search_after reads them back: keywords as
// strings, longs (dates as epoch milliseconds, _shard_doc) as integers,
// doubles with a fraction or exponent, scores as floats, a missing value
// as null. A keyword that is not UTF-8 cannot be written.
func MarshalSortValues(vs []*sluicev1.SortValue) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('[')
	for i, v := range vs {
		if i > 0 {
			buf.WriteByte(',')
		}
		switch k := v.GetKind().(type) {
		case nil:
			buf.WriteString("null")
		case *sluicev1.SortValue_Score:
			f := float64(k.Score)
			if math.IsInf(f, 0) || math.IsNaN(f) {
				return nil, fmt.Errorf("esjson: sort value %d: score %v has no JSON form", i, k.Score)
			}
			buf.WriteString(string(float32Number(k.Score)))
		case *sluicev1.SortValue_LongValue:
			buf.WriteString(strconv.FormatInt(k.LongValue, 10))
		case *sluicev1.SortValue_DoubleValue:
			n, ok := doubleNumber(k.DoubleValue)
			if !ok {
				return nil, fmt.Errorf("esjson: sort value %d: %v has no JSON form", i, k.DoubleValue)
			}
			buf.WriteString(string(n))
		case *sluicev1.SortValue_KeywordValue:
			if !utf8.Valid(k.KeywordValue) {
				return nil, fmt.Errorf("esjson: sort value %d: keyword is not UTF-8", i)
			}
			appendString(&buf, string(k.KeywordValue))
		}
	}
	buf.WriteByte(']')
	return buf.Bytes(), nil
}
