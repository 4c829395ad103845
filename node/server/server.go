package server

import (
	"context"
	"fmt"
	"hash/maphash"
	"log/slog"
	"math"
	"runtime"
	"sync"
	"time"

	"google.golang.org/grpc"

	"github.com/sluice-search/sluice/node/engine"
	"github.com/sluice-search/sluice/node/engine/search"
	"github.com/sluice-search/sluice/node/shard"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
	"github.com/sluice-search/sluice/querydsl"
)

// Options configure a Server.
type Options struct {
	// MaxOpenReaders caps pinned readers on the node (default 500).
	MaxOpenReaders int
	// SearchKeepAlive is how long a reader pinned by a ShardSearch for its
	// fetch phase lives without use (default 1 minute).
	SearchKeepAlive time.Duration
	// ReapInterval is how often expired readers are released (default 1 s).
	ReapInterval time.Duration
	// BulkParallelism: goroutines applying one ShardBulk (items are split
	// by id, so operations on one id keep their order). Default GOMAXPROCS.
	BulkParallelism int
	Logger          *slog.Logger
}

// SetDefaults fills zero fields.
func (o *Options) SetDefaults() {
	if o.MaxOpenReaders <= 0 {
		o.MaxOpenReaders = 500
	}
	if o.SearchKeepAlive <= 0 {
		o.SearchKeepAlive = time.Minute
	}
	if o.ReapInterval <= 0 {
		o.ReapInterval = time.Second
	}
	if o.BulkParallelism <= 0 {
		o.BulkParallelism = runtime.GOMAXPROCS(0)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// Server implements sluicev1.NodeServer over a shard.Host.
type Server struct {
	sluicev1.UnimplementedNodeServer
	host    *shard.Host
	opts    Options
	readers *registry
	seed    maphash.Seed
}

var _ sluicev1.NodeServer = (*Server)(nil)

// New returns a Server; Close it to release pinned readers.
func New(host *shard.Host, opts Options) *Server {
	opts.SetDefaults()
	s := &Server{host: host, opts: opts, readers: newRegistry(opts.MaxOpenReaders, opts.ReapInterval), seed: maphash.MakeSeed()}
	// Release a closing shard's pinned readers while its files exist.
	host.OnClose(func(sh *shard.Shard) { s.readers.reap(time.Now(), sh) })
	return s
}

// Register adds the Node service to a gRPC server.
func (s *Server) Register(g grpc.ServiceRegistrar) { sluicev1.RegisterNodeServer(g, s) }

// Close releases every pinned reader (call before closing the host).
func (s *Server) Close() { s.readers.shutdown() }

// OpenReaders is the number of pinned readers.
func (s *Server) OpenReaders() int { return s.readers.count() }

func (s *Server) shard(id *sluicev1.ShardID) (*shard.Shard, error) {
	if id == nil {
		return nil, fmt.Errorf("%w: shard is required", errBadRequest)
	}
	return s.host.Get(shard.ID{IndexUUID: id.GetIndexUuid(), Shard: int(id.GetShard())})
}

// ShardBulk applies a shard's share of a bulk request.
func (s *Server) ShardBulk(ctx context.Context, req *sluicev1.ShardBulkRequest) (*sluicev1.ShardBulkResponse, error) {
	sh, err := s.shard(req.GetShard())
	if err != nil {
		return nil, toStatus(err)
	}
	items := req.GetItems()
	results := make([]*sluicev1.BulkItemResult, len(items))
	// One translog fsync covers the whole request (engine.Bulk): items
	// are acknowledged only after it.
	b := sh.Engine().NewBulk()
	par := min(s.opts.BulkParallelism, len(items))
	if par <= 1 {
		s.applyItems(ctx, sh, b, req, results, nil, 0)
	} else {
		// Partition by id so one id's operations apply in request order.
		parts := make([]uint8, len(items))
		for i, it := range items {
			parts[i] = uint8(maphash.String(s.seed, it.GetId()) % uint64(par))
		}
		var wg sync.WaitGroup
		for p := range par {
			wg.Go(func() { s.applyItems(ctx, sh, b, req, results, parts, uint8(p)) })
		}
		wg.Wait()
	}
	if err := b.Sync(ctx); err != nil {
		// Applied but not durable: nothing may be acknowledged.
		return nil, toStatus(fmt.Errorf("shard %v: bulk not durable: %w", sh.ID(), err))
	}
	var maxSeq int64 = -1
	for _, r := range results {
		if r.Status != sluicev1.BulkItemStatus_BULK_ITEM_STATUS_ERROR {
			maxSeq = max(maxSeq, r.SeqNo)
		}
	}
	if maxSeq >= 0 {
		switch req.GetRefresh() {
		case sluicev1.RefreshPolicy_REFRESH_POLICY_IMMEDIATE:
			_, err = sh.Engine().Refresh(ctx)
		case sluicev1.RefreshPolicy_REFRESH_POLICY_WAIT_FOR:
			err = sh.Engine().WaitForGeneration(ctx, maxSeq)
		}
		if err != nil {
			// The writes are applied; only visibility is unconfirmed.
			return nil, toStatus(fmt.Errorf("shard %v: refresh after bulk: %w", sh.ID(), err))
		}
	}
	return &sluicev1.ShardBulkResponse{Items: results}, nil
}

// applyItems applies the items of partition p (all when parts is nil).
func (s *Server) applyItems(ctx context.Context, sh *shard.Shard, b *engine.Bulk, req *sluicev1.ShardBulkRequest, results []*sluicev1.BulkItemResult, parts []uint8, p uint8) {
	ctx = engine.WithAffinity(ctx) // the items fill one DWPT
	for i, it := range req.GetItems() {
		if parts != nil && parts[i] != p {
			continue
		}
		r := &sluicev1.BulkItemResult{Action: it.GetAction(), Index: req.GetIndex(), Id: it.GetId(), Shard: req.GetShard().GetShard()}
		results[i] = r
		res, err := applyItem(ctx, sh, b, it)
		if err != nil {
			r.Status, r.Error = sluicev1.BulkItemStatus_BULK_ITEM_STATUS_ERROR, detail(err)
			continue
		}
		r.SeqNo = res.SeqNo
		switch {
		case it.GetAction() == sluicev1.BulkAction_BULK_ACTION_DELETE && res.Found:
			r.Status = sluicev1.BulkItemStatus_BULK_ITEM_STATUS_DELETED
		case it.GetAction() == sluicev1.BulkAction_BULK_ACTION_DELETE:
			r.Status = sluicev1.BulkItemStatus_BULK_ITEM_STATUS_NOT_FOUND
		case res.Created:
			r.Status = sluicev1.BulkItemStatus_BULK_ITEM_STATUS_CREATED
		default:
			r.Status = sluicev1.BulkItemStatus_BULK_ITEM_STATUS_UPDATED
		}
	}
}

func applyItem(ctx context.Context, sh *shard.Shard, b *engine.Bulk, it *sluicev1.BulkItem) (engine.Result, error) {
	if it.GetId() == "" {
		return engine.Result{}, fmt.Errorf("%w: item has no id", errBadRequest)
	}
	switch it.GetAction() {
	case sluicev1.BulkAction_BULK_ACTION_INDEX, sluicev1.BulkAction_BULK_ACTION_CREATE:
		if len(it.GetSource()) == 0 {
			return engine.Result{}, fmt.Errorf("%w: %v of %q has no source", errBadRequest, it.GetAction(), it.GetId())
		}
		return sh.IndexDocVia(ctx, b, []byte(it.GetId()), []byte(it.GetRouting()), it.GetSource(), it.GetAction() == sluicev1.BulkAction_BULK_ACTION_CREATE)
	case sluicev1.BulkAction_BULK_ACTION_DELETE:
		return sh.DeleteDocVia(ctx, b, []byte(it.GetId()))
	}
	return engine.Result{}, fmt.Errorf("%w: unknown bulk action %v", errBadRequest, it.GetAction())
}

// ShardGet reads a document by id.
func (s *Server) ShardGet(ctx context.Context, req *sluicev1.ShardGetRequest) (*sluicev1.ShardGetResponse, error) {
	sh, err := s.shard(req.GetShard())
	if err != nil {
		return nil, toStatus(err)
	}
	doc, found, err := sh.Engine().GetDocument(ctx, []byte(req.GetId()), engine.GetOptions{Realtime: req.GetRefresh()})
	if err != nil {
		return nil, toStatus(err)
	}
	return &sluicev1.ShardGetResponse{Found: found, Source: doc.Source, Routing: string(doc.Routing)}, nil
}

// ShardRefresh refreshes a shard.
func (s *Server) ShardRefresh(ctx context.Context, req *sluicev1.ShardRefreshRequest) (*sluicev1.ShardRefreshResponse, error) {
	sh, err := s.shard(req.GetShard())
	if err != nil {
		return nil, toStatus(err)
	}
	if _, err := sh.Engine().Refresh(ctx); err != nil {
		return nil, toStatus(err)
	}
	return &sluicev1.ShardRefreshResponse{}, nil
}

// ShardStats reports a shard's counters.
func (s *Server) ShardStats(ctx context.Context, req *sluicev1.ShardStatsRequest) (*sluicev1.ShardStatsResponse, error) {
	sh, err := s.shard(req.GetShard())
	if err != nil {
		return nil, toStatus(err)
	}
	st := sh.Engine().Stats()
	resp := &sluicev1.ShardStatsResponse{NumDocs: int64(st.NumDocs), DeletedDocs: int64(st.DeletedDocs),
		Segments: int32(st.Segments), StoreSizeBytes: st.SegmentBytes, MaxSeqNo: st.SeqNo, DurableSeqNo: -1}
	if c := sh.Engine().Writer().LastCommit(); c != nil {
		resp.DurableSeqNo = c.SeqNo
	}
	return resp, nil
}

// OpenShardReader pins the shard's latest reader.
func (s *Server) OpenShardReader(ctx context.Context, req *sluicev1.OpenShardReaderRequest) (*sluicev1.OpenShardReaderResponse, error) {
	sh, err := s.shard(req.GetShard())
	if err != nil {
		return nil, toStatus(err)
	}
	ka := req.GetKeepAlive().AsDuration()
	if ka <= 0 {
		return nil, toStatus(fmt.Errorf("%w: keep_alive must be positive", errBadRequest))
	}
	c, err := s.readers.pin(sh, sh.Engine().Acquire(), ka)
	if err != nil {
		return nil, toStatus(err)
	}
	defer s.readers.done(c)
	return &sluicev1.OpenShardReaderResponse{ReaderId: c.id, NumDocs: int64(c.reader.NumDocs())}, nil
}

// CloseShardReader releases a pinned reader.
func (s *Server) CloseShardReader(ctx context.Context, req *sluicev1.CloseShardReaderRequest) (*sluicev1.CloseShardReaderResponse, error) {
	// The shard may be gone already; the reader id alone identifies it.
	return &sluicev1.CloseShardReaderResponse{Succeeded: s.readers.close(nil, req.GetReaderId())}, nil
}

// ShardSearch runs the query phase.
func (s *Server) ShardSearch(ctx context.Context, req *sluicev1.ShardSearchRequest) (*sluicev1.ShardSearchResponse, error) {
	sh, err := s.shard(req.GetShard())
	if err != nil {
		return nil, toStatus(err)
	}
	var c *readerCtx
	if req.GetReaderId() != 0 {
		c, err = s.readers.use(sh, req.GetReaderId(), req.GetKeepAlive().AsDuration())
	} else {
		c, err = s.readers.pin(sh, sh.Engine().Acquire(), s.opts.SearchKeepAlive)
	}
	if err != nil {
		return nil, toStatus(err)
	}
	defer s.readers.done(c)
	resp, err := s.search(ctx, sh, c, req)
	if err != nil {
		if req.GetReaderId() == 0 {
			s.readers.close(sh, c.id)
		}
		return nil, toStatus(err)
	}
	return resp, nil
}

func (s *Server) search(ctx context.Context, sh *shard.Shard, c *readerCtx, req *sluicev1.ShardSearchRequest) (*sluicev1.ShardSearchResponse, error) {
	m := sh.Mapping()
	q, err := querydsl.Compiler{Mapping: m}.Compile(req.GetQuery())
	if err != nil {
		return nil, err
	}
	sort, err := querydsl.Sort(m, req.GetSort())
	if err != nil {
		return nil, err
	}
	types := querydsl.FieldTypes(m, sort)
	sreq := search.Request{Size: int(req.GetSize()), Sort: sort, SearchAfterDoc: -1}
	switch n := req.GetTrackTotalHits(); {
	case n < 0:
		sreq.TotalHitsThreshold = math.MaxInt
	case n > 0:
		sreq.TotalHitsThreshold = int(n)
	}
	if after := req.GetSearchAfter().GetValues(); len(after) > 0 {
		if len(after) != len(sort) {
			return nil, fmt.Errorf("%w: search_after has %d values for %d sort keys", errBadRequest, len(after), len(sort))
		}
		sreq.SearchAfter = make([]search.SortValue, len(after))
		for i, v := range after {
			if sreq.SearchAfter[i], err = querydsl.SortValueFromProto(sort[i], types[i], v); err != nil {
				return nil, err
			}
		}
	}
	resp := &sluicev1.ShardSearchResponse{ReaderId: c.id}
	sctx := ctx
	if d := req.GetTimeout().AsDuration(); d > 0 {
		var cancel context.CancelFunc
		sctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	td, err := c.searcher.Search(sctx, q, sreq)
	if err != nil {
		if sctx.Err() != nil && ctx.Err() == nil {
			// The shard's own time limit ran out: a partial (empty) result.
			resp.TimedOut = true
			resp.Total = &sluicev1.TotalHits{Relation: sluicev1.TotalHitsRelation_TOTAL_HITS_RELATION_GTE}
			return resp, nil
		}
		return nil, err
	}
	resp.Total = &sluicev1.TotalHits{Value: td.TotalHits, Relation: sluicev1.TotalHitsRelation_TOTAL_HITS_RELATION_EQ}
	if td.Relation == search.RelationGreaterThanOrEqual {
		resp.Total.Relation = sluicev1.TotalHitsRelation_TOTAL_HITS_RELATION_GTE
	}
	resp.Hits = make([]*sluicev1.ShardHit, len(td.Hits))
	for i, h := range td.Hits {
		sh := &sluicev1.ShardHit{Doc: int32(h.Doc)}
		if !math.IsNaN(float64(h.Score)) {
			sh.Score = h.Score
			resp.MaxScore = max(resp.MaxScore, h.Score)
		}
		if len(sort) > 0 {
			sh.Sort = make([]*sluicev1.SortValue, len(sort))
			for j := range sort {
				sh.Sort[j] = querydsl.SortValueToProto(sort[j], types[j], h.SortValues[j])
			}
		}
		resp.Hits[i] = sh
	}
	return resp, nil
}

// ShardFetch reads the winners' ids and sources from the searched reader.
func (s *Server) ShardFetch(ctx context.Context, req *sluicev1.ShardFetchRequest) (*sluicev1.ShardFetchResponse, error) {
	sh, err := s.shard(req.GetShard())
	if err != nil {
		if req.GetRelease() {
			s.readers.close(nil, req.GetReaderId())
		}
		return nil, toStatus(err)
	}
	c, err := s.readers.use(sh, req.GetReaderId(), 0)
	if err != nil {
		return nil, toStatus(err)
	}
	defer func() {
		s.readers.done(c)
		if req.GetRelease() {
			s.readers.close(sh, c.id)
		}
	}()
	resp := &sluicev1.ShardFetchResponse{Docs: make([]*sluicev1.FetchedDoc, len(req.GetDocs()))}
	for i, d := range req.GetDocs() {
		if err := ctx.Err(); err != nil {
			return nil, toStatus(err)
		}
		sd, err := c.document(int(d))
		if err != nil {
			return nil, toStatus(err)
		}
		fd := &sluicev1.FetchedDoc{Doc: d, Id: string(sd.ID), Routing: string(sd.Routing)}
		if req.GetFetchSource() {
			fd.Source = sd.Source
		}
		resp.Docs[i] = fd
	}
	return resp, nil
}
