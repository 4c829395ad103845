package search

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"math"

	"github.com/sluice-search/sluice/node/engine/index"
)

// SortType is what a sort key reads.
type SortType uint8

const (
	SortByScore   SortType = iota // _score (use Desc for best first)
	SortByDoc                     // _doc: shard-local doc id (index order)
	SortByNumeric                 // a field's numeric doc values (long, double as sortable bits, date, boolean)
	SortByKeyword                 // a keyword field's sorted doc values (byte order)
)

// SortField is one sort key. Desc puts larger values first. Docs without a
// value sort last whatever the order, unless MissingFirst.
type SortField struct {
	Type         SortType
	Field        string // for SortByNumeric / SortByKeyword
	Desc         bool
	MissingFirst bool
}

// SortValue is a hit's value for one sort key, in a form a coordinator can
// merge across shards with CompareSortValues: Float for _score, Int for
// numeric fields (Double as document.SortableFloat64 bits) and for _doc,
// Bytes for keyword fields. Missing is set for a doc without a value.
type SortValue struct {
	Missing bool
	Int     int64
	Float   float32
	Bytes   []byte
}

// CompareSortValues orders two hits' sort values under sort (negative when
// a comes first). Merging shards' hits by it, then by shard and doc for
// ties, reproduces a single-index order.
func CompareSortValues(sort []SortField, a, b []SortValue) int {
	for i := range sort {
		if c := compareValue(&sort[i], &a[i], &b[i]); c != 0 {
			return c
		}
	}
	return 0
}

func compareValue(f *SortField, a, b *SortValue) int {
	if c, done := compareMissing(f, a.Missing, b.Missing); done {
		return c
	}
	var c int
	switch f.Type {
	case SortByScore:
		c = cmp.Compare(a.Float, b.Float)
	case SortByKeyword:
		c = bytes.Compare(a.Bytes, b.Bytes)
	default:
		c = cmp.Compare(a.Int, b.Int)
	}
	if f.Desc {
		return -c
	}
	return c
}

// compareMissing orders missing values (last unless MissingFirst, in
// either direction); done is false when neither is missing.
func compareMissing(f *SortField, aMissing, bMissing bool) (int, bool) {
	if !aMissing && !bMissing {
		return 0, false
	}
	if aMissing && bMissing {
		return 0, true
	}
	c := 1
	if f.MissingFirst {
		c = -1
	}
	if bMissing {
		c = -c
	}
	return c, true
}

func sortNeedsScores(sort []SortField) bool {
	for _, f := range sort {
		if f.Type == SortByScore {
			return true
		}
	}
	return false
}

// localValue is a sort value comparable within one leaf: keyword terms as
// ordinals (2*ord for a doc's term; 2*ord-1 for a term between ord-1 and
// ord), so per-doc comparisons never touch term bytes.
type localValue struct {
	missing bool
	i       int64
	f       float32
}

func compareLocal(f *SortField, a, b *localValue) int {
	if c, done := compareMissing(f, a.missing, b.missing); done {
		return c
	}
	var c int
	if f.Type == SortByScore {
		c = cmp.Compare(a.f, b.f)
	} else {
		c = cmp.Compare(a.i, b.i)
	}
	if f.Desc {
		return -c
	}
	return c
}

// fieldEntry is a kept hit of the field-sorted top-k.
type fieldEntry struct {
	doc    int // shard-local
	score  float32
	values []SortValue // owned (Bytes copied)
}

// topFieldCollector keeps the k first hits in sort order (ties by doc id)
// in a heap whose root is the last kept hit.
type topFieldCollector struct {
	sort      []SortField
	k         int
	heap      []*fieldEntry
	totalHits int64
	threshold int64

	after    []SortValue
	afterDoc int

	// per leaf
	docBase     int
	num         []index.NumericDocValues
	sorted      []index.SortedDocValues
	cand        []localValue
	bottomLocal []localValue
	bottomDirty bool
	afterLocal  []localValue
	spare       *fieldEntry
	interrupt
}

