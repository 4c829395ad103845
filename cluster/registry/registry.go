// Package registry keeps a process registered in etcd: one key attached to a
// lease that the process keeps alive. If the process dies, the lease expires
// (TTL) and the key disappears, which is how the cluster learns a data node
// left. If the registration is lost while the process lives — the lease
// expired during an etcd outage, or someone revoked it — the process grants
// a new lease and writes the key again, without restarting (milvus's
// sessionutil does the same).
//
// A stopped registration revokes its lease, so a clean shutdown is seen at
// once rather than after the TTL.
package registry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Config describes a registration.
type Config struct {
	Client *clientv3.Client
	// Key is the registered key, e.g. /sluice/nodes/<id>.
	Key string
	// Value returns the current value; it is called on every write.
	Value func() (string, error)
	// TTL of the lease. Default 10s; etcd rounds to whole seconds.
	TTL time.Duration
	// RefreshInterval rewrites the value (capacity figures change). Default
	// 30s; negative disables.
	RefreshInterval time.Duration
	Logger          *slog.Logger
}

// SetDefaults fills unset fields.
func (c *Config) SetDefaults() {
	if c.TTL <= 0 {
		c.TTL = 10 * time.Second
	}
	if c.RefreshInterval == 0 {
		c.RefreshInterval = 30 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Registration keeps one key registered while Run runs.
type Registration struct {
	cfg     Config
	refresh chan struct{}

	mu         sync.Mutex
	lease      clientv3.LeaseID
	registered chan struct{} // closed on the first successful registration
	count      int           // successful registrations, for tests and logs
}

// New returns a registration; Run performs it.
func New(cfg Config) *Registration {
	cfg.SetDefaults()
	return &Registration{cfg: cfg, refresh: make(chan struct{}, 1), registered: make(chan struct{})}
}

// Registered is closed once the key has been written the first time.
func (r *Registration) Registered() <-chan struct{} { return r.registered }

// Lease returns the current lease (0 when not registered).
func (r *Registration) Lease() clientv3.LeaseID {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lease
}

// Count returns how many times the key has been registered (1 + re-registrations).
func (r *Registration) Count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.count
}

// Refresh asks for the value to be rewritten soon.
func (r *Registration) Refresh() {
	select {
	case r.refresh <- struct{}{}:
	default:
	}
}

var errLost = errors.New("registration lost")

// Run registers and keeps the registration until ctx ends, then revokes the
// lease and returns ctx's error.
func (r *Registration) Run(ctx context.Context) error {
	backoff := 50 * time.Millisecond
	for {
		err := r.session(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r.cfg.Logger.Warn("registration lost; registering again", "key", r.cfg.Key, "err", err, "in", backoff)
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return ctx.Err()
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

// session is one lease's lifetime: grant, write, keep alive until lost.
func (r *Registration) session(ctx context.Context) error {
	c := r.cfg.Client
	grant, err := c.Grant(ctx, int64((r.cfg.TTL+time.Second-1)/time.Second))
	if err != nil {
		return fmt.Errorf("grant lease: %w", err)
	}
	lease := grant.ID
	defer func() {
		// Revoke on the way out (shutdown, or a lease we gave up on), so
		// the key goes now rather than after the TTL.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		_, _ = c.Revoke(rctx, lease)
		r.mu.Lock()
		if r.lease == lease {
			r.lease = 0
		}
		r.mu.Unlock()
	}()
	rev, err := r.put(ctx, lease)
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.lease = lease
	r.count++
	if r.count == 1 {
		close(r.registered)
	}
	r.mu.Unlock()
	r.cfg.Logger.Info("registered", "key", r.cfg.Key, "lease", fmt.Sprintf("%x", int64(lease)))

	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ka, err := c.KeepAlive(sctx, lease)
	if err != nil {
		return fmt.Errorf("keep alive: %w", err)
	}
	// Watching the key notices a revoked lease at once; the keep-alive
	// channel only closes at the next keep-alive round (TTL/3).
	w := c.Watch(clientv3.WithRequireLeader(sctx), r.cfg.Key, clientv3.WithRev(rev+1))
	var tick <-chan time.Time
	if r.cfg.RefreshInterval > 0 {
		t := time.NewTicker(r.cfg.RefreshInterval)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case _, ok := <-ka:
			if !ok {
				return fmt.Errorf("%w: keep-alive ended", errLost)
			}
		case resp, ok := <-w:
			if !ok {
				return fmt.Errorf("%w: watch ended", errLost)
			}
			if err := resp.Err(); err != nil {
				// A broken watch (etcd leader lost) is not a lost lease;
				// the keep-alive decides. Stop watching to not spin.
				r.cfg.Logger.Debug("registration watch error", "err", err)
				w = nil
				continue
			}
			for _, ev := range resp.Events {
				if ev.Type == clientv3.EventTypeDelete {
					return fmt.Errorf("%w: key deleted", errLost)
				}
			}
		case <-tick:
			if _, err := r.put(ctx, lease); err != nil {
				return err
			}
		case <-r.refresh:
			if _, err := r.put(ctx, lease); err != nil {
				return err
			}
		}
	}
}

// put writes the value under the lease and returns the write's revision.
func (r *Registration) put(ctx context.Context, lease clientv3.LeaseID) (int64, error) {
	v, err := r.cfg.Value()
	if err != nil {
		return 0, fmt.Errorf("registration value: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	resp, err := r.cfg.Client.Put(pctx, r.cfg.Key, v, clientv3.WithLease(lease))
	if err != nil {
		return 0, fmt.Errorf("%w: put %s: %v", errLost, r.cfg.Key, err)
	}
	return resp.Header.Revision, nil
}
