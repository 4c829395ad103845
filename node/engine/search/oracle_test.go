package search

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/sluice-search/sluice/node/engine/document"
	"github.com/sluice-search/sluice/node/engine/index"
)

// The oracle evaluates queries by brute force over the raw documents,
// computing BM25 in float64 from first principles; the searcher must agree
// with it on matches and (within float32 rounding) on scores.

var textFields = []string{"body", "title"}

// genDocs makes n random documents: Zipf-distributed words in two text
// fields, an optional keyword "tag" and an optional long "num".
func genDocs(r *rand.Rand, n, vocab int, idBase int) []document.Document {
	zipf := rand.NewZipf(r, 1.1, 2, uint64(vocab-1))
	docs := make([]document.Document, n)
	for d := range docs {
		doc := &docs[d]
		doc.ID = fmt.Appendf(nil, "id%05d", idBase+d)
		doc.Source = fmt.Appendf(nil, `{"n":%d}`, idBase+d)
		for _, f := range textFields {
			maxLen := 40
			if f == "title" {
				maxLen = 6
			}
			ln := r.IntN(maxLen + 1)
			if ln == 0 {
				continue
			}
			fl := document.Field{Name: f, Type: document.Text, Length: int32(ln)}
			for p := 0; p < ln; p++ {
				fl.Tokens = append(fl.Tokens, document.Token{Term: fmt.Appendf(nil, "w%d", zipf.Uint64()), Position: int32(p)})
			}
			doc.Fields = append(doc.Fields, fl)
		}
		if r.IntN(5) > 0 {
			v := fmt.Appendf(nil, "t%02d", r.IntN(15))
			doc.Fields = append(doc.Fields, document.Field{Name: "tag", Type: document.Keyword,
				Tokens: []document.Token{{Term: v}}, Keywords: [][]byte{v}})
		}
		if r.IntN(6) > 0 {
			v := int64(r.IntN(101) - 50)
			doc.Fields = append(doc.Fields, document.Field{Name: "num", Type: document.Long,
				Tokens: []document.Token{{Term: document.EncodeSortable(nil, v)}}, Numerics: []int64{v}})
		}
	}
	return docs
}

// oracleIndex is the brute-force view: every doc with its global id.
type oracleIndex struct {
	docs    []document.Document
	deleted []bool
	memo    map[string][]bool // field + term -> docs containing it
	stats   map[string][2]float64
}

func (o *oracleIndex) field(d int, name string) *document.Field {
	for i := range o.docs[d].Fields {
		if o.docs[d].Fields[i].Name == name {
			return &o.docs[d].Fields[i]
		}
	}
	return nil
}

func (o *oracleIndex) positions(d int, field string, term []byte) []int {
	f := o.field(d, field)
	if f == nil {
		return nil
	}
	var ps []int
	for _, t := range f.Tokens {
		if bytes.Equal(t.Term, term) {
			ps = append(ps, int(t.Position))
		}
	}
	return ps
}

// hasTerm reports whether doc d has term in field (memoised per term).
func (o *oracleIndex) hasTerm(d int, field string, term []byte) bool {
	key := field + "\x00" + string(term)
	set, ok := o.memo[key]
	if !ok {
		set = make([]bool, len(o.docs))
		for _, x := range o.termDocs(field, term) {
			set[x] = true
		}
		if o.memo == nil {
			o.memo = map[string][]bool{}
		}
		o.memo[key] = set
	}
	return set[d]
}

func (o *oracleIndex) termDocs(field string, term []byte) []int {
	var ds []int
	for d := range o.docs {
		if field == index.IDField {
			if bytes.Equal(o.docs[d].ID, term) {
				ds = append(ds, d)
			}
			continue
		}
		if len(o.positions(d, field, term)) > 0 {
			ds = append(ds, d)
		}
	}
	return ds
}

// fieldStats returns docCount and average length (deleted docs count, as in
// the index statistics).
func (o *oracleIndex) fieldStats(field string) (docCount int64, avgdl float64) {
	if st, ok := o.stats[field]; ok {
		return int64(st[0]), st[1]
	}
	defer func() {
		if o.stats == nil {
			o.stats = map[string][2]float64{}
		}
		o.stats[field] = [2]float64{float64(docCount), avgdl}
	}()
	var sum int64
	for d := range o.docs {
		if f := o.field(d, field); f != nil && len(f.Tokens) > 0 {
			docCount++
			sum += int64(len(f.Tokens))
		}
	}
	if docCount == 0 {
		return 0, 1
	}
	return docCount, float64(sum) / float64(docCount)
}

func (o *oracleIndex) bm25(field string, d int, freq float64, idf, boost float64) float64 {
	_, avgdl := o.fieldStats(field)
	dl := 0
	if f := o.field(d, field); f != nil {
		dl = len(f.Tokens)
	}
	qdl := float64(index.DecodeNorm(index.EncodeNorm(dl)))
	return boost * idf * freq / (freq + 1.2*(0.25+0.75*qdl/avgdl))
}

func oracleIDF(df, n int64) float64 {
	return math.Log(1 + (float64(n-df)+0.5)/(float64(df)+0.5))
}

// result is a doc's oracle outcome; exactScore is false where the oracle
// cannot claim float-level agreement (sloppy phrase frequencies).
type result struct {
	match      bool
	score      float64
	exactScore bool
}

