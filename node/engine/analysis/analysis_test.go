package analysis

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sluice-search/sluice/node/engine/analysis/analysistest"
)

// tok renders tokens as "term@pos" for readable comparisons.
func tok(b *Buffer) string {
	var sb strings.Builder
	for i, t := range b.Tokens {
		if i > 0 {
			sb.WriteByte(' ')
		}
		fmt.Fprintf(&sb, "%s@%d", t.Term, t.Position)
	}
	return sb.String()
}

func TestAnalyzers(t *testing.T) {
	long := strings.Repeat("a", MaxTokenLength+1)
	tests := []struct {
		analyzer, text, want string
	}{
		// Expected outputs are Lucene's for the same analyzer.
		{"standard", "", ""},
		{"standard", "The Quick Brown-Fox jumped over the lazy dog's bone.",
			"the@0 quick@1 brown@2 fox@3 jumped@4 over@5 the@6 lazy@7 dog's@8 bone@9"},
		{"standard", "U.S.A. is 3.14, e-mail foo@bar.com", "u.s.a@0 is@1 3.14@2 e@3 mail@4 foo@5 bar.com@6"},
		{"standard", "Wi-Fi 802.11n costs 1,000,000 USD", "wi@0 fi@1 802.11n@2 costs@3 1,000,000@4 usd@5"},
		{"standard", "São Paulo ÉCOLE Straße ΣΊΣΥΦΟΣ", "são@0 paulo@1 école@2 straße@3 σίσυφοσ@4"},
		{"standard", "foo_bar -- (x) ... !!", "foo_bar@0 x@1"},
		{"standard", "I ❤ Go 🎉!", "i@0 go@1"},
		{"standard", "日本語", "日@0 本@1 語@2"},
		{"standard", "カタカナ ひらがな", "カタカナ@0 ひ@1 ら@2 が@3 な@4"},
		{"standard", "x " + long + " y", "x@0 y@2"},
		{"standard", "KELVIN \u212a", "kelvin@0 k@1"},
		{"cjk", "東京都に住む", "東京@0 京都@1 都に@2 に住@3 住む@4"},
		{"cjk", "日本 abc 語", "日本@0 abc@1 語@2"},
		{"cjk", "日本、語。End", "日本@0 語@1 end@2"},
		{"cjk", "ＡＢＣ ｶﾞｷﾞｸﾞ ﾊﾟ", "abc@0 ガギ@1 ギグ@2 パ@3"},
		{"cjk", "한국어", "한국@0 국어@1"},
		{"cjk", "The Quick fox", "the@0 quick@1 fox@2"},
		{"keyword", "Foo Bar", "Foo Bar@0"},
		{"keyword", "", "@0"},
		{"whitespace", " Foo  Bar\tbaz\u3000x ", "Foo@0 Bar@1 baz@2 x@3"},
		{"simple", "Foo1bar, BAZ's", "foo@0 bar@1 baz@2 s@3"},
	}
	for _, tt := range tests {
		t.Run(tt.analyzer+"/"+tt.text, func(t *testing.T) {
			a, err := New(tt.analyzer)
			if err != nil {
				t.Fatal(err)
			}
			var b Buffer
			end := a.Analyze(&b, []byte(tt.text), 0)
			if got := tok(&b); got != tt.want {
				t.Fatalf("got  %q\nwant %q", got, tt.want)
			}
			if n := len(b.Tokens); n > 0 && end <= b.Tokens[n-1].Position {
				t.Fatalf("returned position %d is not past the last token", end)
			}
		})
	}
}

// TestPositionsContinue checks the pos argument and return value: the
// mapping relies on them to continue positions across array values.
func TestPositionsContinue(t *testing.T) {
	a := NewStandard()
	var b Buffer
	next := a.Analyze(&b, []byte("a b"), 0)
	next = a.Analyze(&b, []byte("c"), next+100)
	if got, want := tok(&b), "a@0 b@1 c@102"; got != want {
		t.Fatalf("got %q want %q", got, want)
	}
	if next != 103 {
		t.Fatalf("next %d", next)
	}
}

// TestTermsSurviveGrowth checks that tokens stay intact when the arena is
// reallocated while a document is analyzed.
func TestTermsSurviveGrowth(t *testing.T) {
	a := NewStandard()
	b := Buffer{Terms: make([]byte, 0, 1)}
	text := strings.Repeat("alpha beta gamma ", 100)
	a.Analyze(&b, []byte(text), 0)
	for i, tk := range b.Tokens {
		if want := []string{"alpha", "beta", "gamma"}[i%3]; string(tk.Term) != want {
			t.Fatalf("token %d = %q, want %q", i, tk.Term, want)
		}
	}
}

