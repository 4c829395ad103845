// Package nodetest starts real data nodes for the tests of the node's
// parts (node/server, node/reindex): node.New over an in-process etcd, on
// a loopback port, with shards opened on it directly rather than through
// the allocator, and a network client of its services.
package nodetest

import (
	"context"
	"log/slog"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/sluice-search/sluice/cluster/etcdtest"
	"github.com/sluice-search/sluice/node"
	"github.com/sluice-search/sluice/node/engine/document"
	"github.com/sluice-search/sluice/node/engine/mapping"
	"github.com/sluice-search/sluice/node/shard"
)

// Node is a started data node and a client connection to it.
type Node struct {
	*node.Node
	Conn *grpc.ClientConn
}

// Start starts a node on etcd (a fresh in-process etcd when nil), tuned by
// cfg (its data dir, listener, etcd and logger are the test's); it stops
// with the test.
func Start(t testing.TB, etcd *clientv3.Client, cfg node.Config) *Node {
	t.Helper()
	if etcd == nil {
		etcd = etcdtest.New(t)
	}
	if cfg.DataDir == "" {
		cfg.DataDir = t.TempDir()
	}
	cfg.Listen, cfg.Etcd, cfg.LeaseTTL = "127.0.0.1:0", etcd, 2*time.Second
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	n, err := node.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(n.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		n.Stop()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Close()
		n.Stop()
	})
	return &Node{Node: n, Conn: conn}
}

// Mapping is the mapping of the tests' documents: title text, n long, tag
// keyword. Shards opened with it take those documents without a dynamic
// mapping update (which would go to the cluster's metadata, where the
// tests' indices do not exist).
func Mapping(t testing.TB) *mapping.Mapping {
	t.Helper()
	m, err := mapping.New(mapping.DynamicDefault, map[string]mapping.Field{
		"title": mapping.NewField(document.Text), "n": mapping.NewField(document.Long), "tag": mapping.NewField(document.Keyword)})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// Open opens a shard on the node, with Mapping unless meta has one.
func (n *Node) Open(t testing.TB, meta shard.Meta) *shard.Shard {
	t.Helper()
	if meta.Mapping == nil {
		meta.Mapping = Mapping(t)
	}
	s, err := n.Shards().Open(context.Background(), meta)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
