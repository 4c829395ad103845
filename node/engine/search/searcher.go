package search

import (
	"context"
	"fmt"
	"sync"

	"github.com/sluice-search/sluice/node/engine/index"
)

// Leaf is one segment of a point-in-time reader as the searcher sees it.
type Leaf struct {
	Reader index.LeafReader
	// Live marks live docs; nil means every doc is live.
	Live *index.FixedBitSet
	// DocBase is added to the leaf's doc ids to form the shard-local doc
	// ids hits carry; leaves are given in DocBase order, without overlap.
	DocBase int
}

// DefaultTotalHitsThreshold is Elasticsearch's track_total_hits default:
// hit counts are exact up to it and lower bounds beyond.
const DefaultTotalHitsThreshold = 10_000

// Request says what a search returns.
type Request struct {
	// Size is the number of hits (k); 0 counts only.
	Size int
	// Sort orders hits; empty means by score descending, ties by doc id.
	Sort []SortField
	// SearchAfter, when set, has one value per Sort key: only hits after it
	// in sort order are returned (see SortField). Requires Sort.
	SearchAfter []SortValue
	// SearchAfterDoc breaks ties with SearchAfter: hits whose sort values
	// equal SearchAfter are returned only if their doc id is greater. -1
	// (or any negative value) skips every tie, as Elasticsearch does; pass
	// the previous page's last Hit.Doc to page through ties exactly once
	// on the same point-in-time reader.
	SearchAfterDoc int
	// TotalHitsThreshold: hit counts are exact up to it; beyond it the
	// count is a lower bound and top-k pruning may skip docs. 0 means
	// DefaultTotalHitsThreshold; use math.MaxInt for exact counts.
	TotalHitsThreshold int
}

// Relation says whether TotalHits is exact.
type Relation uint8

const (
	RelationEqual              Relation = iota // TotalHits is exact
	RelationGreaterThanOrEqual                 // TotalHits is a lower bound
)

func (r Relation) String() string {
	if r == RelationEqual {
		return "eq"
	}
	return "gte"
}

// Hit is one result. Doc is shard-local (Leaf.DocBase + segment doc id).
type Hit struct {
	Doc   int
	Score float32 // NaN when sorting by fields without _score
	// SortValues has one value per Request.Sort key (nil without Sort).
	SortValues []SortValue
}

// TopDocs is the result of a search.
type TopDocs struct {
	TotalHits int64
	Relation  Relation
	Hits      []Hit
}

// Searcher runs queries over the leaves of one point-in-time reader. It is
// safe for concurrent use; per-search state lives in each call, in query
// contexts pooled per Searcher so that searches on the same point in time
// recycle each other's terms enums, postings enums and scorers. Make one
// Searcher per reader and keep it (engine.Reader.Searcher does).
type Searcher struct {
	leaves   []Leaf
	contexts sync.Pool // *queryContext
}

// NewSearcher returns a Searcher over leaves (ordered by DocBase).
func NewSearcher(leaves []Leaf) *Searcher {
	return &Searcher{leaves: leaves}
}

// Leaves returns the searcher's leaves.
func (s *Searcher) Leaves() []Leaf { return s.leaves }

// queryContext holds index-wide statistics for one search, computed lazily
// per field (a few interface calls per leaf). Contexts are pooled with
// their statistics and recyclers, so steady-state searches do not allocate
// them.
type queryContext struct {
	s      *Searcher
	fields map[string]*fieldStats
	spare  []*fieldStats
	leaf   leafContext

	terms   recycler[index.TermsEnum]
	impacts recycler[index.ImpactsEnum]
	scorers recycler[*termScorer]
}

// recycler keeps objects of one kind that belong to a leaf and field (terms
// enums, postings enums, term scorers) across the searches of a Searcher:
// used holds those handed out by the current search, spare those of
// earlier ones.
type recycler[T any] struct {
	used  []recycled[T]
	spare map[leafField][]T
}

type leafField struct {
	ord   int
	field string
}

type recycled[T any] struct {
	key leafField
	v   T
}

// take returns a spare object for k, if there is one; either way the
// caller hands what it uses to use.
func (r *recycler[T]) take(k leafField) (v T, ok bool) {
	sp := r.spare[k]
	if len(sp) == 0 {
		return v, false
	}
	v = sp[len(sp)-1]
	var zero T
	sp[len(sp)-1] = zero
	r.spare[k] = sp[:len(sp)-1]
	return v, true
}

