package registry

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/sluice-search/sluice/cluster/etcdtest"
)

func start(t *testing.T, c *clientv3.Client, value func() (string, error)) (*Registration, context.CancelFunc, chan error) {
	t.Helper()
	r := New(Config{Client: c, Key: "/t/nodes/n1", TTL: 2 * time.Second, Value: value})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	select {
	case <-r.Registered():
	case <-time.After(10 * time.Second):
		t.Fatal("not registered")
	}
	return r, cancel, done
}

func waitValue(t *testing.T, c *clientv3.Client, key, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := c.Get(context.Background(), key)
		if err == nil && (want == "" && len(resp.Kvs) == 0 || len(resp.Kvs) == 1 && string(resp.Kvs[0].Value) == want) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s never became %q", key, want)
}

func TestReRegistersAfterLeaseRevoked(t *testing.T) {
	c := etcdtest.New(t)
	r, cancel, done := start(t, c, func() (string, error) { return "v", nil })
	waitValue(t, c, "/t/nodes/n1", "v")
	first := r.Lease()
	// Revoke the lease behind the registration's back: the key goes, and
	// the registration must put it back under a new lease.
	if _, err := c.Revoke(context.Background(), first); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for r.Count() < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if r.Count() < 2 {
		t.Fatal("did not re-register")
	}
	waitValue(t, c, "/t/nodes/n1", "v")
	if r.Lease() == first || r.Lease() == 0 {
		t.Errorf("lease %x after re-registration (first %x)", r.Lease(), first)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Run = %v", err)
	}
	// A clean stop revokes the lease: the key is gone at once.
	waitValue(t, c, "/t/nodes/n1", "")
}

func TestRefreshRewritesValue(t *testing.T) {
	c := etcdtest.New(t)
	var n atomic.Int32
	r, cancel, done := start(t, c, func() (string, error) {
		if n.Add(1) == 1 {
			return "first", nil
		}
		return "second", nil
	})
	defer func() { cancel(); <-done }()
	waitValue(t, c, "/t/nodes/n1", "first")
	r.Refresh()
	waitValue(t, c, "/t/nodes/n1", "second")
}

func TestKeyDeletedIsReRegistered(t *testing.T) {
	c := etcdtest.New(t)
	_, cancel, done := start(t, c, func() (string, error) { return "v", nil })
	defer func() { cancel(); <-done }()
	if _, err := c.Delete(context.Background(), "/t/nodes/n1"); err != nil {
		t.Fatal(err)
	}
	waitValue(t, c, "/t/nodes/n1", "v")
}
