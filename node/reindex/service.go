package reindex

import (
	"context"

	"google.golang.org/grpc"

	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// service is a Node service whose reindex RPCs are the Runner's and every
// other RPC is base's.
type service struct {
	sluicev1.NodeServer
	r *Runner
}

// Wrap returns base with its reindex RPCs (RunReindexSlice, ShardIngest,
// RethrottleReindexSlice) served by r; register the result as the node's
// Node service.
func Wrap(base sluicev1.NodeServer, r *Runner) sluicev1.NodeServer { return service{base, r} }

func (s service) RunReindexSlice(req *sluicev1.RunReindexSliceRequest, stream grpc.ServerStreamingServer[sluicev1.RunReindexSliceResponse]) error {
	return s.r.RunReindexSlice(req, stream)
}

func (s service) ShardIngest(stream grpc.ClientStreamingServer[sluicev1.ShardIngestRequest, sluicev1.ShardIngestResponse]) error {
	return s.r.ShardIngest(stream)
}

func (s service) RethrottleReindexSlice(ctx context.Context, req *sluicev1.RethrottleReindexSliceRequest) (*sluicev1.RethrottleReindexSliceResponse, error) {
	return s.r.RethrottleReindexSlice(ctx, req)
}