func TestRegistry(t *testing.T) {
	for _, name := range []string{"standard", "cjk", "keyword", "whitespace", "simple"} {
		if !Known(name) {
			t.Errorf("%s not registered", name)
		}
	}
	if _, err := New("nope"); err == nil {
		t.Error("unknown analyzer accepted")
	}
	if err := Register("standard", func() Analyzer { return Keyword{} }); err == nil {
		t.Error("re-registering standard accepted")
	}
	if got := strings.Join(Names(), ","); !strings.Contains(got, "cjk,keyword,simple,standard,whitespace") {
		t.Errorf("names %s", got)
	}
}

// checkFastPath compares the ASCII fast path of the standard and cjk
// analyzers with plain UAX #29 segmentation of the same text.
func checkFastPath(t *testing.T, text []byte) {
	t.Helper()
	for _, cjk := range []bool{false, true} {
		fast, slow := &Standard{seg: NewStandard().seg, cjk: cjk}, &Standard{seg: NewStandard().seg, cjk: cjk, noFastPath: true}
		var fb, sb Buffer
		fend, send := fast.Analyze(&fb, text, 0), slow.Analyze(&sb, text, 0)
		if f, s := tok(&fb), tok(&sb); f != s || fend != send {
			t.Fatalf("cjk=%v %q:\nfast %s (%d)\nslow %s (%d)", cjk, text, f, fend, s, send)
		}
	}
}

func TestFastPathMatchesSegmenter(t *testing.T) {
	for _, s := range []string{"a.b 3.14 a,b 1,2 x:y it's _a a_ a__b __ áb a.́b", "end.", "e-mail, foo_bar; (x) ' '", "a'.b"} {
		checkFastPath(t, []byte(s))
	}
	if analysistest.Path() == "" {
		t.Skip("corpus not found")
	}
	for _, d := range analysistest.Corpus(t, 300) {
		checkFastPath(t, []byte(d.Title+"\n"+d.Body))
	}
}

func FuzzFastPath(f *testing.F) {
	for _, s := range []string{"a.b 3.14 a,b x:y it's _a a_ a__b", "áb a.́b ﾞｶ 東京 x", "ab\xffcd"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkFastPath(t, []byte(s)) })
}

func FuzzAnalyzers(f *testing.F) {
	for _, s := range []string{"The Quick Brown-Fox", "東京都に住む ｶﾞ", "ab\xffcd É", "ﾞｶ", "a\u0301b 3.14", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		// bytes.Map replaces each invalid byte with U+FFFD, as the
		// analyzers do.
		valid := string(bytes.Map(func(r rune) rune { return r }, []byte(text)))
		lower := strings.ToLower(valid)
		for _, name := range Names() {
			a, _ := New(name)
			var b Buffer
			b.Terms = append(b.Terms, "prefix"...)
			end := a.Analyze(&b, []byte(text), 7)
			prev := int32(6)
			for _, tk := range b.Tokens {
				if !utf8.Valid(tk.Term) {
					t.Fatalf("%s: invalid UTF-8 term %q", name, tk.Term)
				}
				if tk.Position <= prev {
					t.Fatalf("%s: position %d after %d", name, tk.Position, prev)
				}
				prev = tk.Position
				var src string
				switch name {
				case "standard", "simple":
					src = lower
				case "whitespace", "keyword":
					src = valid
				default:
					if len(tk.Term) == 0 {
						t.Fatalf("%s: empty term", name)
					}
					continue
				}
				if !strings.Contains(src, string(tk.Term)) {
					t.Fatalf("%s: term %q is not part of %q", name, tk.Term, src)
				}
				if name != "keyword" && (len(tk.Term) == 0 || len(tk.Term) > MaxTokenLength) {
					t.Fatalf("%s: term length %d", name, len(tk.Term))
				}
			}
			if end < prev+1 {
				t.Fatalf("%s: returned %d, last position %d", name, end, prev)
			}
			if string(b.Terms[:6]) != "prefix" {
				t.Fatalf("%s: wrote over earlier bytes in the arena", name)
			}
		}
	})
}

func BenchmarkAnalyze(b *testing.B) {
	var bodies [][]byte
	for _, d := range analysistest.Corpus(b, 2000) {
		bodies = append(bodies, []byte(d.Body))
	}
	jp := []byte(strings.Repeat("東京都は日本の首都であり、人口は約1400万人です。カタカナのテキストも含む。", 30))
	for _, name := range []string{"standard", "cjk", "whitespace", "simple"} {
		b.Run(name+"/enwiki", func(b *testing.B) {
			a, _ := New(name)
			var n int64
			for _, d := range bodies {
				n += int64(len(d))
			}
			b.SetBytes(n)
			b.ReportAllocs()
			var buf Buffer
			for b.Loop() {
				for _, d := range bodies {
					buf.Reset()
					a.Analyze(&buf, d, 0)
				}
			}
		})
	}
	b.Run("cjk/japanese", func(b *testing.B) {
		a := NewCJK()
		b.SetBytes(int64(len(jp)))
		b.ReportAllocs()
		var buf Buffer
		for b.Loop() {
			buf.Reset()
			a.Analyze(&buf, jp, 0)
		}
	})
}
