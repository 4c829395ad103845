package datapath

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"math"
	"slices"
	"sync"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/sluice-search/sluice/cluster/fanout"
	"github.com/sluice-search/sluice/cluster/routing"
	"github.com/sluice-search/sluice/cluster/state"
	nodev1 "github.com/sluice-search/sluice/proto/sluice/node/v1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
	"github.com/sluice-search/sluice/querydsl"
)

// defaultSize is the hits a search returns when it does not say.
const defaultSize = 10

// searchTarget is a shard with the reader to search (0: latest), and the
// nodes of the copies that may serve it (none for a pinned reader).
type searchTarget struct {
	target
	reader uint64
	copies []string
}

// shardResult is one shard's query phase.
type shardResult struct {
	t    searchTarget
	resp *nodev1.ShardSearchResponse
	err  error
}

// mergedHit is a hit during the merge.
type mergedHit struct {
	sr  *shardResult
	hit *nodev1.ShardHit
}

// Search runs a search: query phase on every shard, merge, fetch phase.
func (d *DataPath) Search(ctx context.Context, req *sluicev1.SearchRequest) (*sluicev1.SearchResponse, error) {
	return d.search(ctx, req, time.Now(), true)
}

// search is Search; with again, a fetch phase that finds a shard's copy
// gone from its node (the copy moved away, or its node stopped, between
// the two phases) runs the whole search once more on the copies the
// cluster state has then, rather than report the search failed. A point
// in time pins its readers, so it is not run again.
func (d *DataPath) search(ctx context.Context, req *sluicev1.SearchRequest, start time.Time, again bool) (*sluicev1.SearchResponse, error) {
	// Unset size means the default; an explicit 0 counts only.
	size, from := defaultSize, int(req.GetFrom())
	if req.Size != nil {
		size = int(req.GetSize())
	}
	if err := checkSearch(req, size, from); err != nil {
		return nil, err
	}
	st, err := d.state(ctx)
	if err != nil {
		return nil, err
	}
	targets, unstarted, err := d.searchTargets(st, req.GetIndices(), req.GetPit())
	if err != nil {
		return nil, err
	}
	if err := validate(st, targets, req.GetQuery(), req.GetSort(), req.GetDocvalueFields()); err != nil {
		return nil, err
	}
	if r := req.GetRouting(); r != "" {
		targets = routed(st, targets, r)
	}
	results := d.queryPhase(ctx, targets, req, from+size)

	resp := &sluicev1.SearchResponse{Total: &sluicev1.TotalHits{Relation: sluicev1.TotalHitsRelation_TOTAL_HITS_RELATION_EQ}}
	if req.GetPit() != nil {
		resp.PitId = req.GetPit().GetId()
	}
	fails := unstarted
	var hits []mergedHit
	for i := range results {
		r := &results[i]
		if r.err != nil {
			fails = append(fails, d.shardFailure(r.t.target, r.err))
			continue
		}
		resp.Total.Value += r.resp.GetTotal().GetValue()
		if r.resp.GetTotal().GetRelation() == sluicev1.TotalHitsRelation_TOTAL_HITS_RELATION_GTE {
			resp.Total.Relation = sluicev1.TotalHitsRelation_TOTAL_HITS_RELATION_GTE
		}
		resp.TimedOut = resp.TimedOut || r.resp.GetTimedOut()
		resp.MaxScore = max(resp.MaxScore, r.resp.GetMaxScore())
		for _, h := range r.resp.GetHits() {
			shardDocValues(req.GetSort(), r.t.pos, h)
			hits = append(hits, mergedHit{sr: r, hit: h})
		}
	}
	resp.Shards = summary(len(targets)+len(unstarted), fails)
	if len(fails) == len(targets)+len(unstarted) && len(fails) > 0 {
		d.releaseAll(results, req.GetPit() != nil)
		return nil, firstShardError(results, fails)
	}
	slices.SortStableFunc(hits, func(a, b mergedHit) int { return compareHits(req.GetSort(), a, b) })
	if from < len(hits) {
		hits = hits[from:min(len(hits), from+size)]
	} else {
		hits = nil
	}
	fetchSource := req.FetchSource == nil || req.GetFetchSource()
	// The fetched documents are held against the coordinator's search
	// budget until the response is handed to gRPC.
	held := d.holdSearch("size")
	defer held.release()
	docs, err := d.fetchPhase(ctx, results, hits, fetchRequest{source: fetchSource, docValues: req.GetDocvalueFields()}, req.GetPit() != nil, held)
	if err != nil && again && req.GetPit() == nil && notHere(err) && ctx.Err() == nil {
		held.release()
		return d.search(ctx, req, start, false)
	}
	if err != nil {
		return nil, err
	}
	resp.Hits = make([]*sluicev1.Hit, len(hits))
	for i, h := range hits {
		fd := docs[i]
		resp.Hits[i] = &sluicev1.Hit{Index: h.sr.t.index, Id: fd.GetId(), Score: h.hit.GetScore(), Source: fd.GetSource(),
			Sort: h.hit.GetSort(), Shard: int32(h.sr.t.shard), Routing: fd.GetRouting(), Fields: fd.GetFields()}
	}
	resp.Took = durationpb.New(time.Since(start))
	return resp, nil
}