// use records v as the current search's, spare again after release.
func (r *recycler[T]) use(k leafField, v T) {
	r.used = append(r.used, recycled[T]{key: k, v: v})
}

// release makes the search's objects spare (the search is over).
func (r *recycler[T]) release() {
	if r.spare == nil {
		r.spare = make(map[leafField][]T, 2)
	}
	for _, u := range r.used {
		r.spare[u.key] = append(r.spare[u.key], u.v)
	}
	clear(r.used)
	r.used = r.used[:0]
}

// termsEnum returns a terms enum of terms, the field's terms in leaf ord,
// recycled when one is spare. It is the search's until release.
func (qc *queryContext) termsEnum(ord int, field string, terms index.Terms) index.TermsEnum {
	k := leafField{ord: ord, field: field}
	te, ok := qc.terms.take(k)
	if !ok {
		te = terms.Iterator()
	}
	qc.terms.use(k, te)
	return te
}

// impactsEnum returns the impacts enum of te's current term in leaf ord,
// recycling a spare one when te is an index.ImpactsReuser. It is the
// search's until release.
func (qc *queryContext) impactsEnum(ord int, field string, te index.TermsEnum, flags index.PostingsFlags) index.ImpactsEnum {
	ir, ok := te.(index.ImpactsReuser)
	if !ok {
		return te.Impacts(flags)
	}
	k := leafField{ord: ord, field: field}
	reuse, _ := qc.impacts.take(k)
	ie := ir.ReuseImpacts(reuse, flags)
	qc.impacts.use(k, ie)
	return ie
}

// termScorer returns a zeroed term scorer for leaf ord and field, recycled
// when one is spare. It is the search's until release.
func (qc *queryContext) termScorer(ord int, field string) *termScorer {
	k := leafField{ord: ord, field: field}
	s, ok := qc.scorers.take(k)
	if ok {
		*s = termScorer{}
	} else {
		s = new(termScorer)
	}
	qc.scorers.use(k, s)
	return s
}

type fieldStats struct {
	docCount int64
	sumTTF   int64
	cache    normCache
}

func newQueryContext(s *Searcher) *queryContext {
	qc, _ := s.contexts.Get().(*queryContext)
	if qc == nil {
		qc = &queryContext{s: s, fields: make(map[string]*fieldStats, 2)}
	}
	return qc
}

// release returns qc to the pool; nothing from the search may refer to
// it afterwards (weights and scorers die with the search).
func (qc *queryContext) release() {
	for _, fs := range qc.fields {
		qc.spare = append(qc.spare, fs)
	}
	clear(qc.fields)
	qc.terms.release()
	qc.impacts.release()
	qc.scorers.release()
	qc.leaf = leafContext{}
	qc.s.contexts.Put(qc)
}

func (qc *queryContext) fieldStats(field string) *fieldStats {
	if fs, ok := qc.fields[field]; ok {
		return fs
	}
	var fs *fieldStats
	if n := len(qc.spare); n > 0 {
		fs, qc.spare = qc.spare[n-1], qc.spare[:n-1]
		fs.docCount, fs.sumTTF = 0, 0
	} else {
		fs = &fieldStats{}
	}
	for i := range qc.s.leaves {
		if t := qc.s.leaves[i].Reader.Terms(field); t != nil {
			fs.docCount += int64(t.DocCount())
			fs.sumTTF += t.SumTotalTermFreq()
		}
	}
	fs.cache.fill(avgFieldLength(fs.sumTTF, fs.docCount))
	qc.fields[field] = fs
	return fs
}

// Count returns the number of live docs matching q, exactly.
func (s *Searcher) Count(ctx context.Context, q Query) (int64, error) {
	td, err := s.Search(ctx, q, Request{TotalHitsThreshold: int(^uint(0) >> 1)})
	if err != nil {
		return 0, err
	}
	return td.TotalHits, nil
}

