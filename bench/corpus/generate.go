package corpus

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
)

// Generate makes n documents of the shared corpus's shape (a short title, a
// ≈1 KB body) from a Zipf-distributed vocabulary of pseudo-words, so term
// statistics resemble natural text (a few very frequent terms, a long tail).
// The same (n, seed) always gives the same documents.
func Generate(n int, seed uint64) []Doc {
	rng := rand.New(rand.NewPCG(seed, 0x5e1ce))
	vocab := vocabulary(rng, 50_000)
	zipf := rand.NewZipf(rand.New(rand.NewPCG(seed, 7)), 1.07, 2.7, uint64(len(vocab)-1))
	docs := make([]Doc, n)
	var sb strings.Builder
	for i := range docs {
		sb.Reset()
		for j, nw := 0, 2+rng.IntN(3); j < nw; j++ {
			if j > 0 {
				sb.WriteByte(' ')
			}
			w := vocab[zipf.Uint64()]
			sb.WriteString(strings.ToUpper(w[:1]) + w[1:])
		}
		title := sb.String()
		sb.Reset()
		for sb.Len() < 1024 {
			if sb.Len() > 0 {
				sb.WriteByte(' ')
			}
			sb.WriteString(vocab[zipf.Uint64()])
			if rng.IntN(12) == 0 {
				sb.WriteByte('.')
			}
		}
		body := sb.String()
		id := fmt.Sprintf("g%d-%d", i/8, i%8)
		src, _ := json.Marshal(struct {
			ID    string `json:"id"`
			Title string `json:"title"`
			Body  string `json:"body"`
		}{id, title, body})
		docs[i] = Doc{ID: id, Title: title, Body: body, Source: src}
	}
	return docs
}

// vocabulary makes size distinct lowercase pseudo-words; lower ranks (more
// frequent under Zipf) get shorter words, as in real languages.
func vocabulary(rng *rand.Rand, size int) []string {
	const consonants, vowels = "bcdfghjklmnprstvwz", "aeiou"
	seen := make(map[string]bool, size)
	words := make([]string, 0, size)
	for len(words) < size {
		rank := len(words)
		syllables := 1 + int(math.Log10(float64(rank+10))) + rng.IntN(2)
		var b strings.Builder
		for s := 0; s < syllables; s++ {
			b.WriteByte(consonants[rng.IntN(len(consonants))])
			b.WriteByte(vowels[rng.IntN(len(vowels))])
		}
		if w := b.String(); !seen[w] {
			seen[w] = true
			words = append(words, w)
		}
	}
	return words
}
