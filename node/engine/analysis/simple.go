package analysis

import (
	"unicode"
	"unicode/utf8"
)

// Keyword is the "keyword" analyzer: the whole value is one token, unchanged
// (invalid UTF-8 aside). It has no state; the zero value is ready.
type Keyword struct{}

// Analyze implements Analyzer.
func (Keyword) Analyze(b *Buffer, text []byte, pos int32) int32 {
	start := len(b.Terms)
	b.Terms = appendValid(b.Terms, text)
	b.appendTerm(start, pos)
	return pos + 1
}

// Whitespace is the "whitespace" analyzer: maximal runs of non-space
// characters, not lower-cased, longer than MaxTokenLength dropped.
type Whitespace struct{}

// Analyze implements Analyzer.
func (Whitespace) Analyze(b *Buffer, text []byte, pos int32) int32 {
	return splitRuns(b, text, pos, func(r rune) bool { return !unicode.IsSpace(r) }, appendValid)
}

// Simple is the "simple" analyzer: maximal runs of letters, lower-cased,
// longer than MaxTokenLength dropped.
type Simple struct{}

// Analyze implements Analyzer.
func (Simple) Analyze(b *Buffer, text []byte, pos int32) int32 {
	return splitRuns(b, text, pos, unicode.IsLetter, appendLower)
}

// splitRuns emits the maximal runs of characters for which in is true,
// normalized by norm (which appends its second argument to its first).
func splitRuns(b *Buffer, text []byte, pos int32, in func(rune) bool, norm func(dst, s []byte) []byte) int32 {
	runStart := -1
	for i := 0; i <= len(text); {
		r, w := utf8.RuneError, 1
		if i < len(text) {
			r, w = rune(text[i]), 1
			if r >= utf8.RuneSelf {
				r, w = utf8.DecodeRune(text[i:])
			}
		}
		inside := i < len(text) && in(r)
		switch {
		case inside && runStart < 0:
			runStart = i
		case !inside && runStart >= 0:
			start := len(b.Terms)
			b.Terms = norm(b.Terms, text[runStart:i])
			if len(b.Terms)-start > MaxTokenLength {
				b.Terms = b.Terms[:start]
			} else {
				b.appendTerm(start, pos)
			}
			pos++
			runStart = -1
		}
		i += w
	}
	return pos
}
