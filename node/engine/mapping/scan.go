package mapping

import (
	"fmt"
	"unicode/utf16"
	"unicode/utf8"
)

// scanner is a hand-written JSON tokenizer over a document's bytes: the
// parser walks values with it directly, so parsing builds no intermediate
// tree and, for strings without escapes, copies nothing.
type scanner struct {
	data []byte
	i    int
	buf  []byte // unescaped string scratch, valid until the next str call
	// anyBytes skips the UTF-8 check: for documents acknowledged before
	// the check existed (Parser.ParseAcknowledged).
	anyBytes bool
}

// syntaxError is invalid JSON; the parser wraps it with the field path.
type syntaxError struct {
	off int
	msg string
}

func (e *syntaxError) Error() string {
	return fmt.Sprintf("invalid JSON at offset %d: %s", e.off, e.msg)
}

func (s *scanner) fail(msg string) error { return &syntaxError{off: s.i, msg: msg} }

// peek skips white space and returns the next byte, 0 at the end.
func (s *scanner) peek() byte {
	for s.i < len(s.data) {
		switch c := s.data[s.i]; c {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return c
		}
	}
	return 0
}

// expect consumes byte c after white space.
func (s *scanner) expect(c byte) error {
	if s.peek() != c {
		return s.fail(fmt.Sprintf("expected %q", c))
	}
	s.i++
	return nil
}

// strSafe marks bytes that end the fast path of str: the quote, the
// backslash and control characters. UTF-8 is checked once the string's end
// is found.
var strSafe = func() (t [256]bool) {
	for i := range t {
		t[i] = i >= 0x20 && i != '"' && i != '\\'
	}
	return t
}()

// str reads the string at s.i (a '"'). The result aliases the input when
// the string has no escapes, else s.buf. A string that is not valid UTF-8
// is an error, as in Elasticsearch (whose JSON parser refuses it): its
// bytes would be stored, indexed as terms no query can spell, and sent
// back in a protobuf string that cannot hold them.
func (s *scanner) str() ([]byte, error) {
	s.i++ // opening quote
	start := s.i
	for s.i < len(s.data) && strSafe[s.data[s.i]] {
		s.i++
	}
	if s.i < len(s.data) && s.data[s.i] == '"' {
		s.i++
		// utf8.Valid reads ASCII eight bytes at a time: a small cost next
		// to the scan above.
		if v := s.data[start : s.i-1]; s.anyBytes || utf8.Valid(v) {
			return v, nil
		}
		return nil, s.failUTF8(start)
	}
	s.buf = append(s.buf[:0], s.data[start:s.i]...)
	for s.i < len(s.data) {
		c := s.data[s.i]
		switch {
		case c == '"':
			s.i++
			// Escapes decode to valid UTF-8 (a lone surrogate to U+FFFD):
			// only raw bytes can make the result invalid.
			if s.anyBytes || utf8.Valid(s.buf) {
				return s.buf, nil
			}
			return nil, s.failUTF8(start)
		case c < 0x20:
			return nil, s.fail("control character in string")
		case c != '\\':
			s.buf = append(s.buf, c)
			s.i++
			continue
		}
		if s.i+1 >= len(s.data) {
			break
		}
		s.i += 2
		switch e := s.data[s.i-1]; e {
		case '"', '\\', '/':
			s.buf = append(s.buf, e)
		case 'b':
			s.buf = append(s.buf, '\b')
		case 'f':
			s.buf = append(s.buf, '\f')
		case 'n':
			s.buf = append(s.buf, '\n')
		case 'r':
			s.buf = append(s.buf, '\r')
		case 't':
			s.buf = append(s.buf, '\t')
		case 'u':
			r, ok := s.hex4()
			if !ok {
				return nil, s.fail("bad \\u escape")
			}
			if utf16.IsSurrogate(r) {
				// A valid pair decodes to one rune; a lone surrogate
				// becomes U+FFFD, as in encoding/json.
				save := s.i
				if s.i+1 < len(s.data) && s.data[s.i] == '\\' && s.data[s.i+1] == 'u' {
					s.i += 2
					if r2, ok := s.hex4(); ok {
						if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
							r = d
							save = -1
						}
					}
				}
				if save >= 0 {
					s.i = save
					r = utf8.RuneError
				}
			}
			s.buf = utf8.AppendRune(s.buf, r)
		default:
			s.i--
			return nil, s.fail("bad escape")
		}
	}
	return nil, s.fail("unterminated string")
}

