// Package datapathtest starts a real Sluice cluster in-process for tests:
// embedded etcd, a coordinator with the data path and data nodes with shard
// engines (devcluster), on loopback ports in a temporary directory.
package datapathtest

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/sluice-search/sluice/client"
	"github.com/sluice-search/sluice/cluster/watermark"
	"github.com/sluice-search/sluice/coordinator/datapath"
	"github.com/sluice-search/sluice/devcluster"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// Cluster is a running test cluster.
type Cluster struct {
	*devcluster.Cluster
	DataPath *datapath.DataPath
	Client   *client.Client
}

// Start starts a cluster of nodes data nodes whose coordinator uses a data
// path with opts; it is stopped by t.Cleanup.
func Start(t testing.TB, nodes int, opts datapath.Options) *Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	log := slog.New(slog.DiscardHandler)
	if opts.Logger == nil {
		opts.Logger = log
	}
	c, err := devcluster.Start(ctx, devcluster.Config{DataDir: t.TempDir(), Listen: "127.0.0.1:0", Nodes: nodes,
		LeaseTTL: 2 * time.Second, Logger: log, DataPath: opts, ClusterSettings: watermark.Ignored()})
	if err != nil {
		t.Fatal(err)
	}
	tc := &Cluster{Cluster: c, DataPath: c.Coordinator.DataPath()}
	t.Cleanup(c.Stop)
	if tc.Client, err = client.Dial(ctx, c.Addr()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tc.Client.Close() })
	return tc
}

// CreateIndex creates an index and waits for it to be green.
func (tc *Cluster) CreateIndex(t testing.TB, name string, shards int32, m *sluicev1.Mapping) {
	t.Helper()
	ctx := context.Background()
	_, err := tc.Client.CreateIndex(ctx, &sluicev1.CreateIndexRequest{Name: name, WaitForActiveShards: true,
		Settings: &sluicev1.IndexSettings{NumberOfShards: shards}, Mapping: m})
	if err != nil {
		t.Fatal(err)
	}
	h, err := tc.Client.ClusterHealth(ctx, &sluicev1.ClusterHealthRequest{Indices: []string{name},
		WaitForStatus: sluicev1.HealthStatus_HEALTH_STATUS_GREEN, Timeout: durationpb.New(20 * time.Second)})
	if err != nil || h.TimedOut {
		t.Fatalf("index %s not green: %v %v", name, h, err)
	}
}

// Count refreshes the index and counts its documents exactly.
func (tc *Cluster) Count(t testing.TB, index string, q *sluicev1.Query) int64 {
	t.Helper()
	ctx := context.Background()
	if _, err := tc.Client.Refresh(ctx, &sluicev1.RefreshRequest{Indices: []string{index}}); err != nil {
		t.Fatal(err)
	}
	r, err := tc.Client.Search(ctx, &sluicev1.SearchRequest{Indices: []string{index}, Query: q, TrackTotalHits: -1, Size: proto.Int32(0)})
	if err != nil {
		t.Fatal(err)
	}
	if r.Shards.Failed != 0 {
		t.Fatalf("shard failures: %v", r.Shards.Failures)
	}
	return r.Total.Value
}
