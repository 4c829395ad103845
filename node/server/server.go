package server

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"google.golang.org/grpc"

	"github.com/sluice-search/sluice/cluster/rpc"
	"github.com/sluice-search/sluice/node/engine"
	"github.com/sluice-search/sluice/node/engine/search"
	"github.com/sluice-search/sluice/node/shard"
	nodev1 "github.com/sluice-search/sluice/proto/sluice/node/v1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
	"github.com/sluice-search/sluice/querydsl"
)

// Options configure a Server.
type Options struct {
	// SearchKeepAlive is how long a reader pinned by a ShardSearch for its
	// fetch phase lives without use (default 1 minute).
	SearchKeepAlive time.Duration
}

// SetDefaults fills zero fields.
func (o *Options) SetDefaults() {
	if o.SearchKeepAlive <= 0 {
		o.SearchKeepAlive = time.Minute
	}
}

// Server implements nodev1.NodeServer over a shard.Host. Its handlers
// return the core's typed errors; the node's server turns them into
// statuses with the node's error table, which also describes the errors of
// single bulk items.
type Server struct {
	nodev1.UnimplementedNodeServer
	host *shard.Host
	errs *rpc.Errors
	opts Options
	// verifying holds the one VerifyShard running.
	verifying chan struct{}
}

var _ nodev1.NodeServer = (*Server)(nil)

// New returns a Server over the node's shards, describing per-item errors
// with errs.
func New(host *shard.Host, errs *rpc.Errors, opts Options) *Server {
	opts.SetDefaults()
	return &Server{host: host, errs: errs, opts: opts, verifying: make(chan struct{}, 1)}
}

// Register adds the Node service to a gRPC server.
func (s *Server) Register(g grpc.ServiceRegistrar) { nodev1.RegisterNodeServer(g, s) }

func (s *Server) shard(id *nodev1.ShardID) (*shard.Shard, error) {
	if id == nil {
		return nil, fmt.Errorf("%w: shard is required", shard.ErrInvalid)
	}
	return s.host.Get(shard.ID{IndexUUID: id.GetIndexUuid(), Shard: int(id.GetShard())})
}

// opKinds are the bulk actions as shard operations.
var opKinds = map[sluicev1.BulkAction]shard.OpKind{
	sluicev1.BulkAction_BULK_ACTION_INDEX:  shard.OpIndex,
	sluicev1.BulkAction_BULK_ACTION_CREATE: shard.OpCreate,
	sluicev1.BulkAction_BULK_ACTION_DELETE: shard.OpDelete,

	sluicev1.BulkAction_BULK_ACTION_UPDATE_DOC_VALUES: shard.OpUpdateDocValues,
	sluicev1.BulkAction_BULK_ACTION_UPDATE:            shard.OpUpdate,
}

// refreshPolicies are the refresh policies as the shard's.
var refreshPolicies = map[sluicev1.RefreshPolicy]shard.Refresh{
	sluicev1.RefreshPolicy_REFRESH_POLICY_IMMEDIATE: shard.RefreshImmediate,
	sluicev1.RefreshPolicy_REFRESH_POLICY_WAIT_FOR:  shard.RefreshWaitFor,
}

