package analysis

import (
	"unicode"
	"unicode/utf8"
)

// appendLower appends s lower-cased per code point (Lucene's
// LowerCaseFilter) to dst. ASCII is handled a block at a time; invalid UTF-8
// becomes U+FFFD so terms are always valid UTF-8.
func appendLower(dst, s []byte) []byte {
	n := len(dst)
	dst = append(dst, s...)
	for i := n; i < len(dst); i++ {
		c := dst[i]
		if c >= utf8.RuneSelf {
			return appendLowerUnicode(dst[:i], s[i-n:], n, false)
		}
		if 'A' <= c && c <= 'Z' {
			dst[i] = c + 'a' - 'A'
		}
	}
	return dst
}

// appendLowerUnicode is appendLower's general path; with fold it first
// applies CJK width folding (Lucene's CJKWidthFilter); start is where the
// current term begins in dst, so folding never reaches into a previous term.
func appendLowerUnicode(dst, s []byte, start int, fold bool) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			dst = append(dst, c)
			i++
			continue
		}
		r, w := utf8.DecodeRune(s[i:])
		i += w
		if fold {
			var combined bool
			if dst, combined = foldWidth(dst, start, &r); combined {
				continue
			}
		}
		dst = utf8.AppendRune(dst, unicode.ToLower(r))
	}
	return dst
}

// foldWidth maps full-width ASCII variants to ASCII and half-width katakana
// to full-width katakana in *r. A half-width (semi-)voiced sound mark that
// follows a kana (in dst[start:]) it can combine with replaces that kana, and
// combined is true.
func foldWidth(dst []byte, start int, r *rune) (_ []byte, combined bool) {
	switch c := *r; {
	case c >= 0xFF01 && c <= 0xFF5E:
		*r = c - 0xFEE0
	case c == 0xFF9E || c == 0xFF9F:
		prev, w := utf8.DecodeLastRune(dst[start:])
		if v := voiced(prev, c == 0xFF9F); v != 0 {
			return utf8.AppendRune(dst[:len(dst)-w], v), true
		}
		*r = halfwidthKana[c-0xFF65]
	case c >= 0xFF65 && c <= 0xFF9F:
		*r = halfwidthKana[c-0xFF65]
	}
	return dst, false
}

// voiced returns kana with a dakuten (or handakuten if semi) added, or 0 when
// it takes none.
func voiced(kana rune, semi bool) rune {
	switch {
	case semi:
		switch kana {
		case 'ハ', 'ヒ', 'フ', 'ヘ', 'ホ':
			return kana + 2
		}
	case kana == 'ウ':
		return 'ヴ'
	case kana >= 'カ' && kana <= 'ヂ' && (kana-'カ')%2 == 0,
		kana == 'ツ', kana == 'テ', kana == 'ト',
		kana == 'ハ', kana == 'ヒ', kana == 'フ', kana == 'ヘ', kana == 'ホ':
		return kana + 1
	}
	return 0
}

// halfwidthKana maps U+FF65..U+FF9F to full-width forms.
var halfwidthKana = [...]rune{
	'・', 'ヲ', 'ァ', 'ィ', 'ゥ', 'ェ', 'ォ', 'ャ', 'ュ', 'ョ', 'ッ', 'ー', 'ア', 'イ', 'ウ', 'エ',
	'オ', 'カ', 'キ', 'ク', 'ケ', 'コ', 'サ', 'シ', 'ス', 'セ', 'ソ', 'タ', 'チ', 'ツ', 'テ', 'ト',
	'ナ', 'ニ', 'ヌ', 'ネ', 'ノ', 'ハ', 'ヒ', 'フ', 'ヘ', 'ホ', 'マ', 'ミ', 'ム', 'メ', 'モ', 'ヤ',
	'ユ', 'ヨ', 'ラ', 'リ', 'ル', 'レ', 'ロ', 'ワ', 'ン', '\u3099', '\u309A',
}

// appendValid appends s to dst with invalid UTF-8 replaced by U+FFFD.
func appendValid(dst, s []byte) []byte {
	if utf8.Valid(s) {
		return append(dst, s...)
	}
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRune(s[i:])
		dst = utf8.AppendRune(dst, r)
		i += w
	}
	return dst
}
