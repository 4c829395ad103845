package state

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Cache keeps the latest cluster Snapshot in memory, refreshed by an etcd
// watch on the prefix. Every change reloads the whole state in one range
// read (cluster metadata is small and changes rarely), so the cached Snapshot is
// always a consistent snapshot at one revision — never half an update.
type Cache struct {
	store *Store
	log   *slog.Logger

	mu      sync.Mutex
	state   *Snapshot
	changed chan struct{} // closed and replaced on every new state
}

// NewCache returns a cache over store; Run fills it.
func NewCache(store *Store, log *slog.Logger) *Cache {
	if log == nil {
		log = slog.Default()
	}
	return &Cache{store: store, log: log, changed: make(chan struct{})}
}

// State returns the latest state, or nil before the first load.
func (c *Cache) State() *Snapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state
}

// Changed returns a channel closed when a newer state than the current one
// is published.
func (c *Cache) Changed() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.changed
}

// WaitFor blocks until pred holds for the cached state (checked on every
// change) and returns that state.
func (c *Cache) WaitFor(ctx context.Context, pred func(*Snapshot) bool) (*Snapshot, error) {
	for {
		c.mu.Lock()
		st, ch := c.state, c.changed
		c.mu.Unlock()
		if st != nil && pred(st) {
			return st, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return st, ctx.Err()
		}
	}
}

// Refresh loads the state now and publishes it if it is newer.
func (c *Cache) Refresh(ctx context.Context) (*Snapshot, error) {
	st, err := c.store.Load(ctx)
	if err != nil {
		return nil, err
	}
	c.publish(st)
	return st, nil
}

func (c *Cache) publish(st *Snapshot) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state != nil && st.Revision <= c.state.Revision {
		return
	}
	c.state = st
	close(c.changed)
	c.changed = make(chan struct{})
}

// Run loads the state and follows changes until ctx ends. Load or watch
// failures (etcd down, compaction) are logged and retried; the last good
// state stays available meanwhile.
func (c *Cache) Run(ctx context.Context) error {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := c.follow(ctx)
		if ctx.Err() != nil {
			break
		}
		c.log.Warn("cluster state watch interrupted; retrying", "err", err, "in", backoff)
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
		}
		backoff = min(2*backoff, 5*time.Second)
	}
	return ctx.Err()
}

// relevant reports whether events touch the state (tasks and the election
// change often and are not part of it).
func (c *Cache) relevant(events []*clientv3.Event) bool {
	for _, ev := range events {
		if kind, _, _, _ := c.store.Keys.parse(string(ev.Kv.Key)); kind != kindOther {
			return true
		}
	}
	return false
}

func (c *Cache) follow(ctx context.Context) error {
	st, err := c.Refresh(ctx)
	if err != nil {
		return err
	}
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	w := c.store.Client.Watch(wctx, c.store.Keys.Prefix, clientv3.WithPrefix(), clientv3.WithRev(st.Revision+1))
	for resp := range w {
		if err := resp.Err(); err != nil {
			return err
		}
		if !c.relevant(resp.Events) || resp.Header.Revision <= c.State().Revision {
			continue
		}
		// Drain what has already arrived, so a burst costs one reload.
	drain:
		for {
			select {
			case more, ok := <-w:
				if !ok {
					break drain
				}
				if err := more.Err(); err != nil {
					return err
				}
			default:
				break drain
			}
		}
		if _, err := c.Refresh(ctx); err != nil {
			return err
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return errors.New("watch closed")
}
