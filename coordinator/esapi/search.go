package esapi

import (
	"encoding/json"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/sluice-search/sluice/esjson"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// searchParams are _search's URL parameters: the ones Sluice reads, and
// the ones it accepts and ignores (docs/elasticsearch-api.md says why).
var searchParams = []string{
	"from", "size", "sort", "_source", "_source_includes", "_source_excludes", "track_total_hits", "timeout", "docvalue_fields",
	"seq_no_primary_term",
	"routing", "scroll", "rest_total_hits_as_int", "search_type", "allow_partial_search_results",
	// Accepted and ignored.
	"typed_keys", "request_cache", "preference", "ignore_unavailable", "allow_no_indices", "expand_wildcards",
	"batched_reduce_size", "pre_filter_shard_size", "max_concurrent_shard_requests", "ccs_minimize_roundtrips", "ignore_throttled",
	// Refused with a reason.
	"q",
}

// searchQuery is a search as read from the URL and body.
type searchQuery struct {
	body    *esjson.Search
	indices []string
	// none: the index expression matched no index (the answer is empty).
	none bool
	// totalAsInt: rest_total_hits_as_int.
	totalAsInt bool
	filter     *sourceFilter
	// versions: seq_no_primary_term, read as the docvalue_fields _seq_no
	// and _primary_term; hidden are those of them the search did not name
	// itself, left out of the hits' "fields".
	versions bool
	hidden   []string
}

// readSearch reads a search's URL and body. URL parameters override the
// body's, as in Elasticsearch.
func (a *API) readSearch(r *request) (*searchQuery, error) {
	if r.has("q") {
		return nil, badRequest("[q] (Lucene query string syntax) is not supported by Sluice: send the query DSL in the body")
	}
	b, err := r.body()
	if err != nil {
		return nil, err
	}
	if len(b) == 0 && r.has("source") {
		b = []byte(r.param("source"))
	}
	body, err := esjson.ParseSearch(b)
	if err != nil {
		return nil, parsingError(err)
	}
	sq := &searchQuery{body: body}
	req := body.Request
	if n, ok, err := r.intParam("from"); err != nil {
		return nil, err
	} else if ok {
		req.From = int32(min(n, math.MaxInt32))
	}
	if n, ok, err := r.intParam("size"); err != nil {
		return nil, err
	} else if ok {
		req.Size = proto.Int32(int32(min(n, math.MaxInt32)))
	}
	if s := r.param("sort"); s != "" {
		if req.Sort, err = urlSort(s); err != nil {
			return nil, err
		}
	}
	if r.has("track_total_hits") {
		switch v := r.param("track_total_hits"); v {
		case "", "true":
			req.TrackTotalHits, body.NoTotal = -1, false
		case "false":
			req.TrackTotalHits, body.NoTotal = 0, true
		default:
			n, err := strconv.ParseInt(v, 10, 32)
			if err != nil || n < 0 {
				return nil, badRequest("[track_total_hits] must be true, false or a count, got [%s]", v)
			}
			req.TrackTotalHits, body.NoTotal = int32(n), n == 0
		}
	}
	if d, ok, err := r.durationParam("timeout"); err != nil {
		return nil, err
	} else if ok {
		req.Timeout = durationpb.New(d)
	}
	if err := readSourceParams(r, body); err != nil {
		return nil, err
	}
	if r.has("docvalue_fields") {
		req.DocvalueFields = splitNames(r.param("docvalue_fields"))
		for _, f := range req.DocvalueFields {
			if strings.ContainsAny(f, "*?") {
				return nil, badRequest("docvalue_fields [%s]: wildcards are not supported by Sluice: name each field", f)
			}
		}
	}
	if sq.versions, err = r.boolParam("seq_no_primary_term", body.SeqNoPrimaryTerm); err != nil {
		return nil, err
	}
	if sq.versions {
		for _, f := range []string{"_seq_no", "_primary_term"} {
			if !slices.Contains(req.DocvalueFields, f) {
				req.DocvalueFields = append(req.DocvalueFields, f)
				sq.hidden = append(sq.hidden, f)
			}
		}
	}
	if sq.totalAsInt, err = r.boolParam("rest_total_hits_as_int", false); err != nil {
		return nil, err
	}
	switch st := r.param("search_type"); st {
	case "", "query_then_fetch":
	default:
		return nil, badRequest("search_type [%s] is not supported by Sluice (query_then_fetch is)", st)
	}
	if partial, err := r.boolParam("allow_partial_search_results", true); err != nil {
		return nil, err
	} else if !partial {
		return nil, badRequest("allow_partial_search_results=false is not supported by Sluice: a search reports failed shards in _shards and fails only when every shard failed")
	}
	if rt := r.param("routing"); rt != "" {
		if strings.Contains(rt, ",") {
			return nil, badRequest("routing [%s]: Sluice routes a search by one value", rt)
		}
		req.Routing = rt
	}
	if sq.filter, err = newSourceFilter(body.SourceIncludes, body.SourceExcludes); err != nil {
		return nil, err
	}
	expr := r.PathValue("index")
	if req.GetPit() != nil {
		if expr != "" {
			return nil, validationError("[indices] cannot be used with point in time. Do not specify any index with point in time.")
		}
		return sq, nil
	}
	names, all, err := a.resolve(r.Context(), expr)
	if err != nil {
		return nil, err
	}
	sq.indices, sq.none = names, !all && len(names) == 0
	req.Indices = names
	return sq, nil
}

// readSourceParams applies _source, _source_includes and _source_excludes.
func readSourceParams(r *request, body *esjson.Search) error {
	if r.has("_source") {
		switch v := r.param("_source"); v {
		case "", "true":
			body.Request.FetchSource = nil
		case "false":
			body.Request.FetchSource = proto.Bool(false)
		default:
			body.SourceIncludes = splitNames(v)
		}
	}
	if v := r.param("_source_includes"); v != "" {
		body.SourceIncludes = splitNames(v)
	}
	if v := r.param("_source_excludes"); v != "" {
		body.SourceExcludes = splitNames(v)
	}
	return nil
}

// urlSort reads the sort URL parameter: "field", "field:asc", comma
// separated.
func urlSort(s string) ([]*sluicev1.SortField, error) {
	var keys []any
	for _, k := range splitNames(s) {
		field, order, ok := strings.Cut(k, ":")
		if ok {
			keys = append(keys, map[string]string{field: order})
		} else {
			keys = append(keys, field)
		}
	}
	b, _ := json.Marshal(keys)
	sort, err := esjson.ParseSort(b)
	if err != nil {
		return nil, badRequest("sort [%s]: %v", s, err)
	}
	return sort, nil
}

func (a *API) search(r *request) (int, any, error) {
	sq, err := a.readSearch(r)
	if err != nil {
		return 0, nil, err
	}
	if r.has("scroll") {
		return a.startScroll(r, sq)
	}
	if sq.body.Slice != nil {
		return 0, nil, badRequest("[slice] goes with a scroll (scroll=) in Sluice: a search of a point-in-time reads every slice")
	}
	if sq.none {
		return http.StatusOK, a.searchResponse(sq, &sluicev1.SearchResponse{Total: &sluicev1.TotalHits{Relation: sluicev1.TotalHitsRelation_TOTAL_HITS_RELATION_EQ}, Shards: &sluicev1.ShardsSummary{}}, ""), nil
	}
	resp, err := a.c.Search(r.Context(), sq.body.Request)
	if err != nil {
		k := kindIndex
		if sq.body.Request.GetPit() != nil {
			k = kindContext
		}
		return 0, nil, fromStatus(err, k, strings.Join(sq.indices, ","))
	}
	return http.StatusOK, a.searchResponse(sq, resp, ""), nil
}

// searchResponse writes Elasticsearch's search response; sources pass
// through as the JSON they are (filtered when _source asks for fields).
func (a *API) searchResponse(sq *searchQuery, resp *sluicev1.SearchResponse, scrollID string) []byte {
	scored := len(sq.body.Request.GetSort()) == 0
	for _, s := range sq.body.Request.GetSort() {
		scored = scored || s.GetField() == "_score"
	}
	b := make([]byte, 0, 256+len(resp.GetHits())*512)
	b = append(b, `{`...)
	if scrollID != "" {
		b = append(b, `"_scroll_id":`...)
		b = appendString(b, scrollID)
		b = append(b, ',')
	}
	if id := resp.GetPitId(); id != "" {
		b = append(b, `"pit_id":`...)
		b = appendString(b, id)
		b = append(b, ',')
	}
	b = append(b, `"took":`...)
	b = strconv.AppendInt(b, resp.GetTook().AsDuration().Milliseconds(), 10)
	b = append(b, `,"timed_out":`...)
	b = strconv.AppendBool(b, resp.GetTimedOut())
	sh, _ := json.Marshal(shardsJSON(resp.GetShards()))
	b = append(b, `,"_shards":`...)
	b = append(b, sh...)
	b = append(b, `,"hits":{`...)
	if !sq.body.NoTotal {
		b = append(b, `"total":`...)
		b = appendTotal(b, resp.GetTotal(), sq.totalAsInt)
		b = append(b, ',')
	}
	b = append(b, `"max_score":`...)
	if scored && len(resp.GetHits()) > 0 {
		b = appendFloat(b, resp.GetMaxScore())
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"hits":[`...)
	for i, h := range resp.GetHits() {
		if i > 0 {
			b = append(b, ',')
		}
		b = a.appendHit(b, sq, h, scored)
	}
	return append(b, "]}}"...)
}

func appendTotal(b []byte, t *sluicev1.TotalHits, asInt bool) []byte {
	if asInt {
		return strconv.AppendInt(b, t.GetValue(), 10)
	}
	b = append(b, `{"value":`...)
	b = strconv.AppendInt(b, t.GetValue(), 10)
	if t.GetRelation() == sluicev1.TotalHitsRelation_TOTAL_HITS_RELATION_GTE {
		return append(b, `,"relation":"gte"}`...)
	}
	return append(b, `,"relation":"eq"}`...)
}

func appendFloat(b []byte, f float32) []byte {
	if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
		return append(b, "null"...)
	}
	return strconv.AppendFloat(b, float64(f), 'g', -1, 32)
}

// appendHit writes one hit. A hit's sort values or docvalue_fields that
// cannot be written (a keyword that is not UTF-8) are left out, with the
// reason logged.
func (a *API) appendHit(b []byte, sq *searchQuery, h *sluicev1.Hit, scored bool) []byte {
	index, id, routing, source, score, sort := h.GetIndex(), h.GetId(), h.GetRouting(), h.GetSource(), h.GetScore(), h.GetSort()
	b = append(b, `{"_index":`...)
	b = appendString(b, index)
	b = append(b, `,"_id":`...)
	b = appendString(b, id)
	b = append(b, `,"_score":`...)
	if scored {
		b = appendFloat(b, score)
	} else {
		b = append(b, "null"...)
	}
	if routing != "" {
		b = append(b, `,"_routing":`...)
		b = appendString(b, routing)
	}
	if sq.versions {
		// A document of a segment written before versions were stored
		// has none: left out, as a get leaves them out.
		seq, ok1 := h.GetFields()["_seq_no"]
		term, ok2 := h.GetFields()["_primary_term"]
		if ok1 && ok2 {
			b = append(b, `,"_seq_no":`...)
			b = strconv.AppendInt(b, seq.GetLongValue(), 10)
			b = append(b, `,"_primary_term":`...)
			b = strconv.AppendInt(b, term.GetLongValue(), 10)
		}
	}
	if source != nil {
		b = append(b, `,"_source":`...)
		b = sq.filter.append(b, source)
	}
	if len(sort) > 0 {
		sv, err := esjson.MarshalSortValues(sort)
		if err != nil {
			a.log.Warn("esapi: a hit's sort values have no JSON form", "index", index, "id", id, "err", err)
		} else {
			b = append(b, `,"sort":`...)
			b = append(b, sv...)
		}
	}
	if len(h.GetFields()) > 0 {
		b = a.appendFields(b, h, sq.hidden)
	}
	return append(b, '}')
}

// appendFields writes a hit's docvalue_fields as Elasticsearch's "fields":
// each a list of its values (one: a column holds one per document), by
// name.
func (a *API) appendFields(b []byte, h *sluicev1.Hit, hidden []string) []byte {
	names := make([]string, 0, len(h.GetFields()))
	for n := range h.GetFields() {
		if !slices.Contains(hidden, n) {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return b
	}
	slices.Sort(names)
	b = append(b, `,"fields":{`...)
	first := true
	for _, n := range names {
		v, err := esjson.MarshalSortValues([]*sluicev1.SortValue{h.GetFields()[n]})
		if err != nil {
			a.log.Warn("esapi: a docvalue field has no JSON form", "index", h.GetIndex(), "id", h.GetId(), "field", n, "err", err)
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = appendString(b, n)
		b = append(b, ':')
		b = append(b, v...)
	}
	return append(b, '}')
}

func (a *API) count(r *request) (int, any, error) {
	if r.has("q") {
		return 0, nil, badRequest("[q] (Lucene query string syntax) is not supported by Sluice: send the query DSL in the body")
	}
	b, err := r.body()
	if err != nil {
		return 0, nil, err
	}
	q, err := esjson.ParseCount(b)
	if err != nil {
		return 0, nil, parsingError(err)
	}
	names, all, err := a.resolve(r.Context(), r.PathValue("index"))
	if err != nil {
		return 0, nil, err
	}
	if !all && len(names) == 0 {
		return http.StatusOK, map[string]any{"count": 0, "_shards": shardsJSON(&sluicev1.ShardsSummary{})}, nil
	}
	resp, err := a.c.Search(r.Context(), &sluicev1.SearchRequest{Indices: names, Query: q, Size: proto.Int32(0), TrackTotalHits: -1, Routing: r.param("routing")})
	if err != nil {
		return 0, nil, fromStatus(err, kindIndex, r.PathValue("index"))
	}
	return http.StatusOK, map[string]any{"count": resp.GetTotal().GetValue(), "_shards": shardsJSON(resp.GetShards())}, nil
}

func (a *API) openPIT(r *request) (int, any, error) {
	keepAlive, ok, err := r.durationParam("keep_alive")
	if err != nil {
		return 0, nil, err
	}
	if !ok {
		return 0, nil, validationError("[keep_alive] is not specified")
	}
	if r.has("routing") {
		return 0, nil, badRequest("routing is not supported on a point-in-time by Sluice: it pins every shard")
	}
	names, all, err := a.resolve(r.Context(), r.PathValue("index"))
	if err != nil {
		return 0, nil, err
	}
	if !all && len(names) == 0 {
		return 0, nil, notFoundIndex(r.PathValue("index"))
	}
	resp, err := a.c.OpenPointInTime(r.Context(), &sluicev1.OpenPointInTimeRequest{Indices: names, KeepAlive: durationpb.New(keepAlive)})
	if err != nil {
		return 0, nil, fromStatus(err, kindIndex, r.PathValue("index"))
	}
	return http.StatusOK, map[string]any{"id": resp.GetId(), "_shards": shardsJSON(resp.GetShards())}, nil
}

func (a *API) closePIT(r *request) (int, any, error) {
	b, err := r.body()
	if err != nil {
		return 0, nil, err
	}
	var body struct {
		ID string `json:"id"`
	}
	if err := decodeStrict(b, &body, "close point-in-time body"); err != nil {
		return 0, nil, err
	}
	if body.ID == "" {
		return 0, nil, validationError("id is required")
	}
	resp, err := a.c.ClosePointInTime(r.Context(), &sluicev1.ClosePointInTimeRequest{Id: body.ID})
	if err != nil {
		return 0, nil, fromStatus(err, kindContext, "")
	}
	return freed(resp.GetSucceeded())
}

// freed is the answer of closing a point-in-time or a scroll: 404 when
// nothing was open, as Elasticsearch answers.
func freed(ok bool) (int, any, error) {
	if ok {
		return http.StatusOK, map[string]any{"succeeded": true, "num_freed": 1}, nil
	}
	return http.StatusNotFound, map[string]any{"succeeded": true, "num_freed": 0}, nil
}