// searchTargets lists the shards to search: a PIT's pinned readers, or
// every shard of the indices.
func (d *DataPath) searchTargets(st *state.Snapshot, indices []string, pit *sluicev1.PointInTime) ([]searchTarget, []*sluicev1.ShardFailure, error) {
	if pit != nil {
		ps, err := decodePIT(pit.GetId())
		if err != nil {
			return nil, nil, err
		}
		out := make([]searchTarget, len(ps))
		for i, p := range ps {
			out[i] = searchTarget{target: target{index: p.index, uuid: p.uuid, shard: p.shard, node: p.node, pos: i}, reader: p.reader}
		}
		return out, nil, nil
	}
	xs, err := resolve(st, indices)
	if err != nil {
		return nil, nil, err
	}
	ts, unstarted := d.readShards(st, xs)
	return ts, unstarted, nil
}

// routed keeps the shards a routing value maps to.
func routed(st *state.Snapshot, ts []searchTarget, key string) []searchTarget {
	var out []searchTarget
	for _, t := range ts {
		if x, ok := st.ByUUID[t.uuid]; ok && t.shard == routingShard(x, key) {
			out = append(out, t)
		}
	}
	return out
}

// validate checks the query, sort and docvalue_fields against the mappings
// of the indices searched: a field must exist in at least one of them (a
// docvalue field need not, but must have doc values where it is mapped).
func validate(st *state.Snapshot, ts []searchTarget, q *sluicev1.Query, sort []*sluicev1.SortField, docValues []string) error {
	var firstErr error
	seen := map[string]bool{}
	for _, t := range ts {
		x, ok := st.ByUUID[t.uuid]
		if !ok || seen[t.uuid] {
			continue
		}
		seen[t.uuid] = true
		m, err := querydsl.MappingFromProto(x.Meta.GetMapping())
		if err != nil {
			return err
		}
		_, err = querydsl.Compiler{Mapping: m, Strict: true}.Compile(q)
		if err == nil {
			err = querydsl.ValidateSort(m, sort)
		}
		if err == nil {
			_, err = querydsl.DocValueFields(m, docValues)
		}
		if err == nil {
			return nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	return firstErr
}

func routingShard(x *state.Index, key string) int { return routing.Shard(key, params(x)) }

// queryPhase runs ShardSearch on every target concurrently.
func (d *DataPath) queryPhase(ctx context.Context, ts []searchTarget, req *sluicev1.SearchRequest, k int) []shardResult {
	results := make([]shardResult, len(ts))
	var wg sync.WaitGroup
	for i, t := range ts {
		fanout.Go(&wg, func() {
			sreq := &nodev1.ShardSearchRequest{Shard: t.id(), Query: req.GetQuery(), Size: int32(k), Sort: req.GetSort(),
				TrackTotalHits: req.GetTrackTotalHits(), ReaderId: t.reader, Timeout: req.GetTimeout()}
			if t.reader != 0 {
				sreq.KeepAlive = req.GetPit().GetKeepAlive()
			}
			if after := req.GetSearchAfter(); after != nil {
				sreq.SearchAfter = shardSearchAfter(req.GetSort(), after, t.pos)
			}
			r := shardResult{t: t}
			call := func(c nodev1.NodeClient) (err error) {
				r.resp, err = c.ShardSearch(ctx, sreq)
				return err
			}
			if t.reader != 0 {
				// A pinned reader lives on its node: no following.
				c, err := d.nodes.Client(t.node)
				if err == nil {
					err = call(c)
				}
				r.err = err
			} else {
				r.err = d.onCopies(ctx, &r.t, call)
			}
			results[i] = r
		})
	}
	wg.Wait()
	return results
}

// fetchRequest is what the fetch phase reads of each hit besides its id.
type fetchRequest struct {
	source    bool
	docValues []string
}

// fetchPhase reads the winners from the readers their shards searched, and
// releases readers pinned for this search only. Docs come back in hits
// order.
func (d *DataPath) fetchPhase(ctx context.Context, results []shardResult, hits []mergedHit, want fetchRequest, pit bool, held *searchHold) ([]*nodev1.FetchedDoc, error) {
	byShard := map[*shardResult][]int{}
	for i, h := range hits {
		byShard[h.sr] = append(byShard[h.sr], i)
	}
	docs := make([]*nodev1.FetchedDoc, len(hits))
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for i := range results {
		r := &results[i]
		if r.err != nil {
			continue
		}
		idx := byShard[r]
		if len(idx) == 0 {
			if !pit {
				d.release(r.t.node, r.resp.GetReaderId())
			}
			continue
		}
		fanout.Go(&wg, func() {
			freq := &nodev1.ShardFetchRequest{Shard: r.t.id(), ReaderId: r.resp.GetReaderId(), FetchSource: want.source, DocvalueFields: want.docValues, Release: !pit}
			for _, j := range idx {
				freq.Docs = append(freq.Docs, hits[j].hit.GetDoc())
			}
			c, err := d.nodes.Client(r.t.node)
			var fr *nodev1.ShardFetchResponse
			if err == nil {
				fr, err = c.ShardFetch(ctx, freq)
			}
			if err == nil {
				var n int64
				for _, doc := range fr.GetDocs() {
					n += docBytes(doc.GetId(), doc.GetRouting(), doc.GetSource())
				}
				err = held.add(ctx, n)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			for k, j := range idx {
				docs[j] = fr.GetDocs()[k]
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		return nil, errs[0]
	}
	return docs, nil
}

// release closes a reader pinned by a search in the background: nobody
// waits for it, and the node's keep-alive covers a lost call.
func (d *DataPath) release(node string, reader uint64) {
	if reader == 0 {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if c, err := d.nodes.Client(node); err == nil {
			_, _ = c.CloseShardReader(ctx, &nodev1.CloseShardReaderRequest{ReaderId: reader})
		}
	}()
}

func (d *DataPath) releaseAll(results []shardResult, pit bool) {
	if pit {
		return
	}
	for _, r := range results {
		if r.err == nil {
			d.release(r.t.node, r.resp.GetReaderId())
		}
	}
}

// firstShardError is the error of a search every shard failed.
func firstShardError(results []shardResult, fails []*sluicev1.ShardFailure) error {
	for _, r := range results {
		if r.err != nil {
			return r.err
		}
	}
	return errors.New(fails[0].GetError().GetReason())
}

// compareHits orders merged hits: by the sort keys, or by score
// descending; ties by shard position, then doc.
func compareHits(sort []*sluicev1.SortField, a, b mergedHit) int {
	if len(sort) == 0 {
		if c := cmp.Compare(b.hit.GetScore(), a.hit.GetScore()); c != 0 {
			return c
		}
	} else {
		for i, f := range sort {
			if c := compareSortValue(f, a.hit.GetSort()[i], b.hit.GetSort()[i]); c != 0 {
				return c
			}
		}
	}
	if c := cmp.Compare(a.sr.t.pos, b.sr.t.pos); c != 0 {
		return c
	}
	return cmp.Compare(a.hit.GetDoc(), b.hit.GetDoc())
}

// compareSortValue orders two values of one key; missing values go last
// (first with missing_first) whatever the order.
func compareSortValue(f *sluicev1.SortField, a, b *sluicev1.SortValue) int {
	am, bm := a.GetKind() == nil, b.GetKind() == nil
	switch {
	case am && bm:
		return 0
	case am || bm:
		c := 1
		if f.GetMissingFirst() {
			c = -1
		}
		if bm {
			c = -c
		}
		return c
	}
	var c int
	switch av := a.GetKind().(type) {
	case *sluicev1.SortValue_KeywordValue:
		c = bytes.Compare(av.KeywordValue, b.GetKeywordValue())
	case *sluicev1.SortValue_LongValue:
		if bv, ok := b.GetKind().(*sluicev1.SortValue_LongValue); ok {
			c = cmp.Compare(av.LongValue, bv.LongValue)
		} else {
			c = cmp.Compare(float64(av.LongValue), number(b))
		}
	default:
		c = cmp.Compare(number(a), number(b))
	}
	desc := f.GetOrder() == sluicev1.SortOrder_SORT_ORDER_DESC ||
		f.GetField() == "_score" && f.GetOrder() != sluicev1.SortOrder_SORT_ORDER_ASC
	if desc {
		return -c
	}
	return c
}

func number(v *sluicev1.SortValue) float64 {
	switch k := v.GetKind().(type) {
	case *sluicev1.SortValue_Score:
		return float64(k.Score)
	case *sluicev1.SortValue_LongValue:
		return float64(k.LongValue)
	case *sluicev1.SortValue_DoubleValue:
		return k.DoubleValue
	}
	return math.NaN()
}

// shardDocValues makes the _shard_doc values of a shard's hit unique
// across shards: position << 32 | doc.
func shardDocValues(sort []*sluicev1.SortField, pos int, h *nodev1.ShardHit) {
	for i, f := range sort {
		if f.GetField() == "_shard_doc" && i < len(h.GetSort()) {
			h.Sort[i] = &sluicev1.SortValue{Kind: &sluicev1.SortValue_LongValue{LongValue: int64(pos)<<32 | h.Sort[i].GetLongValue()}}
		}
	}
}

// shardSearchAfter translates a search_after's _shard_doc values for the
// shard at pos: its own doc if the cursor is in this shard; otherwise a
// bound that keeps all (shard after the cursor) or none (before) of its
// docs that tie on the earlier keys.
func shardSearchAfter(sort []*sluicev1.SortField, after *sluicev1.SearchAfter, pos int) *sluicev1.SearchAfter {
	out := &sluicev1.SearchAfter{Values: slices.Clone(after.GetValues())}
	for i, f := range sort {
		if f.GetField() != "_shard_doc" || i >= len(out.Values) {
			continue
		}
		v := out.Values[i].GetLongValue()
		cursorPos, doc := int(v>>32), v&0xffffffff
		desc := f.GetOrder() == sluicev1.SortOrder_SORT_ORDER_DESC
		switch before := pos < cursorPos != desc; {
		case pos == cursorPos:
		case before: // every doc of this shard sorts before the cursor
			doc = math.MaxInt64
			if desc {
				doc = -1
			}
		default:
			doc = -1
			if desc {
				doc = math.MaxInt64
			}
		}
		out.Values[i] = &sluicev1.SortValue{Kind: &sluicev1.SortValue_LongValue{LongValue: doc}}
	}
	return out
}
