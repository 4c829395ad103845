package esapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
)

// readActionLine reads a bulk action line: the action's name and
// metadata. The lines clients send are small objects of plain strings
// ({"index":{"_index":"books","_id":"1"}}); those are read by scanning
// (fastActionLine), and anything else — escapes, numbers, other keys,
// malformed JSON — by encoding/json, which gives the errors and the
// refusals. A json.Decoder per line was most of the HTTP API's own CPU
// time on a bulk (BenchmarkBulkBody).
//
// lastIndex is the index name of the previous line, reused (not
// allocated again) when this line names the same.
func readActionLine(line []byte, lineNo int, lastIndex *string) (string, *bulkMeta, error) {
	if action, meta, ok := fastActionLine(line, lastIndex); ok {
		return action, meta, nil
	}
	var l bulkLine
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		return "", nil, bulkLineError(lineNo, line, err)
	}
	action, meta, n := "", (*bulkMeta)(nil), 0
	for _, a := range []struct {
		name string
		m    *bulkMeta
	}{{"index", l.Index}, {"create", l.Create}, {"delete", l.Delete}, {"update", l.Update}} {
		if a.m != nil {
			action, meta = a.name, a.m
			n++
		}
	}
	if n != 1 {
		return "", nil, &esError{status: http.StatusBadRequest, typ: "illegal_argument_exception",
			reason: fmt.Sprintf("Malformed action/metadata line [%d], expected one of [create, delete, index, update]", lineNo)}
	}
	return action, meta, nil
}

// fastActionLine reads {"ACTION":{"KEY":"VALUE",...}} where ACTION is an
// action, each KEY is _index, _id or routing and each VALUE a string of
// printable ASCII without escapes, with any JSON whitespace between. It
// reports !ok for anything else, which encoding/json then reads.
func fastActionLine(line []byte, lastIndex *string) (string, *bulkMeta, bool) {
	s := scanner{b: line}
	if !s.byte('{') {
		return "", nil, false
	}
	name, ok := s.str()
	if !ok || !s.byte(':') || !s.byte('{') {
		return "", nil, false
	}
	var action string
	switch string(name) {
	case "index":
		action = "index"
	case "create":
		action = "create"
	case "delete":
		action = "delete"
	case "update":
		action = "update"
	default:
		return "", nil, false
	}
	meta := &bulkMeta{}
	if !s.byte('}') {
		for {
			key, ok := s.str()
			if !ok || !s.byte(':') {
				return "", nil, false
			}
			val, ok := s.str()
			if !ok {
				return "", nil, false
			}
			switch string(key) {
			case "_index":
				if string(val) != *lastIndex {
					*lastIndex = string(val)
				}
				meta.Index = *lastIndex
			case "_id":
				meta.ID = string(val)
			case "routing":
				meta.Routing = string(val)
			default:
				return "", nil, false
			}
			if s.byte('}') {
				break
			}
			if !s.byte(',') {
				return "", nil, false
			}
		}
	}
	if !s.byte('}') {
		return "", nil, false
	}
	s.space()
	return action, meta, s.i == len(s.b)
}

// scanner reads the plain JSON of fastActionLine.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) space() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\r' || s.b[s.i] == '\n') {
		s.i++
	}
}

// byte consumes c after whitespace.
func (s *scanner) byte(c byte) bool {
	s.space()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// str consumes a string of printable ASCII without escapes.
func (s *scanner) str() ([]byte, bool) {
	if !s.byte('"') {
		return nil, false
	}
	start := s.i
	for ; s.i < len(s.b); s.i++ {
		switch c := s.b[s.i]; {
		case c == '"':
			s.i++
			return s.b[start : s.i-1], true
		case c == '\\' || c < 0x20 || c >= 0x7f:
			return nil, false
		}
	}
	return nil, false
}