// ShardBulk applies a shard's share of a bulk request (shard.Bulk).
func (s *Server) ShardBulk(ctx context.Context, req *nodev1.ShardBulkRequest) (*nodev1.ShardBulkResponse, error) {
	sh, err := s.shard(req.GetShard())
	if err != nil {
		return nil, err
	}
	items := req.GetItems()
	ops := make([]shard.Op, len(items))
	for i, it := range items {
		ops[i] = shard.Op{Kind: opKinds[it.GetAction()], ID: []byte(it.GetId()), Routing: []byte(it.GetRouting()), Source: it.GetSource(),
			Upsert: it.GetUpsert(), DocAsUpsert: it.GetDocAsUpsert(), RetryOnConflict: int(it.GetRetryOnConflict())}
		if it.IfSeqNo != nil || it.IfPrimaryTerm != nil { // the coordinator checked both are set
			ops[i].If = &engine.DocVersion{SeqNo: it.GetIfSeqNo(), PrimaryTerm: it.GetIfPrimaryTerm()}
		}
	}
	results, err := sh.Bulk(ctx, ops, refreshPolicies[req.GetRefresh()])
	if err != nil {
		return nil, err
	}
	out := make([]*sluicev1.BulkItemResult, len(items))
	for i, it := range items {
		r := &sluicev1.BulkItemResult{Action: it.GetAction(), Index: req.GetIndex(), Id: it.GetId(), Shard: req.GetShard().GetShard(),
			SeqNo: results[i].SeqNo, PrimaryTerm: results[i].Term}
		var conflict *engine.VersionConflictError
		switch res := results[i]; {
		case errors.As(res.Err, &conflict):
			// The document's current version, for the client to re-read
			// or retry against (zero: no document).
			r.Status, r.Error = sluicev1.BulkItemStatus_BULK_ITEM_STATUS_ERROR, s.errs.Detail(res.Err)
			r.SeqNo, r.PrimaryTerm = conflict.Current.SeqNo, conflict.Current.PrimaryTerm
		case res.Err != nil:
			r.Status, r.Error, r.SeqNo, r.PrimaryTerm = sluicev1.BulkItemStatus_BULK_ITEM_STATUS_ERROR, s.errs.Detail(res.Err), 0, 0
		case res.Noop:
			r.Status = sluicev1.BulkItemStatus_BULK_ITEM_STATUS_NOOP
		case ops[i].Kind == shard.OpDelete && res.Found:
			r.Status = sluicev1.BulkItemStatus_BULK_ITEM_STATUS_DELETED
		case ops[i].Kind == shard.OpDelete:
			r.Status = sluicev1.BulkItemStatus_BULK_ITEM_STATUS_NOT_FOUND
		case res.Created:
			r.Status = sluicev1.BulkItemStatus_BULK_ITEM_STATUS_CREATED
		default:
			r.Status = sluicev1.BulkItemStatus_BULK_ITEM_STATUS_UPDATED
		}
		out[i] = r
	}
	return &nodev1.ShardBulkResponse{Items: out}, nil
}

// ShardGet reads a document by id.
func (s *Server) ShardGet(ctx context.Context, req *nodev1.ShardGetRequest) (*nodev1.ShardGetResponse, error) {
	sh, err := s.shard(req.GetShard())
	if err != nil {
		return nil, err
	}
	doc, found, err := sh.Get(ctx, []byte(req.GetId()), req.GetRefresh())
	if err != nil {
		return nil, err
	}
	return &nodev1.ShardGetResponse{Found: found, Source: doc.Source, Routing: string(doc.Routing),
		SeqNo: doc.Version.SeqNo, PrimaryTerm: doc.Version.PrimaryTerm}, nil
}

// ShardRefresh refreshes a shard.
func (s *Server) ShardRefresh(ctx context.Context, req *nodev1.ShardRefreshRequest) (*nodev1.ShardRefreshResponse, error) {
	sh, err := s.shard(req.GetShard())
	if err != nil {
		return nil, err
	}
	if err := sh.Refresh(ctx); err != nil {
		return nil, err
	}
	return &nodev1.ShardRefreshResponse{}, nil
}

// ShardStats reports a shard's counters.
func (s *Server) ShardStats(ctx context.Context, req *nodev1.ShardStatsRequest) (*nodev1.ShardStatsResponse, error) {
	sh, err := s.shard(req.GetShard())
	if err != nil {
		return nil, err
	}
	st := sh.Stats()
	return &nodev1.ShardStatsResponse{NumDocs: st.NumDocs, DeletedDocs: st.DeletedDocs, Segments: int32(st.Segments),
		StoreSizeBytes: st.SizeBytes, MaxSeqNo: st.MaxSeqNo, DurableSeqNo: st.DurableSeqNo}, nil
}

// OpenShardReader pins the shard's latest reader.
func (s *Server) OpenShardReader(ctx context.Context, req *nodev1.OpenShardReaderRequest) (*nodev1.OpenShardReaderResponse, error) {
	sh, err := s.shard(req.GetShard())
	if err != nil {
		return nil, err
	}
	ka := req.GetKeepAlive().AsDuration()
	if ka <= 0 {
		return nil, fmt.Errorf("%w: keep_alive must be positive", shard.ErrInvalid)
	}
	r, err := sh.PinReader(ka)
	if err != nil {
		return nil, err
	}
	defer r.Done()
	return &nodev1.OpenShardReaderResponse{ReaderId: r.ID(), NumDocs: int64(r.Reader().NumDocs())}, nil
}