// Search runs q and returns the top req.Size hits.
func (s *Searcher) Search(ctx context.Context, q Query, req Request) (*TopDocs, error) {
	if req.Size < 0 {
		return nil, fmt.Errorf("%w: size %d < 0", ErrInvalidQuery, req.Size)
	}
	threshold := req.TotalHitsThreshold
	if threshold <= 0 {
		threshold = DefaultTotalHitsThreshold
	}
	if len(req.SearchAfter) > 0 && len(req.SearchAfter) != len(req.Sort) {
		return nil, fmt.Errorf("%w: search_after has %d values for %d sort keys", ErrInvalidQuery, len(req.SearchAfter), len(req.Sort))
	}
	mode := scoreMode{}
	switch {
	case req.Size == 0:
	case len(req.Sort) == 0:
		mode = scoreMode{scores: true, topScores: true}
	default:
		mode.scores = sortNeedsScores(req.Sort)
	}
	qc := newQueryContext(s)
	defer qc.release()
	w, err := q.createWeight(qc, mode, 1)
	if err != nil {
		return nil, err
	}
	// One leaf context per search, reused across leaves (scorers do not
	// keep it).
	lc := &qc.leaf
	switch {
	case req.Size == 0:
		return s.count(ctx, w, lc, threshold)
	case len(req.Sort) == 0:
		return s.topScores(ctx, w, lc, req.Size, threshold)
	default:
		return s.topFields(ctx, w, lc, req, threshold)
	}
}

func (s *Searcher) count(ctx context.Context, w weight, lc *leafContext, threshold int) (*TopDocs, error) {
	td := &TopDocs{}
	it := &interrupt{ctx: ctx}
	for i := range s.leaves {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		*lc = leafContext{ord: i, leaf: &s.leaves[i]}
		if n := w.count(lc); n >= 0 {
			td.TotalHits += int64(n)
			continue
		}
		if td.Relation == RelationGreaterThanOrEqual {
			// Counting past the threshold buys nothing (lower bound).
			continue
		}
		sc, err := w.scorer(lc)
		if err != nil {
			return nil, err
		}
		if sc == nil {
			continue
		}
		n, complete := countLeaf(sc, lc.leaf.Live, int64(threshold)-td.TotalHits, it)
		if it.err != nil {
			return nil, it.err
		}
		td.TotalHits += n
		if !complete {
			td.Relation = RelationGreaterThanOrEqual
		}
	}
	return td, nil
}

// countLeaf counts matches up to limit; complete is false if it stopped
// with more matches left.
func countLeaf(sc scorer, live *index.FixedBitSet, limit int64, it *interrupt) (n int64, complete bool) {
	tp := sc.twoPhase()
	if limit <= 0 {
		return 0, !hasNext(sc, live, tp)
	}
	for doc := sc.NextDoc(); doc != noMoreDocs; doc = sc.NextDoc() {
		if it.stop() {
			return n, false
		}
		if live != nil && !live.Get(doc) || tp != nil && !tp.matches() {
			continue
		}
		n++
		if n >= limit {
			return n, !hasNext(sc, live, tp)
		}
	}
	return n, true
}

// matchesNow reports whether the scorer's current doc is a live match.
func matchesNow(doc int, live *index.FixedBitSet, tp twoPhase) bool {
	return (live == nil || live.Get(doc)) && (tp == nil || tp.matches())
}

// hasNext reports whether sc matches another live doc.
func hasNext(sc scorer, live *index.FixedBitSet, tp twoPhase) bool {
	for doc := sc.NextDoc(); doc != noMoreDocs; doc = sc.NextDoc() {
		if matchesNow(doc, live, tp) {
			return true
		}
	}
	return false
}

// interrupt polls a context every 4096 docs, so a timeout or cancellation
// stops a search inside a large segment, not only between segments.
type interrupt struct {
	ctx context.Context
	n   uint32
	err error
}

func (it *interrupt) stop() bool {
	it.n++
	if it.n&4095 != 0 {
		return false
	}
	it.err = it.ctx.Err()
	return it.err != nil
}

// stopAfter accounts for n docs at once, for loops that visit a window of
// docs between polls: it polls if the count crossed a multiple of 4096.
func (it *interrupt) stopAfter(n int) bool {
	before := it.n
	it.n += uint32(n)
	if it.n>>12 == before>>12 {
		return false
	}
	it.err = it.ctx.Err()
	return it.err != nil
}
