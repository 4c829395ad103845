package server

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// DataPath serves the document RPCs of the Sluice service: bulk routing,
// get, search fan-out and merge, point-in-time, scroll, refresh, and the
// reindex tasks. The Server forwards these calls to it unchanged; an
// implementation returns gRPC status errors itself (it is an edge too).
//
// It is built from coordinator.Cluster (the state cache for routing, the
// node connection pool, the metadata service) by the factory in
// coordinator.Config.DataPath.
type DataPath interface {
	Bulk(context.Context, *sluicev1.BulkRequest) (*sluicev1.BulkResponse, error)
	BulkStream(grpc.ClientStreamingServer[sluicev1.BulkStreamRequest, sluicev1.BulkStreamResponse]) error
	Get(context.Context, *sluicev1.GetRequest) (*sluicev1.GetResponse, error)
	Search(context.Context, *sluicev1.SearchRequest) (*sluicev1.SearchResponse, error)
	OpenPointInTime(context.Context, *sluicev1.OpenPointInTimeRequest) (*sluicev1.OpenPointInTimeResponse, error)
	ClosePointInTime(context.Context, *sluicev1.ClosePointInTimeRequest) (*sluicev1.ClosePointInTimeResponse, error)
	Scroll(*sluicev1.ScrollRequest, grpc.ServerStreamingServer[sluicev1.ScrollResponse]) error
	Refresh(context.Context, *sluicev1.RefreshRequest) (*sluicev1.RefreshResponse, error)
	Reindex(context.Context, *sluicev1.ReindexRequest) (*sluicev1.ReindexResponse, error)
	GetTask(context.Context, *sluicev1.GetTaskRequest) (*sluicev1.GetTaskResponse, error)
	ListTasks(context.Context, *sluicev1.ListTasksRequest) (*sluicev1.ListTasksResponse, error)
	CancelTask(context.Context, *sluicev1.CancelTaskRequest) (*sluicev1.CancelTaskResponse, error)
	RethrottleTask(context.Context, *sluicev1.RethrottleTaskRequest) (*sluicev1.RethrottleTaskResponse, error)
	// IndexStats fills docs_count and store_size_bytes of the given
	// indices (GetIndex / ListIndices with include_stats).
	IndexStats(context.Context, []*sluicev1.IndexInfo) error
}

// NoDataPath answers every data RPC with UNIMPLEMENTED: a coordinator
// without a data path still serves metadata, health and state.
type NoDataPath struct {
	sluicev1.UnimplementedSluiceServer
}

// IndexStats reports stats as unavailable.
func (NoDataPath) IndexStats(context.Context, []*sluicev1.IndexInfo) error {
	return status.Error(codes.Unimplemented, "index statistics need the data path")
}

var _ DataPath = NoDataPath{}
