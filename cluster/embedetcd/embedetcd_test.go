package embedetcd

import (
	"context"
	"net/url"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// TestStartBindsPortZero: without URLs etcd binds port 0 itself, the
// endpoint names the port bound, and a restart on the same directory (on
// another port) finds the keys.
func TestStartBindsPortZero(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	start := func() (*Server, *clientv3.Client) {
		t.Helper()
		srv, err := Start(ctx, Config{Dir: dir, NoFsync: true})
		if err != nil {
			t.Fatal(err)
		}
		eps := srv.Endpoints()
		if len(eps) != 1 {
			t.Fatalf("endpoints %v, want one", eps)
		}
		u, err := url.Parse(eps[0])
		if err != nil || u.Hostname() != "127.0.0.1" || u.Port() == "" || u.Port() == "0" {
			t.Fatalf("endpoint %q (%v): want 127.0.0.1 and the port bound", eps[0], err)
		}
		c, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			t.Fatal(err)
		}
		return srv, c
	}
	srv, c := start()
	if _, err := c.Put(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	c.Close()
	srv.Close()

	srv, c = start()
	defer srv.Close()
	defer c.Close()
	resp, err := c.Get(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "v" {
		t.Fatalf("after restart: %v, want k=v", resp.Kvs)
	}
}
