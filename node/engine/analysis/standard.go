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
	// noFastPath sends all text through the segmenter; tests compare the
	// two paths.
	noFastPath bool

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
	for i := 0; i < len(text); {
		var s []byte
		kind := segWord
		if c := text[i]; c < utf8.RuneSelf && !a.noFastPath {
			// ASCII fast path: most English segments are a run of letters
			// and digits ending where UAX #29 surely breaks, or a lone
			// ASCII symbol; anything subtler goes to the segmenter.
			if isASCIIAlnum(c) {
				j := i + 1
				for j < len(text) && isASCIIAlnum(text[j]) {
					j++
				}
				if asciiBreak(text, j) {
					s = text[i:j]
				}
			} else if c != '_' && (i+1 == len(text) || text[i+1] < utf8.RuneSelf) {
				i++ // white space or punctuation: not a token
				continue
			}
		}
		if s == nil {
			a.seg.SetText(text[i:])
			a.seg.Next()
			s = a.seg.Value()
			if kind = classify(s); kind == segOther {
				i += len(s)
				continue
			}
		}
		start := i
		i += len(s)
		if a.cjk {
			if kind == segCJK {
				if len(a.runChar) > 0 && start != a.runEnd {
					pos = a.flushCJK(b, pos) // a gap ends the run
				}
				a.addCJK(s, i)
				continue
			}
			pos = a.flushCJK(b, pos)
		}
		from := len(b.Terms)
		if a.cjk {
			b.Terms = appendLowerUnicode(b.Terms, s, from, true)
		} else {
			b.Terms = appendLower(b.Terms, s)
		}
		if len(b.Terms)-from > MaxTokenLength {
			// Dropped, but its position is consumed so that a phrase
			// cannot match across the gap it leaves.
			b.Terms = b.Terms[:from]
			pos++
			continue
		}
		b.appendTerm(from, pos)
		pos++
	}
	if a.cjk {
		pos = a.flushCJK(b, pos)
	}
	return pos
}

func isASCIIAlnum(c byte) bool { return asciiAlnum[c] }

var asciiAlnum = func() (t [256]bool) {
	for c := range t {
		t[c] = 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
	}
	return t
}()

// asciiBreak reports whether UAX #29 certainly breaks between text[j-1], an
// ASCII letter or digit, and text[j]: at the end; before an ASCII byte other
// than '_' (ExtendNumLet, WB13a) and the MidLetter/MidNum/MidNumLet
// characters; or before one of those when it is not followed by a letter or
// digit (WB6, WB7, WB11, WB12 need one). Non-ASCII next bytes (Extend or
// Format characters are ignored by WB4) are left to the segmenter.
func asciiBreak(text []byte, j int) bool {
	if j == len(text) {
		return true
	}
	switch c := text[j]; {
	case c >= utf8.RuneSelf || c == '_':
		return false
	case c == '.' || c == ':' || c == '\'' || c == ',' || c == ';':
		return j+1 == len(text) || text[j+1] < utf8.RuneSelf && !isASCIIAlnum(text[j+1])
	}
	return true
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
// of Lucene's StandardTokenizer do: its first character, after leading
// connector punctuation such as '_' (ExtendNumLet), must be a letter or a
// digit. (A segment can contain letters and still not be a word: WB4
// attaches a combining letter-like mark such as U+FF9E to a preceding space.)
func classify(s []byte) segKind {
	for i := 0; i < len(s); {
		r, w := rune(s[i]), 1
		if r >= utf8.RuneSelf {
			r, w = utf8.DecodeRune(s[i:])
		}
		switch {
		case r < utf8.RuneSelf && isASCIIAlnum(byte(r)):
			return segWord
		case isCJK(r):
			return segCJK
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			return segWord
		case !unicode.Is(unicode.Pc, r):
			return segOther
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
