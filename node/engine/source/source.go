package source

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// ErrNotObject: a _source or a partial document is not a JSON object
// (malformed JSON included).
var ErrNotObject = errors.New("not a JSON object")

// member is one key of an object, its value's bytes as written.
type member struct {
	key string
	val json.RawMessage
}

// object is a JSON object with its keys in order.
type object []member

func (o object) index(key string) int {
	for i, m := range o {
		if m.key == key {
			return i
		}
	}
	return -1
}

// set replaces key's value, or adds the key last.
func (o object) set(key string, val json.RawMessage) object {
	if i := o.index(key); i >= 0 {
		o[i].val = val
		return o
	}
	return append(o, member{key: key, val: val})
}

// parseObject reads b as a JSON object. A repeated key keeps its first
// position and its last value (Go's and most parsers' reading).
func parseObject(b []byte) (object, error) {
	o, err := decodeObject(b)
	if err != nil && !errors.Is(err, ErrNotObject) {
		return nil, fmt.Errorf("%w: %w", ErrNotObject, err)
	}
	return o, err
}

func decodeObject(b []byte) (object, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotObject, err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, ErrNotObject
	}
	var o object
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil, err
		}
		o = o.set(key, val)
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: data after the object", ErrNotObject)
	}
	return o, nil
}

func (o object) append(dst []byte) []byte {
	dst = append(dst, '{')
	for i, m := range o {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, m.key)
		dst = append(dst, ':')
		dst = append(dst, m.val...)
	}
	return append(dst, '}')
}

// appendString writes s as a JSON string, escaping only what JSON needs
// (encoding/json would also escape <, > and &).
func appendString(dst []byte, s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return append(dst, bytes.TrimRight(buf.Bytes(), "\n")...)
}

func isObject(v json.RawMessage) bool {
	v = bytes.TrimLeft(v, " \t\r\n")
	return len(v) > 0 && v[0] == '{'
}

// Merge merges the partial document patch into the JSON object src and
// reports whether anything changed: for each key of patch, when both
// values are objects they are merged the same way; otherwise patch's value
// replaces src's (null included, as in Elasticsearch; an array is replaced
// whole). A value equal to the old one, byte for byte once compacted, is
// no change — Elasticsearch's detect_noop.
func Merge(src, patch []byte) (out []byte, changed bool, err error) {
	s, err := parseObject(src)
	if err != nil {
		return nil, false, fmt.Errorf("source: %w", err)
	}
	p, err := parseObject(patch)
	if err != nil {
		return nil, false, fmt.Errorf("partial document: %w", err)
	}
	s, changed, err = merge(s, p)
	if err != nil {
		return nil, false, err
	}
	if !changed {
		return src, false, nil
	}
	return s.append(nil), true, nil
}

func merge(s, p object) (object, bool, error) {
	changed := false
	for _, m := range p {
		i := s.index(m.key)
		if i >= 0 && isObject(s[i].val) && isObject(m.val) {
			so, err := parseObject(s[i].val)
			if err != nil {
				return nil, false, err
			}
			po, err := parseObject(m.val)
			if err != nil {
				return nil, false, err
			}
			merged, ch, err := merge(so, po)
			if err != nil {
				return nil, false, err
			}
			if ch {
				s[i].val, changed = merged.append(nil), true
			}
			continue
		}
		if i >= 0 && equalJSON(s[i].val, m.val) {
			continue
		}
		s, changed = s.set(m.key, m.val), true
	}
	return s, changed, nil
}

func equalJSON(a, b []byte) bool {
	var ca, cb bytes.Buffer
	if json.Compact(&ca, a) != nil || json.Compact(&cb, b) != nil {
		return false
	}
	return bytes.Equal(ca.Bytes(), cb.Bytes())
}

// Set writes val (a JSON value) as the value of field, a dotted path, in
// the JSON object src. The path is found as the document spells it — a
// key equal to the rest of the path ("a.b" in {"a.b": 1}) or an object
// under a key that is a prefix of it ({"a": {"b": 1}}) — and replaced; a
// field the document lacks is added as one dotted key in the outermost
// object that holds a prefix of the path, which the mapping reads as the
// same field.
func Set(src []byte, field string, val []byte) ([]byte, error) {
	s, err := parseObject(src)
	if err != nil {
		return nil, fmt.Errorf("source: %w", err)
	}
	s, err = set(s, field, val)
	if err != nil {
		return nil, err
	}
	return s.append(nil), nil
}

func set(s object, path string, val []byte) (object, error) {
	if i := s.index(path); i >= 0 {
		s[i].val = val
		return s, nil
	}
	for i, m := range s {
		rest, ok := strings.CutPrefix(path, m.key+".")
		if !ok || !isObject(m.val) {
			continue
		}
		o, err := parseObject(m.val)
		if err != nil {
			return nil, err
		}
		if o, err = set(o, rest, val); err != nil {
			return nil, err
		}
		s[i].val = o.append(nil)
		return s, nil
	}
	return append(s, member{key: path, val: val}), nil
}
