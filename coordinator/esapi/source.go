package esapi

import (
	"bytes"
	"encoding/json"
)

// sourceFilter selects fields of _source, as Elasticsearch's _source
// includes and excludes: dotted paths with * wildcards ("user.*"). An
// object field is kept whole when its path is included, searched when
// an include may match below it, and dropped when empty after filtering;
// arrays of objects are filtered element by element under the array's
// path. Only a search that asks for it pays for it: without patterns the
// source passes through as it is, never decoded.
type sourceFilter struct {
	includes, excludes []string
}

// newSourceFilter returns nil (pass everything) without patterns.
func newSourceFilter(includes, excludes []string) (*sourceFilter, error) {
	if len(includes) == 0 && len(excludes) == 0 {
		return nil, nil
	}
	return &sourceFilter{includes: includes, excludes: excludes}, nil
}

// append writes the filtered source; a source that is not a JSON object
// (it always is) passes unchanged.
func (f *sourceFilter) append(b, src []byte) []byte {
	if f == nil {
		return append(b, src...)
	}
	src = bytes.TrimSpace(src)
	if len(src) == 0 || src[0] != '{' {
		return append(b, src...)
	}
	out, _ := f.object(b, src, "", len(f.includes) == 0)
	return out
}

// object writes the members of the object src (at path prefix) that the
// filter keeps; whole says an ancestor was included. It reports whether
// any member was written.
func (f *sourceFilter) object(b, src []byte, prefix string, whole bool) ([]byte, bool) {
	b = append(b, '{')
	n := 0
	i := skipSpace(src, 1)
	for i < len(src) && src[i] != '}' {
		keyEnd := stringEnd(src, i)
		var key string
		if err := json.Unmarshal(src[i:keyEnd], &key); err != nil {
			break
		}
		i = skipSpace(src, keyEnd)
		i = skipSpace(src, i+1) // ':'
		valEnd := valueEnd(src, i)
		val := src[i:valEnd]
		path := key
		if prefix != "" {
			path = prefix + "." + key
		}
		mark := len(b)
		if n > 0 {
			b = append(b, ',')
		}
		b = appendString(b, key)
		b = append(b, ':')
		var kept bool
		b, kept = f.value(b, val, path, whole)
		if kept {
			n++
		} else {
			b = b[:mark]
		}
		i = skipSpace(src, valEnd)
		if i < len(src) && src[i] == ',' {
			i = skipSpace(src, i+1)
		}
	}
	return append(b, '}'), n > 0
}

// value writes one field's value as the filter keeps it.
func (f *sourceFilter) value(b, val []byte, path string, whole bool) ([]byte, bool) {
	if matchAny(f.excludes, path) {
		return b, false
	}
	included := whole || matchAny(f.includes, path)
	below := !included && f.mayIncludeBelow(path)
	if !included && !below {
		return b, false
	}
	switch {
	case len(val) > 0 && val[0] == '{':
		if included && !f.mayExcludeBelow(path) {
			return append(b, val...), true
		}
		out, any := f.object(b, val, path, included)
		return out, any || included
	case len(val) > 0 && val[0] == '[':
		if included && !f.mayExcludeBelow(path) {
			return append(b, val...), true
		}
		return f.array(b, val, path, included)
	}
	return append(b, val...), included
}

// array filters the objects of an array under its path; other elements
// stay when the array is included.
func (f *sourceFilter) array(b, src []byte, path string, included bool) ([]byte, bool) {
	b = append(b, '[')
	n := 0
	i := skipSpace(src, 1)
	for i < len(src) && src[i] != ']' {
		end := valueEnd(src, i)
		el := src[i:end]
		mark := len(b)
		if n > 0 {
			b = append(b, ',')
		}
		var kept bool
		switch el[0] {
		case '{':
			b, kept = f.object(b, el, path, included)
		case '[':
			b, kept = f.array(b, el, path, included)
		default:
			b, kept = append(b, el...), included
		}
		if kept {
			n++
		} else {
			b = b[:mark]
		}
		i = skipSpace(src, end)
		if i < len(src) && src[i] == ',' {
			i = skipSpace(src, i+1)
		}
	}
	return append(b, ']'), n > 0 || included
}

func (f *sourceFilter) mayIncludeBelow(path string) bool {
	for _, p := range f.includes {
		if patternMayExtend(p, path+".") {
			return true
		}
	}
	return false
}

func (f *sourceFilter) mayExcludeBelow(path string) bool {
	for _, p := range f.excludes {
		if patternMayExtend(p, path+".") {
			return true
		}
	}
	return false
}

// patternMayExtend reports whether some name starting with prefix
// matches the * pattern.
func patternMayExtend(pattern, prefix string) bool {
	if prefix == "" {
		return true
	}
	if pattern == "" {
		return false
	}
	if pattern[0] == '*' {
		// The star takes nothing, or one more byte of the prefix.
		return patternMayExtend(pattern[1:], prefix) || patternMayExtend(pattern, prefix[1:])
	}
	return pattern[0] == prefix[0] && patternMayExtend(pattern[1:], prefix[1:])
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd is the index after the JSON string starting at b[i] ('"').
func stringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(b)
}

// valueEnd is the index after the JSON value starting at b[i].
func valueEnd(b []byte, i int) int {
	if i >= len(b) {
		return len(b)
	}
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				j = stringEnd(b, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return len(b)
	}
	j := i
	for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\n' && b[j] != '\t' && b[j] != '\r' {
		j++
	}
	return j
}