// eval runs q over every doc (deleted ones included; callers filter).
func (o *oracleIndex) eval(q Query, boost float64) []result {
	n := len(o.docs)
	res := make([]result, n)
	setAll := func(f func(d int) (bool, float64)) []result {
		for d := range res {
			m, s := f(d)
			res[d] = result{match: m, score: s, exactScore: true}
		}
		return res
	}
	switch q := q.(type) {
	case *TermQuery:
		docCount, _ := o.fieldStats(q.Field)
		df := int64(0)
		for d := range o.docs {
			if o.hasTerm(d, q.Field, q.Term) {
				df++
			}
		}
		idf := oracleIDF(df, docCount)
		return setAll(func(d int) (bool, float64) {
			if q.Field == index.IDField || q.Field == "tag" || q.Field == "num" {
				m := o.hasTerm(d, q.Field, q.Term)
				if !m {
					return false, 0
				}
				// Keyword-like fields: no norms (length 1), freq 1.
				_, avgdl := o.fieldStats(q.Field)
				if q.Field == index.IDField {
					avgdl = 1
				}
				return true, boost * idf * 1 / (1 + 1.2*(0.25+0.75*1/avgdl))
			}
			if !o.hasTerm(d, q.Field, q.Term) {
				return false, 0
			}
			tf := len(o.positions(d, q.Field, q.Term))
			return true, o.bm25(q.Field, d, float64(tf), idf, boost)
		})
	case *MatchAllQuery:
		return setAll(func(int) (bool, float64) { return true, boost })
	case *MatchNoneQuery:
		return setAll(func(int) (bool, float64) { return false, 0 })
	case *BoostQuery:
		return o.eval(q.Query, boost*float64(q.Boost))
	case *ConstantScoreQuery:
		inner := o.eval(q.Query, 1)
		return setAll(func(d int) (bool, float64) { return inner[d].match, boost })
	case *TermsQuery:
		return setAll(func(d int) (bool, float64) {
			for _, t := range q.Terms {
				if o.hasTerm(d, q.Field, t) {
					return true, boost
				}
			}
			return false, 0
		})
	case *RangeQuery:
		return setAll(func(d int) (bool, float64) {
			f := o.field(d, q.Field)
			if f == nil {
				return false, 0
			}
			for _, t := range f.Tokens {
				if q.Lower != nil {
					c := bytes.Compare(t.Term, q.Lower)
					if c < 0 || c == 0 && !q.IncludeLower {
						continue
					}
				}
				if q.Upper != nil {
					c := bytes.Compare(t.Term, q.Upper)
					if c > 0 || c == 0 && !q.IncludeUpper {
						continue
					}
				}
				return true, boost
			}
			return false, 0
		})
	case *PhraseQuery:
		docCount, _ := o.fieldStats(q.Field)
		var sumIDF float64
		for _, t := range q.Terms {
			sumIDF += oracleIDF(int64(len(o.termDocs(q.Field, t))), docCount)
		}
		for d := range res {
			lists := make([][]int, len(q.Terms))
			for i, t := range q.Terms {
				lists[i] = o.positions(d, q.Field, t)
			}
			freq, ok := oraclePhraseFreq(lists, q.Slop, q.Terms)
			if ok {
				res[d] = result{match: true, score: o.bm25(q.Field, d, freq, sumIDF, boost), exactScore: q.Slop == 0}
			}
		}
		return res
	case *BooleanQuery:
		sub := func(qs []Query) [][]result {
			var out [][]result
			for _, c := range qs {
				out = append(out, o.eval(c, boost))
			}
			return out
		}
		must, should, mustNot, filter := sub(q.Must), sub(q.Should), sub(q.MustNot), sub(q.Filter)
		msm := q.MinimumShouldMatch
		if len(q.Must)+len(q.Filter) == 0 && len(q.Should) > 0 {
			msm = max(msm, 1)
		}
		positive := len(q.Must)+len(q.Filter)+len(q.Should) > 0
		for d := range res {
			r := result{match: positive || len(q.MustNot) > 0, exactScore: true}
			var sum float64
			for _, c := range must {
				r.match = r.match && c[d].match
				sum += c[d].score
				r.exactScore = r.exactScore && c[d].exactScore
			}
			for _, c := range filter {
				r.match = r.match && c[d].match
			}
			for _, c := range mustNot {
				r.match = r.match && !c[d].match
			}
			cnt := 0
			for _, c := range should {
				if c[d].match {
					cnt++
					sum += c[d].score
					r.exactScore = r.exactScore && c[d].exactScore
				}
			}
			r.match = r.match && cnt >= msm
			if r.match {
				r.score = sum
				res[d] = r
			}
		}
		return res
	}
	panic(fmt.Sprintf("oracle: unknown query %T", q))
}

// oraclePhraseFreq decides a phrase match; lists[i] holds the positions of
// term i, whose offset in the phrase is i.
func oraclePhraseFreq(lists [][]int, slop int, terms [][]byte) (float64, bool) {
	for _, l := range lists {
		if len(l) == 0 {
			return 0, false
		}
	}
	if slop == 0 {
		freq := 0
		for _, p := range lists[0] {
			all := true
			for i := 1; i < len(lists); i++ {
				all = all && slices.Contains(lists[i], p+i)
			}
			if all {
				freq++
			}
		}
		return float64(freq), freq > 0
	}
	// A sloppy match exists iff some choice of one position per term, a
	// repeated term never taking a position twice, has
	// max(pos-i) - min(pos-i) <= slop.
	best := math.MaxInt
	chosen := make([]int, len(lists))
	var rec func(i, lo, hi int)
	rec = func(i, lo, hi int) {
		if hi-lo >= best {
			return
		}
		if i == len(lists) {
			best = hi - lo
			return
		}
	next:
		for _, p := range lists[i] {
			for j := 0; j < i; j++ {
				if chosen[j] == p && bytes.Equal(terms[j], terms[i]) {
					continue next
				}
			}
			chosen[i] = p
			rec(i+1, min(lo, p-i), max(hi, p-i))
		}
	}
	rec(0, math.MaxInt, math.MinInt)
	return 1, best <= slop
}
