package devcluster

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/sluice-search/sluice/client"
	"github.com/sluice-search/sluice/cluster/dirlock"
	"github.com/sluice-search/sluice/cluster/watermark"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

func start(t *testing.T, dir string) (*Cluster, *client.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := Start(ctx, Config{ClusterSettings: watermark.Ignored(), DataDir: dir, Listen: "127.0.0.1:0", Nodes: 3, LeaseTTL: 2 * time.Second,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := client.Dial(ctx, c.Addr())
	if err != nil {
		c.Stop()
		t.Fatal(err)
	}
	return c, cl
}

func waitGreen(t *testing.T, cl *client.Client) *sluicev1.ClusterHealthResponse {
	t.Helper()
	h, err := cl.ClusterHealth(context.Background(), &sluicev1.ClusterHealthRequest{
		WaitForStatus: sluicev1.HealthStatus_HEALTH_STATUS_GREEN, Timeout: durationpb.New(15 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	if h.TimedOut || h.Status != sluicev1.HealthStatus_HEALTH_STATUS_GREEN {
		t.Fatalf("not green: %v", h)
	}
	return h
}

func TestDevClusterRestartKeepsIndex(t *testing.T) {
	dir := t.TempDir()
	c, cl := start(t, dir)
	ctx := context.Background()
	created, err := cl.CreateIndex(ctx, &sluicev1.CreateIndexRequest{Name: "books",
		Settings: &sluicev1.IndexSettings{NumberOfShards: 3},
		Mapping: &sluicev1.Mapping{Properties: map[string]*sluicev1.FieldMapping{
			"title": {Type: sluicev1.FieldType_FIELD_TYPE_TEXT}}},
		Aliases: []string{"library"}, WaitForActiveShards: true})
	if err != nil {
		t.Fatal(err)
	}
	if !created.ShardsAcknowledged {
		t.Errorf("shards not acknowledged: %v", created.Index.Shards)
	}
	h := waitGreen(t, cl)
	if h.NumberOfDataNodes != 3 || len(h.Indices) != 1 || h.Indices[0].ActivePrimaryShards != 3 {
		t.Errorf("health %v", h)
	}
	st, err := cl.ClusterState(ctx, &sluicev1.ClusterStateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	nodes := map[string]bool{}
	for _, sh := range st.Indices[0].Shards {
		nodes[sh.NodeId] = true
	}
	if len(nodes) != 3 || st.Allocator != "coordinator-1" {
		t.Errorf("shards on %v, allocator %q", nodes, st.Allocator)
	}

	// Errors come back as the documented codes.
	_, err = cl.CreateIndex(ctx, &sluicev1.CreateIndexRequest{Name: "books"})
	if status.Code(err) != codes.AlreadyExists {
		t.Errorf("duplicate create: %v", err)
	}
	_, err = cl.CreateIndex(ctx, &sluicev1.CreateIndexRequest{Name: "r",
		Settings: &sluicev1.IndexSettings{NumberOfReplicas: 99}})
	if status.Code(err) != codes.InvalidArgument || status.Convert(err).Message() != "number_of_replicas: must be between 0 and 32, got 99" {
		t.Errorf("replicas: %v", err)
	}
	if _, err := cl.GetIndex(ctx, &sluicev1.GetIndexRequest{Name: "nope"}); status.Code(err) != codes.NotFound {
		t.Errorf("missing index: %v", err)
	}
	if _, err := cl.Search(ctx, &sluicev1.SearchRequest{Indices: []string{"nope"}}); status.Code(err) != codes.NotFound {
		t.Errorf("search of a missing index: %v", err)
	}

	cl.Close()
	c.Stop()

	c2, cl2 := start(t, dir)
	defer c2.Stop()
	defer cl2.Close()
	got, err := cl2.GetIndex(ctx, &sluicev1.GetIndexRequest{Name: "library"})
	if err != nil {
		t.Fatal(err)
	}
	if got.Index.Uuid != created.Index.Uuid || got.Index.Mapping.Properties["title"] == nil {
		t.Errorf("after restart: %v", got.Index)
	}
	waitGreen(t, cl2)
	after, _ := cl2.GetIndex(ctx, &sluicev1.GetIndexRequest{Name: "books"})
	for i, sh := range after.Index.Shards {
		if sh.NodeId != created.Index.Shards[i].NodeId && created.Index.Shards[i].NodeId != "" {
			t.Errorf("shard %d moved from %s to %s", i, created.Index.Shards[i].NodeId, sh.NodeId)
		}
	}
}

// TestSecondClusterOnTheSameDir: a second cluster on a directory in use
// fails at once, before its etcd would wait forever for the database lock.
func TestSecondClusterOnTheSameDir(t *testing.T) {
	dir := t.TempDir()
	c, cl := start(t, dir)
	defer c.Stop()
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	begin := time.Now()
	c2, err := Start(ctx, Config{ClusterSettings: watermark.Ignored(), DataDir: dir, Listen: "127.0.0.1:0", Nodes: 1, Logger: slog.New(slog.DiscardHandler)})
	if err == nil {
		c2.Stop()
		t.Fatal("a second cluster started on a directory in use")
	}
	if !errors.Is(err, dirlock.ErrLocked) || !strings.Contains(err.Error(), "is in use by process") {
		t.Errorf("error %v, want dirlock.ErrLocked naming the process", err)
	}
	if took := time.Since(begin); took > 2*time.Second {
		t.Errorf("took %s to refuse", took)
	}
	// The first cluster is unharmed.
	if _, err := cl.ClusterHealth(ctx, &sluicev1.ClusterHealthRequest{}); err != nil {
		t.Error(err)
	}
}
