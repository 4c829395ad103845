// Package etcdtest starts a real, in-process etcd for tests: one member on
// loopback ports in a temporary directory, logs silenced, fsync off.
package etcdtest

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/sluice-search/sluice/cluster/embedetcd"
)

// Start starts etcd for the test and returns it; it is closed by t.Cleanup.
func Start(t testing.TB) *embedetcd.Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv, err := embedetcd.Start(ctx, embedetcd.Config{Dir: t.TempDir(), NoFsync: true})
	if err != nil {
		t.Fatalf("etcdtest: %v", err)
	}
	t.Cleanup(srv.Close)
	return srv
}

// Client returns a client connected to srv, closed by t.Cleanup.
func Client(t testing.TB, srv *embedetcd.Server) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{
		Endpoints:   srv.Endpoints(),
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		t.Fatalf("etcdtest: client: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// New starts etcd and returns a client to it.
func New(t testing.TB) *clientv3.Client {
	t.Helper()
	return Client(t, Start(t))
}