// entryBefore orders heap entries by sort values then doc id.
func (c *topFieldCollector) entryBefore(a, b *fieldEntry) bool {
	if r := CompareSortValues(c.sort, a.values, b.values); r != 0 {
		return r < 0
	}
	return a.doc < b.doc
}

func (c *topFieldCollector) setLeaf(leaf *Leaf) {
	c.docBase = leaf.DocBase
	for i := range c.sort {
		f := &c.sort[i]
		c.num[i], c.sorted[i] = nil, nil
		switch f.Type {
		case SortByNumeric:
			c.num[i] = leaf.Reader.NumericDocValues(f.Field)
		case SortByKeyword:
			c.sorted[i] = leaf.Reader.SortedDocValues(f.Field)
		}
	}
	c.bottomDirty = true
	if c.after != nil {
		c.toLocal(c.after, c.afterLocal)
	}
}

// toLocal converts global sort values to this leaf's comparable form.
func (c *topFieldCollector) toLocal(vals []SortValue, dst []localValue) {
	for i := range c.sort {
		v := &vals[i]
		dst[i] = localValue{missing: v.Missing, i: v.Int, f: v.Float}
		if c.sort[i].Type == SortByKeyword && !v.Missing {
			dst[i].i = localOrd(c.sorted[i], v.Bytes)
		}
	}
}

// localOrd finds term among a leaf's sorted ordinals: 2*ord if present,
// else 2*insertionPoint-1 (between its neighbours).
func localOrd(dv index.SortedDocValues, term []byte) int64 {
	if dv == nil {
		return -1 // every doc of the leaf is missing; any value works
	}
	lo, hi := 0, dv.ValueCount()
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if bytes.Compare(dv.LookupOrd(m), term) < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < dv.ValueCount() && bytes.Equal(dv.LookupOrd(lo), term) {
		return 2 * int64(lo)
	}
	return 2*int64(lo) - 1
}

// load reads doc's local sort values into c.cand.
func (c *topFieldCollector) load(doc int, score float32) {
	for i := range c.sort {
		lv := &c.cand[i]
		*lv = localValue{}
		switch c.sort[i].Type {
		case SortByScore:
			lv.f = score
		case SortByDoc:
			lv.i = int64(c.docBase + doc)
		case SortByNumeric:
			if c.num[i] == nil {
				lv.missing = true
			} else {
				v, ok := c.num[i].Get(doc)
				lv.i, lv.missing = v, !ok
			}
		case SortByKeyword:
			ord := -1
			if c.sorted[i] != nil {
				ord = c.sorted[i].Ord(doc)
			}
			lv.i, lv.missing = 2*int64(ord), ord < 0
		}
	}
}

func (c *topFieldCollector) compareCand(ref []localValue) int {
	for i := range c.sort {
		if r := compareLocal(&c.sort[i], &c.cand[i], &ref[i]); r != 0 {
			return r
		}
	}
	return 0
}

// collect offers doc; it reports whether doc was competitive.
func (c *topFieldCollector) collect(doc int, score float32) bool {
	c.totalHits++
	c.load(doc, score)
	if c.after != nil {
		r := c.compareCand(c.afterLocal)
		if r < 0 || r == 0 && (c.afterDoc < 0 || c.docBase+doc <= c.afterDoc) {
			return false
		}
	}
	if len(c.heap) == c.k {
		if c.bottomDirty {
			c.toLocal(c.heap[0].values, c.bottomLocal)
			c.bottomDirty = false
		}
		// A tie with the bottom loses: the bottom has a smaller doc id.
		if c.compareCand(c.bottomLocal) >= 0 {
			return false
		}
	}
	e := c.spare
	if len(c.heap) == c.k {
		e = c.heap[0]
	} else if e == nil {
		e = &fieldEntry{values: make([]SortValue, len(c.sort))}
	} else {
		c.spare = nil
	}
	e.doc, e.score = c.docBase+doc, score
	for i := range c.sort {
		lv := &c.cand[i]
		v := &e.values[i]
		v.Missing, v.Int, v.Float = lv.missing, lv.i, lv.f
		if c.sort[i].Type == SortByKeyword {
			v.Int = 0
			v.Bytes = v.Bytes[:0]
			if !lv.missing {
				v.Bytes = append(v.Bytes, c.sorted[i].LookupOrd(int(lv.i/2))...)
			}
		}
	}
	if len(c.heap) < c.k {
		c.heap = append(c.heap, e)
		c.up(len(c.heap) - 1)
	} else {
		c.down(0)
	}
	c.bottomDirty = true
	return true
}

