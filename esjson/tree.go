package esjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Error is a problem at one place of a document. Reason is worded as
// Elasticsearch words it ("[bool] unknown field [mus]"); Path is where, as
// a JSON path relative to the document ("bool.must[1].term.title", "" for
// the document itself).
type Error struct {
	Kind   error // ErrInvalidQuery, ErrInvalidMapping, ErrInvalidSettings or ErrInvalidSort
	Path   string
	Reason string
}

func (e *Error) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("%v: %s", e.Kind, e.Reason)
	}
	return fmt.Sprintf("%v: %s: %s", e.Kind, e.Path, e.Reason)
}

func (e *Error) Unwrap() error { return e.Kind }

// maxNesting bounds how deep a document may nest (arrays and objects), so a
// hostile document cannot make the decoder recurse without end.
const maxNesting = 256

// kind is the JSON type of a value.
type kind uint8

const (
	kNull kind = iota
	kBool
	kNumber
	kString
	kArray
	kObject
)

// value is a decoded JSON value. Objects keep their members in document
// order, so the first problem reported is the first one written, and
// duplicate keys are found (Elasticsearch rejects them; a Go map would keep
// the last silently).
type value struct {
	kind    kind
	b       bool
	text    string // a string, or a number's literal
	elems   []*value
	members []member
}

type member struct {
	key string
	val *value
}

// doc is one document being read: its kind of error, for every problem.
type doc struct{ kind error }

func (d doc) errorf(path, format string, args ...any) error {
	return &Error{Kind: d.kind, Path: path, Reason: fmt.Sprintf(format, args...)}
}

// decode reads exactly one JSON value from data; empty data (or only
// white space) is a nil value and no error.
func (d doc) decode(data []byte) (*value, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := d.decodeValue(dec, data, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, d.errorf("", "%s", syntaxReason(data, dec, errors.New("trailing data after the document")))
	}
	return v, nil
}

// decodeObject is decode for documents that must be an object; what names
// the document in the error.
func (d doc) decodeObject(data []byte, what string) (*value, error) {
	v, err := d.decode(data)
	if v != nil && v.kind != kObject {
		return nil, d.errorf("", "%s must be an object, got %s", what, v.typeName())
	}
	return v, err
}

func (d doc) decodeValue(dec *json.Decoder, data []byte, depth int) (*value, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, d.errorf("", "%s", syntaxReason(data, dec, err))
	}
	switch t := tok.(type) {
	case nil:
		return &value{kind: kNull}, nil
	case bool:
		return &value{kind: kBool, b: t}, nil
	case json.Number:
		return &value{kind: kNumber, text: string(t)}, nil
	case string:
		return &value{kind: kString, text: t}, nil
	}
	if depth >= maxNesting {
		return nil, d.errorf("", "%s", syntaxReason(data, dec, fmt.Errorf("nested deeper than %d levels", maxNesting)))
	}
	v := &value{kind: kArray}
	if tok == json.Delim('{') {
		v.kind = kObject
	}
	for dec.More() {
		if v.kind == kArray {
			e, err := d.decodeValue(dec, data, depth+1)
			if err != nil {
				return nil, err
			}
			v.elems = append(v.elems, e)
			continue
		}
		kt, err := dec.Token()
		if err != nil {
			return nil, d.errorf("", "%s", syntaxReason(data, dec, err))
		}
		key := kt.(string) // the decoder only yields string keys inside an object
		for _, m := range v.members {
			if m.key == key {
				return nil, d.errorf("", "%s", syntaxReason(data, dec, fmt.Errorf("duplicate field '%s'", key)))
			}
		}
		e, err := d.decodeValue(dec, data, depth+1)
		if err != nil {
			return nil, err
		}
		v.members = append(v.members, member{key, e})
	}
	if _, err := dec.Token(); err != nil { // the closing delimiter
		return nil, d.errorf("", "%s", syntaxReason(data, dec, err))
	}
	return v, nil
}

// syntaxReason words a problem with the JSON itself, with its line and
// column. The decoder's own offsets are relative to the value it was
// reading, so a syntax error's place comes from a whole-document check.
func syntaxReason(data []byte, dec *json.Decoder, err error) string {
	off := dec.InputOffset()
	var raw json.RawMessage
	var se *json.SyntaxError
	if uerr := json.Unmarshal(data, &raw); errors.As(uerr, &se) {
		err, off = se, se.Offset-1 // Offset counts the bad byte
	}
	off = min(max(off, 0), int64(len(data)))
	before := data[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	col := off - int64(bytes.LastIndexByte(before, '\n'))
	return fmt.Sprintf("[%d:%d] invalid JSON: %v", line, col, err)
}

// lowerOneOf returns which of names a string is, in any case
// (Elasticsearch lowercases enum values); "" when it is none of them.
func (v *value) lowerOneOf(names ...string) string {
	if v.kind == kString {
		for _, n := range names {
			if strings.EqualFold(v.text, n) {
				return n
			}
		}
	}
	return ""
}

// typeName names a JSON type in messages.
func (v *value) typeName() string {
	return [...]string{"null", "a boolean", "a number", "a string", "an array", "an object"}[v.kind]
}

// scalarText is a string, number or boolean as text, as Elasticsearch reads
// a text parameter (parser.text()).
func (v *value) scalarText() (string, bool) {
	switch v.kind {
	case kString, kNumber:
		return v.text, true
	case kBool:
		return strconv.FormatBool(v.b), true
	}
	return "", false
}

// float reads a number, or a numeric string (Elasticsearch coerces them).
func (v *value) float(bits int) (float64, bool) {
	if v.kind != kNumber && v.kind != kString {
		return 0, false
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(v.text), bits)
	return f, err == nil
}

// int reads an integral number or numeric string.
func (v *value) int(bits int) (int64, bool) {
	if v.kind != kNumber && v.kind != kString {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v.text), 10, bits)
	return n, err == nil
}

// boolean reads true, false, "true" or "false" (Elasticsearch's strict
// boolean parsing).
func (v *value) boolean() (bool, bool) {
	switch {
	case v.kind == kBool:
		return v.b, true
	case v.kind == kString && (v.text == "true" || v.text == "false"):
		return v.text == "true", true
	}
	return false, false
}

// A setter reads one parameter at path.
type setter func(path string, v *value) error

// params reads an object's parameters in document order; a key without a
// setter is an error worded by unknown.
func (d doc) params(path string, v *value, unknown func(key string) string, setters map[string]setter) error {
	if v.kind != kObject {
		return d.errorf(path, "must be an object, got %s", v.typeName())
	}
	for _, m := range v.members {
		set, ok := setters[m.key]
		if !ok {
			return d.errorf(join(path, m.key), "%s", unknown(m.key))
		}
		if err := set(join(path, m.key), m.val); err != nil {
			return err
		}
	}
	return nil
}

// join extends a JSON path by an object key.
func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// index extends a JSON path by an array position.
func index(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }
