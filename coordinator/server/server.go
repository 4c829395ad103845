// Package server is the coordinator's gRPC adapter for the public
// sluice.v1.Sluice service. Handlers translate: metadata, alias, health and
// state RPCs to cluster/metadata and the cluster state cache, document RPCs
// to the data path (coordinator/datapath), reindex and task RPCs to the
// task manager (coordinator/reindex). Handlers return the core's typed
// errors as they are: the coordinator's server turns them into statuses
// with the coordinator's one error table.
package server

import (
	"cmp"
	"context"
	"time"

	"google.golang.org/grpc"

	"github.com/sluice-search/sluice/cluster/metadata"
	"github.com/sluice-search/sluice/cluster/state"
	"github.com/sluice-search/sluice/coordinator/datapath"
	"github.com/sluice-search/sluice/coordinator/reindex"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// LeaderFunc reports the coordinator acting as allocator.
type LeaderFunc func(context.Context) (string, error)

// Server implements sluicev1.SluiceServer.
type Server struct {
	sluicev1.UnimplementedSluiceServer
	meta        *metadata.Service
	cache       *state.Cache
	data        *datapath.DataPath
	tasks       *reindex.Manager
	leader      LeaderFunc
	clusterName string
	metrics     *Metrics
	// mappingTimeout bounds PutMapping's wait for etcd.
	mappingTimeout time.Duration
}

// Config holds the server's collaborators, all required.
type Config struct {
	Metadata *metadata.Service
	// Cache is the running cluster state cache (health waits on it).
	Cache *state.Cache
	// Data serves the document RPCs.
	Data *datapath.DataPath
	// Tasks serves the reindex and task RPCs.
	Tasks       *reindex.Manager
	Leader      LeaderFunc
	ClusterName string
	// Metrics, if set, records per-index request latencies.
	Metrics *Metrics
	// MappingUpdateTimeout bounds how long PutMapping waits for etcd
	// whatever the client's deadline (0: the default,
	// metadata.DefaultMappingUpdateTimeout).
	MappingUpdateTimeout time.Duration
}

// New returns the server.
func New(cfg Config) *Server {
	return &Server{meta: cfg.Metadata, cache: cfg.Cache, data: cfg.Data, tasks: cfg.Tasks, leader: cfg.Leader, clusterName: cfg.ClusterName, metrics: cfg.Metrics,
		mappingTimeout: cmp.Or(cfg.MappingUpdateTimeout, metadata.DefaultMappingUpdateTimeout)}
}

// SetClusterName sets the name health and state report; call it before
// serving (the coordinator learns the name from etcd at start).
func (s *Server) SetClusterName(name string) { s.clusterName = name }

// Register registers the service on g.
func (s *Server) Register(g grpc.ServiceRegistrar) { sluicev1.RegisterSluiceServer(g, s) }

// CreateIndex creates an index.
func (s *Server) CreateIndex(ctx context.Context, req *sluicev1.CreateIndexRequest) (*sluicev1.CreateIndexResponse, error) {
	info, err := s.meta.CreateIndex(ctx, req, metadata.CreateOptions{})
	if err != nil {
		return nil, err
	}
	s.seeOwnWrite(ctx)
	resp := &sluicev1.CreateIndexResponse{Index: info}
	if req.GetWaitForActiveShards() {
		// Wait for every primary to start (Elasticsearch's default
		// wait_for_active_shards, 1), bounded: an answer without
		// acknowledgement says the index exists but some primary is not
		// started yet. Replicas follow.
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		st, err := s.cache.WaitFor(wctx, func(st *state.Snapshot) bool {
			x, ok := st.Indices[req.GetName()]
			return ok && x.UUID() == info.Uuid && st.IndexHealth(x) != sluicev1.HealthStatus_HEALTH_STATUS_RED
		})
		if err == nil {
			resp.ShardsAcknowledged = true
			resp.Index = st.Info(st.Indices[req.GetName()])
		} else if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	return resp, nil
}

// DeleteIndex deletes an index.
func (s *Server) DeleteIndex(ctx context.Context, req *sluicev1.DeleteIndexRequest) (*sluicev1.DeleteIndexResponse, error) {
	uuid, err := s.meta.DeleteIndex(ctx, req.GetName())
	if err != nil {
		return nil, err
	}
	s.seeOwnWrite(ctx)
	return &sluicev1.DeleteIndexResponse{Uuid: uuid}, nil
}

// GetIndex returns one index.
func (s *Server) GetIndex(ctx context.Context, req *sluicev1.GetIndexRequest) (*sluicev1.GetIndexResponse, error) {
	info, err := s.meta.GetIndex(ctx, req.GetName())
	if err != nil {
		return nil, err
	}
	if req.GetIncludeStats() {
		if err := s.data.IndexStats(ctx, []*sluicev1.IndexInfo{info}); err != nil {
			return nil, err
		}
	}
	return &sluicev1.GetIndexResponse{Index: info}, nil
}

// ListIndices lists indices.
func (s *Server) ListIndices(ctx context.Context, req *sluicev1.ListIndicesRequest) (*sluicev1.ListIndicesResponse, error) {
	infos, err := s.meta.ListIndices(ctx, req.GetPrefix())
	if err != nil {
		return nil, err
	}
	if req.GetIncludeStats() && len(infos) > 0 {
		if err := s.data.IndexStats(ctx, infos); err != nil {
			return nil, err
		}
	}
	return &sluicev1.ListIndicesResponse{Indices: infos}, nil
}

// UpdateIndexSettings changes dynamic settings.
func (s *Server) UpdateIndexSettings(ctx context.Context, req *sluicev1.UpdateIndexSettingsRequest) (*sluicev1.UpdateIndexSettingsResponse, error) {
	if req.GetSettings() == nil {
		return nil, state.Invalidf("settings: required")
	}
	info, err := s.meta.UpdateSettings(ctx, req.GetName(), req.GetSettings(), req.GetUpdateMask().GetPaths())
	if err != nil {
		return nil, err
	}
	s.seeOwnWrite(ctx)
	return &sluicev1.UpdateIndexSettingsResponse{Index: info}, nil
}

// PutMapping merges fields into a mapping. It waits for etcd at most the
// server's bound, as a dynamic mapping update does: UNAVAILABLE (retry;
// the update is idempotent) when etcd did not take it in time,
// DEADLINE_EXCEEDED when the client's own deadline came first.
func (s *Server) PutMapping(ctx context.Context, req *sluicev1.PutMappingRequest) (*sluicev1.PutMappingResponse, error) {
	if req.GetMapping() == nil {
		return nil, state.Invalidf("mapping: required")
	}
	info, err := s.meta.PutMappingWithin(ctx, s.mappingTimeout, req.GetName(), req.GetMapping())
	if err != nil {
		return nil, err
	}
	s.seeOwnWrite(ctx)
	return &sluicev1.PutMappingResponse{Index: info}, nil
}

// UpdateAliases applies alias actions atomically.
func (s *Server) UpdateAliases(ctx context.Context, req *sluicev1.UpdateAliasesRequest) (*sluicev1.UpdateAliasesResponse, error) {
	if err := s.meta.UpdateAliases(ctx, req.GetActions()); err != nil {
		return nil, err
	}
	s.seeOwnWrite(ctx)
	return &sluicev1.UpdateAliasesResponse{}, nil
}

// seeOwnWrite loads the cluster state after a metadata change, so the
// data path's next request on this coordinator sees it (a search through
// an alias just added, a write to an index just deleted) rather than the
// cache's state from before the watch delivers the change (a bulk into an
// index just created, without waiting for its shards). The change is
// made: a failed load only leaves that to the watch.
func (s *Server) seeOwnWrite(ctx context.Context) {
	_, _ = s.cache.Refresh(ctx)
}

// ListAliases lists aliases.
func (s *Server) ListAliases(ctx context.Context, req *sluicev1.ListAliasesRequest) (*sluicev1.ListAliasesResponse, error) {
	as, err := s.meta.ListAliases(ctx, req.GetPrefix())
	if err != nil {
		return nil, err
	}
	return &sluicev1.ListAliasesResponse{Aliases: as}, nil
}

// ClusterHealth reports health, waiting for wait_for_status if asked.
func (s *Server) ClusterHealth(ctx context.Context, req *sluicev1.ClusterHealthRequest) (*sluicev1.ClusterHealthResponse, error) {
	// Read the latest state first, so a health call right after a
	// CreateIndex on this coordinator sees the index.
	st, err := s.cache.Refresh(ctx)
	if err != nil {
		return nil, err
	}
	for _, name := range req.GetIndices() {
		if _, err := st.Resolve(name); err != nil {
			return nil, err
		}
	}
	want := req.GetWaitForStatus()
	if want == sluicev1.HealthStatus_HEALTH_STATUS_UNSPECIFIED {
		return Health(st, req.GetIndices(), s.clusterName), nil
	}
	timeout := 30 * time.Second
	if req.GetTimeout() != nil {
		if timeout = req.GetTimeout().AsDuration(); timeout < 0 {
			return nil, state.InvalidFieldf("timeout", "timeout must not be negative, got %v", timeout)
		}
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var h *sluicev1.ClusterHealthResponse
	_, err = s.cache.WaitFor(wctx, func(st *state.Snapshot) bool {
		h = Health(st, req.GetIndices(), s.clusterName)
		return h.Status <= want
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		h.TimedOut = true
	}
	return h, nil
}

// ClusterState returns nodes, indices with routing, aliases and the allocator.
func (s *Server) ClusterState(ctx context.Context, _ *sluicev1.ClusterStateRequest) (*sluicev1.ClusterStateResponse, error) {
	st, err := s.meta.Store.Load(ctx)
	if err != nil {
		return nil, err
	}
	leader, err := s.leader(ctx)
	if err != nil {
		return nil, err
	}
	return State(st, s.clusterName, leader), nil
}

// GetClusterSettings returns the cluster settings, defaults filled in.
func (s *Server) GetClusterSettings(ctx context.Context, _ *sluicev1.GetClusterSettingsRequest) (*sluicev1.GetClusterSettingsResponse, error) {
	cs, err := s.meta.ClusterSettings(ctx)
	if err != nil {
		return nil, err
	}
	return &sluicev1.GetClusterSettingsResponse{Settings: cs}, nil
}

// UpdateClusterSettings changes cluster settings.
func (s *Server) UpdateClusterSettings(ctx context.Context, req *sluicev1.UpdateClusterSettingsRequest) (*sluicev1.UpdateClusterSettingsResponse, error) {
	cs, err := s.meta.UpdateClusterSettings(ctx, req.GetSettings(), req.GetUpdateMask().GetPaths())
	if err != nil {
		return nil, err
	}
	return &sluicev1.UpdateClusterSettingsResponse{Settings: cs}, nil
}

// DrainNode starts or ends draining a data node.
func (s *Server) DrainNode(ctx context.Context, req *sluicev1.DrainNodeRequest) (*sluicev1.DrainNodeResponse, error) {
	return s.meta.DrainNode(ctx, req.GetNodeId(), req.GetUndrain())
}

// Bulk applies a bulk request (datapath).
func (s *Server) Bulk(ctx context.Context, req *sluicev1.BulkRequest) (*sluicev1.BulkResponse, error) {
	start := time.Now()
	resp, err := s.data.Bulk(ctx, req)
	if err == nil {
		s.metrics.observeBulk(start, resp.GetItems())
	}
	return resp, err
}

// BulkStream applies a client-streamed bulk load (datapath).
func (s *Server) BulkStream(stream grpc.ClientStreamingServer[sluicev1.BulkStreamRequest, sluicev1.BulkStreamResponse]) error {
	start := time.Now()
	var index string
	first := true
	recv := func() (*sluicev1.BulkStreamRequest, error) {
		req, err := stream.Recv()
		if first && err == nil {
			index, first = req.GetIndex(), false
		}
		return req, err
	}
	resp, err := s.data.BulkStream(stream.Context(), recv)
	if err != nil {
		return err
	}
	s.metrics.observeStream(start, index, resp)
	return stream.SendAndClose(resp)
}

// Get reads a document (datapath).
func (s *Server) Get(ctx context.Context, req *sluicev1.GetRequest) (*sluicev1.GetResponse, error) {
	return s.data.Get(ctx, req)
}

// Search searches (datapath).
func (s *Server) Search(ctx context.Context, req *sluicev1.SearchRequest) (*sluicev1.SearchResponse, error) {
	start := time.Now()
	resp, err := s.data.Search(ctx, req)
	if err == nil {
		s.metrics.observeSearch(start, req)
	}
	return resp, err
}

// OpenPointInTime pins readers (datapath).
func (s *Server) OpenPointInTime(ctx context.Context, req *sluicev1.OpenPointInTimeRequest) (*sluicev1.OpenPointInTimeResponse, error) {
	return s.data.OpenPointInTime(ctx, req)
}

// ClosePointInTime releases readers (datapath).
func (s *Server) ClosePointInTime(ctx context.Context, req *sluicev1.ClosePointInTimeRequest) (*sluicev1.ClosePointInTimeResponse, error) {
	return s.data.ClosePointInTime(ctx, req)
}

// Scroll streams a scroll (datapath).
func (s *Server) Scroll(req *sluicev1.ScrollRequest, stream grpc.ServerStreamingServer[sluicev1.ScrollResponse]) error {
	return s.data.Scroll(stream.Context(), req, stream.Send)
}

// Refresh refreshes indices (datapath).
func (s *Server) Refresh(ctx context.Context, req *sluicev1.RefreshRequest) (*sluicev1.RefreshResponse, error) {
	start := time.Now()
	resp, err := s.data.Refresh(ctx, req)
	if err == nil {
		s.metrics.observeRefresh(start, req)
	}
	return resp, err
}

// Reindex starts a reindex task (coordinator/reindex).
func (s *Server) Reindex(ctx context.Context, req *sluicev1.ReindexRequest) (*sluicev1.ReindexResponse, error) {
	t, err := s.tasks.Reindex(ctx, req)
	if err != nil {
		return nil, err
	}
	return &sluicev1.ReindexResponse{Task: t}, nil
}

// UpdateByQuery starts an update-by-query task.
func (s *Server) UpdateByQuery(ctx context.Context, req *sluicev1.UpdateByQueryRequest) (*sluicev1.UpdateByQueryResponse, error) {
	t, err := s.tasks.UpdateByQuery(ctx, req)
	if err != nil {
		return nil, err
	}
	return &sluicev1.UpdateByQueryResponse{Task: t}, nil
}

// GetTask reads a task.
func (s *Server) GetTask(ctx context.Context, req *sluicev1.GetTaskRequest) (*sluicev1.GetTaskResponse, error) {
	t, err := s.tasks.GetTask(ctx, req)
	if err != nil {
		return nil, err
	}
	return &sluicev1.GetTaskResponse{Task: t}, nil
}

// ListTasks lists tasks.
func (s *Server) ListTasks(ctx context.Context, req *sluicev1.ListTasksRequest) (*sluicev1.ListTasksResponse, error) {
	ts, err := s.tasks.ListTasks(ctx, req)
	if err != nil {
		return nil, err
	}
	return &sluicev1.ListTasksResponse{Tasks: ts}, nil
}

// CancelTask cancels a task.
func (s *Server) CancelTask(ctx context.Context, req *sluicev1.CancelTaskRequest) (*sluicev1.CancelTaskResponse, error) {
	t, err := s.tasks.CancelTask(ctx, req.GetId())
	if err != nil {
		return nil, err
	}
	return &sluicev1.CancelTaskResponse{Task: t}, nil
}

// RethrottleTask changes a task's throttle.
func (s *Server) RethrottleTask(ctx context.Context, req *sluicev1.RethrottleTaskRequest) (*sluicev1.RethrottleTaskResponse, error) {
	t, err := s.tasks.RethrottleTask(ctx, req.GetId(), req.GetRequestsPerSecond())
	if err != nil {
		return nil, err
	}
	return &sluicev1.RethrottleTaskResponse{Task: t}, nil
}

// VerifyIndex verifies an index's shard copies (datapath).
func (s *Server) VerifyIndex(ctx context.Context, req *sluicev1.VerifyIndexRequest) (*sluicev1.VerifyIndexResponse, error) {
	return s.data.VerifyIndex(ctx, req)
}
