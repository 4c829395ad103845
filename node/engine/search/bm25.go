package search

import (
	"math"

	"github.com/sluice-search/sluice/node/engine/index"
)

// BM25 parameters, Lucene's defaults.
const (
	bm25K1 = float32(1.2)
	bm25B  = float32(0.75)
)

// idf is Lucene's BM25 idf: ln(1 + (N - n + 0.5) / (n + 0.5)), computed in
// float64 and rounded once to float32 as Lucene does.
func idf(docFreq, docCount int64) float32 {
	return float32(math.Log(1 + (float64(docCount-docFreq)+0.5)/(float64(docFreq)+0.5)))
}

// avgFieldLength is sumTotalTermFreq / docCount (1 when the field is empty).
func avgFieldLength(sumTotalTermFreq, docCount int64) float32 {
	if docCount <= 0 || sumTotalTermFreq <= 0 {
		return 1
	}
	return float32(float64(sumTotalTermFreq) / float64(docCount))
}

// normCache holds, for each norm byte, 1 / (k1 * ((1-b) + b*len/avgdl)): the
// length-normalisation term of BM25, computed once per field per query so
// scoring a doc is a table lookup, a multiply-add and a division.
type normCache [256]float32

func (c *normCache) fill(avgdl float32) {
	for i := range c {
		c[i] = 1 / (bm25K1 * ((1 - bm25B) + bm25B*float32(index.NormTable[i])/avgdl))
	}
}

// bm25 scores one term (or phrase) of a query: weight = boost * idf.
// Lucene 8+'s form, without the constant (k1+1) factor:
//
//	score = weight * freq / (freq + k1*((1-b) + b*len/avgdl))
//	      = weight - weight / (1 + freq*cache[norm])
type bm25 struct {
	weight float32
	cache  *normCache
}

func (s *bm25) score(freq float32, norm uint8) float32 {
	return bm25Score(s.weight, float32(freq*s.cache[norm]))
}

// bm25Score is BM25 from the weight and x = freq*cache[norm]. Every
// scoring path computes x rounded to float32 on its own (an explicit
// conversion, so no platform fuses the multiply into the addition) and
// then this, so pruned and exhaustive searches agree to the bit; and as
// the result is monotone in x (for weight >= 0), a score threshold can be
// turned into a threshold on x.
func bm25Score(weight, x float32) float32 { return weight - weight/(1+x) }

// maxScore bounds every score of this term: the limit as freq grows.
func (s *bm25) maxScore() float32 { return s.weight }

// noNorm is the norm byte used for fields indexed without norms (Lucene
// treats them as length 1).
const noNorm = uint8(1)