// The heap's root is the entry that sorts last.
func (c *topFieldCollector) sortsLast(a, b *fieldEntry) bool { return c.entryBefore(b, a) }
func (c *topFieldCollector) up(i int)                        { siftUp(c.heap, i, c.sortsLast) }
func (c *topFieldCollector) down(i int)                      { siftDown(c.heap, i, c.sortsLast) }

func (c *topFieldCollector) results(scored bool) []Hit {
	hits := make([]Hit, len(c.heap))
	for i := len(c.heap) - 1; i >= 0; i-- {
		e := c.heap[0]
		score := e.score
		if !scored {
			score = float32(math.NaN())
		}
		hits[i] = Hit{Doc: e.doc, Score: score, SortValues: e.values}
		c.heap[0] = c.heap[len(c.heap)-1]
		c.heap = c.heap[:len(c.heap)-1]
		c.down(0)
	}
	return hits
}

func (s *Searcher) topFields(ctx context.Context, w weight, lc *leafContext, req Request, threshold int) (*TopDocs, error) {
	n := len(req.Sort)
	for _, f := range req.Sort {
		if (f.Type == SortByNumeric || f.Type == SortByKeyword) && f.Field == "" {
			return nil, fmt.Errorf("%w: sort by doc values needs a field", ErrInvalidQuery)
		}
	}
	if n == 1 && req.Sort[0].Type == SortByDoc && !req.Sort[0].Desc {
		return s.docOrder(ctx, w, lc, req, threshold)
	}
	c := &topFieldCollector{
		sort: req.Sort, k: req.Size, threshold: int64(threshold),
		heap:     make([]*fieldEntry, 0, min(req.Size, 1024)),
		afterDoc: req.SearchAfterDoc, interrupt: interrupt{ctx: ctx},
		num: make([]index.NumericDocValues, n), sorted: make([]index.SortedDocValues, n),
		cand: make([]localValue, n), bottomLocal: make([]localValue, n),
	}
	if len(req.SearchAfter) > 0 {
		c.after = req.SearchAfter
		c.afterLocal = make([]localValue, n)
	}
	scored := sortNeedsScores(req.Sort)
	// Sorted by _doc ascending, nothing after a full heap can compete: only
	// counting continues, and it stops at the threshold.
	docOrder := req.Sort[0].Type == SortByDoc && !req.Sort[0].Desc
	relation := RelationEqual
	for i := range s.leaves {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		*lc = leafContext{ord: i, leaf: &s.leaves[i]}
		if docOrder && relation == RelationGreaterThanOrEqual {
			break
		}
		sc, err := w.scorer(lc)
		if err != nil {
			return nil, err
		}
		if sc == nil {
			continue
		}
		c.setLeaf(lc.leaf)
		if !fieldSortLeaf(sc, lc.leaf, c, scored, docOrder) {
			relation = RelationGreaterThanOrEqual
		}
		if c.err != nil {
			return nil, c.err
		}
	}
	return &TopDocs{TotalHits: c.totalHits, Relation: relation, Hits: c.results(scored)}, nil
}

