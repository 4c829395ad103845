package esjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// obj is a JSON object written in the order of its members, so the output
// reads as a person writes Elasticsearch JSON ("query" before "boost").
type obj []kv

type kv struct {
	key string
	val any // obj, []any, string, bool, number
}

// number is a JSON number literal, written as is.
type number string

// appendJSON writes v compactly, strings without HTML escaping.
func appendJSON(buf *bytes.Buffer, v any) {
	switch x := v.(type) {
	case obj:
		buf.WriteByte('{')
		for i, m := range x {
			if i > 0 {
				buf.WriteByte(',')
			}
			appendString(buf, m.key)
			buf.WriteByte(':')
			appendJSON(buf, m.val)
		}
		buf.WriteByte('}')
	case []any:
		buf.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				buf.WriteByte(',')
			}
			appendJSON(buf, e)
		}
		buf.WriteByte(']')
	case string:
		appendString(buf, x)
	case bool:
		buf.WriteString(strconv.FormatBool(x))
	case number:
		buf.WriteString(string(x))
	default:
		panic(fmt.Sprintf("esjson: cannot write %T", v))
	}
}

func appendString(buf *bytes.Buffer, s string) {
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)           // a string always encodes
	buf.Truncate(buf.Len() - 1) // Encode's newline
}

func marshal(v any) []byte {
	var buf bytes.Buffer
	appendJSON(&buf, v)
	return buf.Bytes()
}

// doubleNumber writes a double so that it reads back as a double: an
// integral value keeps a fraction ("2.0"), as an integer literal is a long.
func doubleNumber(f float64) (number, bool) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return "", false
	}
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return number(s), true
}

// float32Number writes a boost exactly (the shortest form that reads back
// as the same float32).
func float32Number(f float32) number {
	return number(strconv.FormatFloat(float64(f), 'g', -1, 32))
}
