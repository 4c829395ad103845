package esapi

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/sluice-search/sluice/esjson"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// An Elasticsearch scroll is a series of requests; Sluice's Scroll is one
// resumable stream. The HTTP API opens a point-in-time with the scroll's
// keep-alive and makes each page one batch of a Scroll of it. The scroll
// id is the ScrollRequest of the next page — PIT, query, slice, batch size
// and the cursor of the batch just returned — so any coordinator can serve
// the next page by resuming the stream at the cursor. This coordinator
// keeps the stream it served a page from open (for the keep-alive, at most
// maxLiveScrolls of them), so the next page here reads on instead of
// reopening every remaining shard's scan. The PIT is closed once the last
// page is served, or by a clear scroll.

// scrollState is what a scroll id carries.
type scrollState struct {
	req *sluicev1.ScrollRequest
	// shards is the PIT's shard count, for _shards.
	shards int32
	// includes, excludes and totalAsInt repeat the first request's
	// _source filter and rest_total_hits_as_int.
	Includes   []string `json:"i,omitempty"`
	Excludes   []string `json:"e,omitempty"`
	TotalAsInt bool     `json:"n,omitempty"`
}

const scrollIDVersion = 1

func (s *scrollState) encode() string {
	pb, _ := proto.Marshal(s.req) // a valid message always marshals
	extra, _ := json.Marshal(s)
	b := []byte{scrollIDVersion}
	b = binary.AppendUvarint(b, uint64(s.shards))
	b = binary.AppendUvarint(b, uint64(len(pb)))
	b = append(b, pb...)
	b = append(b, extra...)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeScrollID(id string) (*scrollState, error) {
	bad := &esError{status: http.StatusBadRequest, typ: "illegal_argument_exception", reason: "Cannot parse scroll id"}
	b, err := base64.RawURLEncoding.DecodeString(id)
	if err != nil || len(b) < 1 || b[0] != scrollIDVersion {
		return nil, bad
	}
	b = b[1:]
	shards, n := binary.Uvarint(b)
	if n <= 0 {
		return nil, bad
	}
	b = b[n:]
	l, n := binary.Uvarint(b)
	if n <= 0 || l > uint64(len(b)-n) {
		return nil, bad
	}
	s := &scrollState{req: &sluicev1.ScrollRequest{}, shards: int32(shards)}
	if err := proto.Unmarshal(b[n:n+int(l)], s.req); err != nil || s.req.GetPit().GetId() == "" {
		return nil, bad
	}
	if err := json.Unmarshal(b[n+int(l):], s); err != nil {
		return nil, bad
	}
	return s, nil
}

// startScroll serves a search with scroll=: it opens the PIT and returns
// the first page.
func (a *API) startScroll(r *request, sq *searchQuery) (int, any, error) {
	keepAlive, _, err := r.durationParam("scroll")
	if err != nil {
		return 0, nil, err
	}
	req := sq.body.Request
	for _, s := range req.GetSort() {
		if s.GetField() != "_doc" {
			return 0, nil, badRequest("a scroll in Sluice reads documents in index order: sort by _doc or not at all (to page in another order, search a point-in-time with search_after)")
		}
	}
	switch {
	case req.GetFrom() > 0:
		return 0, nil, validationError("using [from] is not allowed in a scroll context")
	case req.GetSearchAfter() != nil:
		return 0, nil, validationError("[search_after] cannot be used in a scroll context")
	case req.GetPit() != nil:
		return 0, nil, validationError("using [point in time] is not allowed in a scroll context")
	case sq.versions:
		return 0, nil, badRequest("seq_no_primary_term is not supported in a scroll by Sluice: search a point-in-time with search_after to read them")
	case len(req.GetDocvalueFields()) > 0:
		return 0, nil, badRequest("docvalue_fields is not supported in a scroll by Sluice: search a point-in-time with search_after to read them")
	case req.GetRouting() != "":
		return 0, nil, badRequest("routing is not supported on a scroll by Sluice: it reads every shard")
	case keepAlive <= 0:
		return 0, nil, badRequest("scroll [%s]: a keep-alive such as 1m is required", r.param("scroll"))
	}
	size := int32(10)
	if req.Size != nil {
		size = req.GetSize()
	}
	if size <= 0 {
		return 0, nil, badRequest("[size] must be positive in a scroll context")
	}
	if sq.none {
		resp := &sluicev1.SearchResponse{Total: &sluicev1.TotalHits{Relation: sluicev1.TotalHitsRelation_TOTAL_HITS_RELATION_EQ}, Shards: &sluicev1.ShardsSummary{}}
		return http.StatusOK, a.searchResponse(sq, resp, ""), nil
	}
	pit, err := a.c.OpenPointInTime(r.Context(), &sluicev1.OpenPointInTimeRequest{Indices: sq.indices, KeepAlive: durationpb.New(keepAlive)})
	if err != nil {
		return 0, nil, fromStatus(err, kindIndex, r.PathValue("index"))
	}
	st := &scrollState{
		req: &sluicev1.ScrollRequest{Pit: &sluicev1.PointInTime{Id: pit.GetId(), KeepAlive: durationpb.New(keepAlive)},
			Query: req.GetQuery(), Slice: sq.body.Slice, BatchSize: size, FetchSource: req.FetchSource},
		shards: pit.GetShards().GetTotal(), Includes: sq.body.SourceIncludes, Excludes: sq.body.SourceExcludes, TotalAsInt: sq.totalAsInt,
	}
	return a.scrollPage(r.Context(), st, keepAlive)
}

// scroll serves POST /_search/scroll: the next page.
func (a *API) scroll(r *request) (int, any, error) {
	b, err := r.body()
	if err != nil {
		return 0, nil, err
	}
	var body struct {
		ScrollID string `json:"scroll_id"`
		Scroll   string `json:"scroll"`
		// rest_total_hits_as_int may come in the body of old clients.
		TotalAsInt *bool `json:"rest_total_hits_as_int"`
	}
	if len(b) > 0 {
		if err := decodeStrict(b, &body, "scroll body"); err != nil {
			return 0, nil, err
		}
	}
	if id := r.param("scroll_id"); id != "" {
		body.ScrollID = id
	}
	if s := r.param("scroll"); s != "" {
		body.Scroll = s
	}
	if body.ScrollID == "" {
		return 0, nil, validationError("scrollId is missing")
	}
	st, err := decodeScrollID(body.ScrollID)
	if err != nil {
		return 0, nil, err
	}
	keepAlive := st.req.GetPit().GetKeepAlive().AsDuration()
	if body.Scroll != "" {
		if keepAlive, err = parseTime(body.Scroll); err != nil {
			return 0, nil, badRequest("scroll [%s]: %v", body.Scroll, err)
		}
		st.req.Pit.KeepAlive = durationpb.New(keepAlive)
	}
	if asInt, err := r.boolParam("rest_total_hits_as_int", st.TotalAsInt); err != nil {
		return 0, nil, err
	} else {
		st.TotalAsInt = asInt
	}
	return a.scrollPage(r.Context(), st, keepAlive)
}

// scrollPage reads the next batch of the scroll st and answers it as a
// search response with the scroll id of the page after.
func (a *API) scrollPage(ctx context.Context, st *scrollState, keepAlive time.Duration) (int, any, error) {
	start := time.Now()
	batch, err := a.scrolls.next(ctx, st.req, keepAlive)
	if err != nil {
		return 0, nil, fromStatus(err, kindContext, "")
	}
	sq := &searchQuery{body: &esjson.Search{Request: &sluicev1.SearchRequest{Sort: []*sluicev1.SortField{{Field: "_doc"}}}}, totalAsInt: st.TotalAsInt}
	sq.filter, _ = newSourceFilter(st.Includes, st.Excludes)
	resp := &sluicev1.SearchResponse{
		Total:  &sluicev1.TotalHits{Value: batch.GetTotal(), Relation: sluicev1.TotalHitsRelation_TOTAL_HITS_RELATION_EQ},
		Shards: &sluicev1.ShardsSummary{Total: st.shards, Successful: st.shards},
	}
	for _, d := range batch.GetDocs() {
		resp.Hits = append(resp.Hits, &sluicev1.Hit{Index: d.GetIndex(), Id: d.GetId(), Source: d.GetSource(), Routing: d.GetRouting()})
	}
	if len(batch.GetDocs()) == 0 {
		// The end: the PIT has served its purpose. A clear scroll
		// that follows finds nothing to free, as it may.
		a.scrolls.closePIT(ctx, st.req.GetPit().GetId())
	}
	next := &scrollState{req: proto.Clone(st.req).(*sluicev1.ScrollRequest), shards: st.shards,
		Includes: st.Includes, Excludes: st.Excludes, TotalAsInt: st.TotalAsInt}
	if len(batch.GetCursor()) > 0 {
		next.req.Cursor = batch.GetCursor()
	}
	resp.Took = durationpb.New(time.Since(start))
	return http.StatusOK, a.searchResponse(sq, resp, next.encode()), nil
}

// clearScroll serves DELETE /_search/scroll: it closes the scrolls' PITs.
func (a *API) clearScroll(r *request) (int, any, error) {
	b, err := r.body()
	if err != nil {
		return 0, nil, err
	}
	var ids []string
	if len(b) > 0 {
		var body struct {
			ScrollID json.RawMessage `json:"scroll_id"`
		}
		if err := decodeStrict(b, &body, "clear scroll body"); err != nil {
			return 0, nil, err
		}
		var one string
		if json.Unmarshal(body.ScrollID, &one) == nil {
			ids = []string{one}
		} else if err := json.Unmarshal(body.ScrollID, &ids); err != nil {
			return 0, nil, &esError{status: http.StatusBadRequest, typ: "parsing_exception", reason: "scroll_id must be a string or an array of strings"}
		}
	}
	ids = append(ids, splitNames(r.param("scroll_id"))...)
	if len(ids) == 0 {
		return 0, nil, validationError("no scroll ids specified")
	}
	n := 0
	for _, id := range ids {
		if id == "_all" {
			return 0, nil, badRequest("clearing _all scrolls is not supported by Sluice: name the scroll ids")
		}
		st, err := decodeScrollID(id)
		if err != nil {
			return 0, nil, err
		}
		pit := st.req.GetPit().GetId()
		a.scrolls.drop(callerOf(r.Context()), pit)
		resp, err := a.c.ClosePointInTime(r.Context(), &sluicev1.ClosePointInTimeRequest{Id: pit})
		if err != nil {
			return 0, nil, fromStatus(err, kindContext, "")
		}
		if resp.GetSucceeded() {
			n++
		}
	}
	if n == 0 {
		return http.StatusNotFound, map[string]any{"succeeded": true, "num_freed": 0}, nil
	}
	return http.StatusOK, map[string]any{"succeeded": true, "num_freed": n}, nil
}

// maxLiveScrolls bounds the Scroll streams kept open between pages; past
// it a page's stream is closed and the next page resumes at its cursor.
const maxLiveScrolls = 256

// scrolls keeps the Scroll streams of this coordinator's scrolls open
// between pages, keyed by the cursor their next page starts at.
type scrolls struct {
	a      *API
	mu     sync.Mutex
	live   map[string]*liveScroll
	closed bool
}

type liveScroll struct {
	owner  string // the caller it was opened for (principal)
	pit    string
	stream grpc.ServerStreamingClient[sluicev1.ScrollResponse]
	cancel context.CancelFunc
	timer  *time.Timer
}

func newScrolls(a *API) *scrolls { return &scrolls{a: a, live: map[string]*liveScroll{}} }

// liveKey keys a stream by its caller as well: in a secured cluster a
// stream carries the credentials it was opened with, so another caller
// holding the scroll id must open its own, which the guard refuses (the
// PIT is bound to its creator).
func liveKey(owner, pit string, cursor []byte) string {
	return owner + "\x00" + pit + "\x00" + string(cursor)
}

// next returns the batch after req's cursor: from the stream left open
// at that cursor, or a new stream resumed there.
func (s *scrolls) next(ctx context.Context, req *sluicev1.ScrollRequest, keepAlive time.Duration) (*sluicev1.ScrollResponse, error) {
	pit, owner := req.GetPit().GetId(), callerOf(ctx)
	s.mu.Lock()
	ls := s.live[liveKey(owner, pit, req.GetCursor())]
	if ls != nil {
		delete(s.live, liveKey(owner, pit, req.GetCursor()))
		ls.timer.Stop()
	}
	s.mu.Unlock()
	if ls == nil {
		// The stream outlives this request: its context is its own,
		// ended by the keep-alive timer, the end, or a clear.
		sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		stream, err := s.a.c.Scroll(sctx, req)
		if err != nil {
			cancel()
			return nil, err
		}
		ls = &liveScroll{owner: owner, pit: pit, stream: stream, cancel: cancel}
	}
	batch, err := ls.stream.Recv()
	if errors.Is(err, io.EOF) {
		ls.cancel()
		return &sluicev1.ScrollResponse{Cursor: req.GetCursor()}, nil
	}
	if err != nil {
		ls.cancel()
		return nil, err
	}
	if len(batch.GetDocs()) == 0 {
		ls.cancel()
		return batch, nil
	}
	s.keep(ls, liveKey(owner, pit, batch.GetCursor()), keepAlive)
	return batch, nil
}

// keep holds a stream open for its next page, for at most keepAlive.
func (s *scrolls) keep(ls *liveScroll, key string, keepAlive time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || len(s.live) >= maxLiveScrolls {
		ls.cancel()
		return
	}
	if old := s.live[key]; old != nil {
		old.timer.Stop()
		old.cancel()
	}
	s.live[key] = ls
	ls.timer = time.AfterFunc(keepAlive, func() {
		s.mu.Lock()
		if s.live[key] == ls {
			delete(s.live, key)
		}
		s.mu.Unlock()
		ls.cancel()
	})
}

// drop ends the open streams of a PIT that owner opened.
func (s *scrolls) drop(owner, pit string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, ls := range s.live {
		if ls.pit == pit && ls.owner == owner {
			ls.timer.Stop()
			ls.cancel()
			delete(s.live, k)
		}
	}
}

// closePIT releases a finished scroll's PIT in the background, with the
// credentials of ctx's caller.
func (s *scrolls) closePIT(ctx context.Context, pit string) {
	s.drop(callerOf(ctx), pit)
	go func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_, _ = s.a.c.ClosePointInTime(ctx, &sluicev1.ClosePointInTimeRequest{Id: pit})
	}()
}

// close ends every open stream.
func (s *scrolls) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for k, ls := range s.live {
		ls.timer.Stop()
		ls.cancel()
		delete(s.live, k)
	}
}