// fieldSortLeaf collects a leaf; it returns false if it stopped counting
// early (sorted by _doc with a full heap past the threshold).
func fieldSortLeaf(sc scorer, leaf *Leaf, c *topFieldCollector, scored, docOrder bool) bool {
	tp := sc.twoPhase()
	live := leaf.Live
	afterLocalDoc := -1
	if docOrder && c.after != nil && !c.after[0].Missing {
		afterLocalDoc = int(c.after[0].Int) - leaf.DocBase
	}
	complete := true
	for doc := sc.NextDoc(); doc != noMoreDocs; doc = sc.NextDoc() {
		if c.stop() {
			return false
		}
		if docOrder && c.totalHits >= c.threshold {
			if len(c.heap) == c.k {
				// doc is unexamined: it or a later doc makes the
				// count a lower bound.
				return complete && !(matchesNow(doc, live, tp) || hasNext(sc, live, tp))
			}
			if doc <= afterLocalDoc {
				// Past the threshold, docs before search_after need no
				// counting: jump.
				complete = false
				if doc = sc.Advance(afterLocalDoc + 1); doc == noMoreDocs {
					return false
				}
			}
		}
		if (live != nil && !live.Get(doc)) || (tp != nil && !tp.matches()) {
			continue
		}
		var score float32
		if scored {
			score = sc.score()
		}
		c.collect(doc, score)
	}
	return complete
}

// docOrder serves a sort by _doc alone (scans, point-in-time paging): hits
// arrive in order, so the first k matches after search_after are the page —
// no heap, one allocation for all sort values — and once the threshold is
// counted the search jumps to search_after and stops after k hits.
func (s *Searcher) docOrder(ctx context.Context, w weight, lc *leafContext, req Request, threshold int) (*TopDocs, error) {
	k, limit := req.Size, int64(threshold)
	first := 0 // the first shard-local doc a hit may have
	if len(req.SearchAfter) > 0 && !req.SearchAfter[0].Missing {
		switch a := req.SearchAfter[0].Int; {
		case a >= noMoreDocs:
			first = noMoreDocs
		case a < 0:
		case req.SearchAfterDoc >= 0 && a > int64(req.SearchAfterDoc):
			first = int(a) // a tie (the doc itself) after SearchAfterDoc
		default:
			first = int(a) + 1
		}
	}
	td := &TopDocs{Hits: make([]Hit, 0, min(k, 1024))}
	vals := make([]SortValue, min(k, 1024))
	it := &interrupt{ctx: ctx}
	done := false
	for i := range s.leaves {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		*lc = leafContext{ord: i, leaf: &s.leaves[i]}
		base, live := lc.leaf.DocBase, lc.leaf.Live
		if td.TotalHits >= limit && base+lc.leaf.Reader.MaxDoc() <= first {
			// Counted enough; nothing here can be a hit.
			td.Relation = RelationGreaterThanOrEqual
			continue
		}
		sc, err := w.scorer(lc)
		if err != nil {
			return nil, err
		}
		if sc == nil {
			continue
		}
		tp := sc.twoPhase()
		for doc := sc.NextDoc(); doc != noMoreDocs; {
			if it.stop() {
				return nil, it.err
			}
			if td.TotalHits >= limit {
				if len(td.Hits) == k {
					if matchesNow(doc, live, tp) || hasNext(sc, live, tp) {
						td.Relation = RelationGreaterThanOrEqual
					}
					done = true
					break
				}
				if base+doc < first {
					td.Relation = RelationGreaterThanOrEqual
					doc = sc.Advance(first - base)
					continue
				}
			}
			if matchesNow(doc, live, tp) {
				td.TotalHits++
				if base+doc >= first && len(td.Hits) < k {
					if len(vals) == 0 {
						vals = make([]SortValue, min(k-len(td.Hits), 1024))
					}
					vals[0].Int = int64(base + doc)
					td.Hits = append(td.Hits, Hit{Doc: base + doc, Score: float32(math.NaN()), SortValues: vals[:1:1]})
					vals = vals[1:]
				}
			}
			doc = sc.NextDoc()
		}
		if done {
			// Any match in a later leaf makes the count a lower bound.
			for j := i + 1; j < len(s.leaves) && td.Relation == RelationEqual; j++ {
				*lc = leafContext{ord: j, leaf: &s.leaves[j]}
				sc, err := w.scorer(lc)
				if err != nil {
					return nil, err
				}
				if sc != nil && hasNext(sc, lc.leaf.Live, sc.twoPhase()) {
					td.Relation = RelationGreaterThanOrEqual
				}
			}
			break
		}
	}
	return td, nil
}
