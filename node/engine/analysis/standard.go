package analysis

import (
	"unicode"
	"unicode/utf8"

	"github.com/clipperhouse/uax29/v2/words"
)

// Standard is the "standard" analyzer (and, with bigrams on, "cjk"). It keeps
// a segmenter and scratch space, so use one per goroutine.
type Standard struct {
	seg *words.Iterator[[]byte]
	cjk bool

	// CJK bigram state: the pending run of normalized CJK text, where each
	// of its characters starts, and the byte offset in the input where the
	// run ends (a run continues only with a segment starting right there).
	run     []byte
	runChar []int
	runEnd  int
}

// NewStandard returns a "standard" analyzer.
func NewStandard() *Standard { return &Standard{seg: words.FromBytes(nil)} }

// NewCJK returns a "cjk" analyzer: standard plus width folding and bigrams
// over runs of CJK characters.
func NewCJK() *Standard {
	return &Standard{seg: words.FromBytes(nil), cjk: true}
}

// Analyze implements Analyzer.
func (a *Standard) Analyze(b *Buffer, text []byte, pos int32) int32 {
	a.seg.SetText(text)
	for a.seg.Next() {
		s := a.seg.Value()
		kind := classify(s)
		if kind == segOther {
			continue
		}
		if a.cjk {
			if kind == segCJK {
				if len(a.runChar) > 0 && a.seg.Start() != a.runEnd {
					pos = a.flushCJK(b, pos) // a gap ends the run
				}
				a.addCJK(s, a.seg.End())
				continue
			}
			pos = a.flushCJK(b, pos)
		}
		start := len(b.Terms)
		if a.cjk {
			b.Terms = appendLowerUnicode(b.Terms, s, start, true)
		} else {
			b.Terms = appendLower(b.Terms, s)
		}
		if len(b.Terms)-start > MaxTokenLength {
			// Dropped, but its position is consumed so that a phrase
			// cannot match across the gap it leaves.
			b.Terms = b.Terms[:start]
			pos++
			continue
		}
		b.appendTerm(start, pos)
		pos++
	}
	if a.cjk {
		pos = a.flushCJK(b, pos)
	}
	return pos
}

// addCJK appends a CJK segment, ending at input offset end, to the pending
// run.
func (a *Standard) addCJK(s []byte, end int) {
	from := len(a.run)
	a.run = appendLowerUnicode(a.run, s, from, true)
	for i := from; i < len(a.run); {
		_, w := utf8.DecodeRune(a.run[i:])
		a.runChar = append(a.runChar, i)
		i += w
	}
	a.runEnd = end
}

// flushCJK emits the pending run as overlapping bigrams (a lone character as
// a unigram), as Lucene's CJKBigramFilter does, and empties it.
func (a *Standard) flushCJK(b *Buffer, pos int32) int32 {
	n := len(a.runChar)
	charEnd := func(i int) int {
		if i+1 < n {
			return a.runChar[i+1]
		}
		return len(a.run)
	}
	for i := 0; i < n; i++ {
		if i+1 == n && n > 1 {
			break // the last character is only the tail of the last bigram
		}
		last := min(i+1, n-1)
		start := len(b.Terms)
		b.Terms = append(b.Terms, a.run[a.runChar[i]:charEnd(last)]...)
		b.appendTerm(start, pos)
		pos++
	}
	a.run = a.run[:0]
	a.runChar = a.runChar[:0]
	return pos
}

type segKind uint8

const (
	segOther segKind = iota // white space, punctuation, symbols: not indexed
	segWord                 // contains a letter or digit
	segCJK                  // starts with a Han, Hiragana, Katakana or Hangul character
)

// classify decides whether a UAX #29 segment is a token, as the token types
// of Lucene's StandardTokenizer do.
func classify(s []byte) segKind {
	c := s[0]
	if c < utf8.RuneSelf {
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' {
			return segWord
		}
		if len(s) == 1 {
			return segOther
		}
	} else {
		r, _ := utf8.DecodeRune(s)
		if isCJK(r) {
			return segCJK
		}
	}
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRune(s[i:])
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			return segWord
		}
		i += w
	}
	return segOther
}

// isCJK reports whether r is bigrammed by the cjk analyzer. The prolonged
// sound mark U+30FC and the half-width forms are Katakana for this purpose,
// as in UAX #29.
func isCJK(r rune) bool {
	if r < 0x1100 {
		return false
	}
	return unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) ||
		unicode.Is(unicode.Katakana, r) || unicode.Is(unicode.Hangul, r) ||
		r == 0x30FC || r >= 0xFF70 && r <= 0xFF9F
}