// failUTF8 reports the first byte of the string from start that is not
// valid UTF-8.
func (s *scanner) failUTF8(start int) error {
	i := start
	for i < s.i {
		r, n := utf8.DecodeRune(s.data[i:s.i])
		if r == utf8.RuneError && n <= 1 {
			break
		}
		i += n
	}
	return &syntaxError{off: i, msg: "string is not valid UTF-8"}
}

func (s *scanner) hex4() (rune, bool) {
	if s.i+4 > len(s.data) {
		return 0, false
	}
	var r rune
	for _, c := range s.data[s.i : s.i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	s.i += 4
	return r, true
}

// number reads a JSON number; integer is true when it has neither fraction
// nor exponent.
func (s *scanner) number() (raw []byte, integer bool, err error) {
	start := s.i
	if s.i < len(s.data) && s.data[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i < len(s.data) && s.data[s.i] == '0':
		s.i++
	case s.i < len(s.data) && '1' <= s.data[s.i] && s.data[s.i] <= '9':
		s.digits()
	default:
		return nil, false, s.fail("bad number")
	}
	integer = true
	if s.i < len(s.data) && s.data[s.i] == '.' {
		s.i++
		if !s.digits() {
			return nil, false, s.fail("bad fraction")
		}
		integer = false
	}
	if s.i < len(s.data) && (s.data[s.i] == 'e' || s.data[s.i] == 'E') {
		s.i++
		if s.i < len(s.data) && (s.data[s.i] == '+' || s.data[s.i] == '-') {
			s.i++
		}
		if !s.digits() {
			return nil, false, s.fail("bad exponent")
		}
		integer = false
	}
	if s.i < len(s.data) {
		// A number ends at a delimiter: "01" or "1x" is not two tokens.
		switch c := s.data[s.i]; {
		case '0' <= c && c <= '9', 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', c == '.', c == '+', c == '-':
			return nil, false, s.fail("bad number")
		}
	}
	return s.data[start:s.i], integer, nil
}

func (s *scanner) digits() bool {
	start := s.i
	for s.i < len(s.data) && '0' <= s.data[s.i] && s.data[s.i] <= '9' {
		s.i++
	}
	return s.i > start
}

// literal consumes true, false or null.
func (s *scanner) literal(lit string) error {
	if len(s.data)-s.i < len(lit) || string(s.data[s.i:s.i+len(lit)]) != lit {
		return s.fail("bad literal")
	}
	s.i += len(lit)
	return nil
}

// maxNesting bounds how deep a document's objects and arrays nest, so
// hostile input cannot exhaust the stack: room for objects as deep as the
// largest depth limit (MaxDepthLimit), each in an array. The fields a
// mapping may gain are held to its depth limit (Limits.Depth).
const maxNesting = 2*MaxDepthLimit + 8

// skip validates and consumes any value.
func (s *scanner) skip(depth int) error {
	if depth > maxNesting {
		return s.fail("nested too deeply")
	}
	switch c := s.peek(); c {
	case '"':
		_, err := s.str()
		return err
	case '{':
		s.i++
		if s.peek() == '}' {
			s.i++
			return nil
		}
		for {
			if s.peek() != '"' {
				return s.fail("expected a key")
			}
			if _, err := s.str(); err != nil {
				return err
			}
			if err := s.expect(':'); err != nil {
				return err
			}
			if err := s.skip(depth + 1); err != nil {
				return err
			}
			if more, err := s.more('}'); !more || err != nil {
				return err
			}
		}
	case '[':
		return s.elements(func() error { return s.skip(depth + 1) })
	case 't':
		return s.literal("true")
	case 'f':
		return s.literal("false")
	case 'n':
		return s.literal("null")
	default:
		_, _, err := s.number()
		return err
	}
}

// elements consumes the array at s.i, calling each to consume every
// element.
func (s *scanner) elements(each func() error) error {
	s.i++ // '['
	if s.peek() == ']' {
		s.i++
		return nil
	}
	for {
		if err := each(); err != nil {
			return err
		}
		if more, err := s.more(']'); !more || err != nil {
			return err
		}
	}
}

// more consumes a ',' (true) or the closing byte (false) after a member.
func (s *scanner) more(closing byte) (bool, error) {
	switch s.peek() {
	case ',':
		s.i++
		return true, nil
	case closing:
		s.i++
		return false, nil
	}
	return false, s.fail(fmt.Sprintf("expected ',' or %q", closing))
}