// CloseShardReader releases a pinned reader.
func (s *Server) CloseShardReader(ctx context.Context, req *nodev1.CloseShardReaderRequest) (*nodev1.CloseShardReaderResponse, error) {
	// The shard may be gone already; the reader id alone identifies it.
	return &nodev1.CloseShardReaderResponse{Succeeded: s.host.Unpin(req.GetReaderId())}, nil
}

// ShardSearch runs the query phase.
func (s *Server) ShardSearch(ctx context.Context, req *nodev1.ShardSearchRequest) (*nodev1.ShardSearchResponse, error) {
	sh, err := s.shard(req.GetShard())
	if err != nil {
		return nil, err
	}
	var r *shard.PinnedReader
	if req.GetReaderId() != 0 {
		r, err = sh.Reader(req.GetReaderId(), req.GetKeepAlive().AsDuration())
	} else {
		r, err = sh.PinReader(s.opts.SearchKeepAlive)
	}
	if err != nil {
		return nil, err
	}
	defer r.Done()
	resp, err := s.search(ctx, sh, r, req)
	if err != nil {
		if req.GetReaderId() == 0 {
			r.Unpin()
		}
		return nil, err
	}
	return resp, nil
}

func (s *Server) search(ctx context.Context, sh *shard.Shard, r *shard.PinnedReader, req *nodev1.ShardSearchRequest) (*nodev1.ShardSearchResponse, error) {
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
			return nil, fmt.Errorf("%w: search_after has %d values for %d sort keys", shard.ErrInvalid, len(after), len(sort))
		}
		sreq.SearchAfter = make([]search.SortValue, len(after))
		for i, v := range after {
			if sreq.SearchAfter[i], err = querydsl.SortValueFromProto(sort[i], types[i], v); err != nil {
				return nil, err
			}
		}
	}
	resp := &nodev1.ShardSearchResponse{ReaderId: r.ID()}
	sctx := ctx
	if d := req.GetTimeout().AsDuration(); d > 0 {
		var cancel context.CancelFunc
		sctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	td, err := r.Searcher().Search(sctx, q, sreq)
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
	resp.Hits = make([]*nodev1.ShardHit, len(td.Hits))
	for i, h := range td.Hits {
		sh := &nodev1.ShardHit{Doc: int32(h.Doc)}
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
func (s *Server) ShardFetch(ctx context.Context, req *nodev1.ShardFetchRequest) (*nodev1.ShardFetchResponse, error) {
	sh, err := s.shard(req.GetShard())
	if err != nil {
		if req.GetRelease() {
			s.host.Unpin(req.GetReaderId())
		}
		return nil, err
	}
	r, err := sh.Reader(req.GetReaderId(), 0)
	if err != nil {
		return nil, err
	}
	defer func() {
		r.Done()
		if req.GetRelease() {
			r.Unpin()
		}
	}()
	dvFields, err := querydsl.DocValueFields(sh.Mapping(), req.GetDocvalueFields())
	if err != nil {
		return nil, err
	}
	leaves := r.Reader().Leaves()
	resp := &nodev1.ShardFetchResponse{Docs: make([]*nodev1.FetchedDoc, len(req.GetDocs()))}
	for i, d := range req.GetDocs() {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		sd, err := r.Document(int(d))
		if err != nil {
			return nil, err
		}
		fd := &nodev1.FetchedDoc{Doc: d, Id: string(sd.ID), Routing: string(sd.Routing)}
		if req.GetFetchSource() {
			fd.Source = sd.Source
		}
		if len(dvFields) > 0 {
			leaf, local, _ := r.LeafOf(int(d)) // Document checked the doc
			fd.Fields = querydsl.ReadDocValues(leaves[leaf].Reader, local, dvFields)
		}
		resp.Docs[i] = fd
	}
	return resp, nil
}
