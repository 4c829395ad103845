package e2e

import (
	"context"
	"net"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	sluiceclient "github.com/sluice-search/sluice/client"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// startWithoutReindex serves, on a free port, a coordinator as one without
// reindex support answers: the index, alias and cluster RPCs of the
// cluster at addr, every document and task RPC (and index statistics)
// UNIMPLEMENTED. Every coordinator this code builds has reindex support,
// so the older one is played by this stand-in; it returns its address.
func startWithoutReindex(ctx context.Context, addr string) string {
	GinkgoHelper()
	upstream, err := sluiceclient.Dial(ctx, addr)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(upstream.Close)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	g := grpc.NewServer()
	sluicev1.RegisterSluiceServer(g, withoutReindex{c: upstream})
	go func() { _ = g.Serve(lis) }()
	DeferCleanup(g.Stop)
	return lis.Addr().String()
}

// withoutReindex forwards the metadata RPCs; the embedded server answers
// the rest UNIMPLEMENTED.
type withoutReindex struct {
	sluicev1.UnimplementedSluiceServer
	c sluicev1.SluiceClient
}

var errNoStats = status.Error(codes.Unimplemented, "index statistics need the data path")

func (s withoutReindex) CreateIndex(ctx context.Context, req *sluicev1.CreateIndexRequest) (*sluicev1.CreateIndexResponse, error) {
	return s.c.CreateIndex(ctx, req)
}

func (s withoutReindex) DeleteIndex(ctx context.Context, req *sluicev1.DeleteIndexRequest) (*sluicev1.DeleteIndexResponse, error) {
	return s.c.DeleteIndex(ctx, req)
}

func (s withoutReindex) GetIndex(ctx context.Context, req *sluicev1.GetIndexRequest) (*sluicev1.GetIndexResponse, error) {
	if req.GetIncludeStats() {
		return nil, errNoStats
	}
	return s.c.GetIndex(ctx, req)
}

func (s withoutReindex) ListIndices(ctx context.Context, req *sluicev1.ListIndicesRequest) (*sluicev1.ListIndicesResponse, error) {
	if req.GetIncludeStats() {
		return nil, errNoStats
	}
	return s.c.ListIndices(ctx, req)
}

func (s withoutReindex) UpdateIndexSettings(ctx context.Context, req *sluicev1.UpdateIndexSettingsRequest) (*sluicev1.UpdateIndexSettingsResponse, error) {
	return s.c.UpdateIndexSettings(ctx, req)
}

func (s withoutReindex) PutMapping(ctx context.Context, req *sluicev1.PutMappingRequest) (*sluicev1.PutMappingResponse, error) {
	return s.c.PutMapping(ctx, req)
}

func (s withoutReindex) UpdateAliases(ctx context.Context, req *sluicev1.UpdateAliasesRequest) (*sluicev1.UpdateAliasesResponse, error) {
	return s.c.UpdateAliases(ctx, req)
}

func (s withoutReindex) ListAliases(ctx context.Context, req *sluicev1.ListAliasesRequest) (*sluicev1.ListAliasesResponse, error) {
	return s.c.ListAliases(ctx, req)
}

func (s withoutReindex) ClusterHealth(ctx context.Context, req *sluicev1.ClusterHealthRequest) (*sluicev1.ClusterHealthResponse, error) {
	return s.c.ClusterHealth(ctx, req)
}

func (s withoutReindex) ClusterState(ctx context.Context, req *sluicev1.ClusterStateRequest) (*sluicev1.ClusterStateResponse, error) {
	return s.c.ClusterState(ctx, req)
}
