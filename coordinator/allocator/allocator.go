// Package allocator places shard copies on data nodes and replaces lost
// primaries. Every coordinator runs an Allocator; one of them, elected
// through etcd (election/allocator, with
// go.etcd.io/etcd/client/v3/concurrency), acts: it watches the cluster state
// and its nodes, and on every change (and at least every Interval) plans
// and writes the routing it wants (Plan, plan.go, which states the rules):
//
//   - copies on nodes that are gone become NODE_LEFT, and INITIALIZING
//     again when their node is back (it reopens them);
//   - a lost or failed primary is replaced by the in-sync replica that is
//     furthest ahead, asked over Replication.GetCopyState, in one write
//     that raises the primary term (a node that cannot answer is not
//     waited for: any in-sync copy holds every acknowledged operation);
//   - replicas whose node stays away longer than the index's
//     node_left_delayed_timeout are placed elsewhere; the copy count
//     follows number_of_replicas, also on a live index;
//   - unassigned copies are placed (cluster/placement), a replica only
//     once its primary has started, none on a node whose disk is past the
//     high watermark, no replica past the low one;
//   - an index with a copy on a node past the flood-stage watermark gets a
//     write block, lifted once every node holding a copy is below high
//     again (disk.go).
//
// "Gone" is a node whose lease expired, or one that fails its follower
// checks (followers.go): the leader asks every node's health service every
// FollowerCheckInterval, so a node whose process died is seen within about
// a second, not when its lease runs out.
//
// Copies on drained nodes or on a disk past the high watermark are moved,
// and the cluster rebalanced, by relocation (moves.go): a target copy
// recovers from the primary, and the source is dropped only once the
// target is started and in sync. Targets go only to nodes that register
// peer recovery. Rebalancing moves the copies the cluster setting
// rebalance_enable allows (all by default, primaries too), never a primary
// a running task pins (pins/<task-id>, written by the reindex task
// runner); the routing writes are also guarded by the pins, so a pin
// written since the state was read wins. Each write is one transaction guarded
// by the routing entries' mod revisions and by the leader's election key,
// so a deposed leader cannot write, and a node's concurrent report is
// never overwritten.
package allocator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/sluice-search/sluice/cluster/state"
	nodev1 "github.com/sluice-search/sluice/proto/sluice/node/v1"
	statev1 "github.com/sluice-search/sluice/proto/sluice/state/v1"
)

// Config configures an Allocator.
type Config struct {
	Store *state.Store
	// Cache supplies state changes; it must be running.
	Cache *state.Cache
	// ID identifies this coordinator in the election.
	ID string
	// Conn reaches a data node by its registered address (nodeconn.Pool's
	// Conn), for follower checks and GetCopyState. Nil: no follower checks
	// (nodes are gone only when their lease expires) and no candidate is
	// asked before a promotion.
	Conn func(addr string) (grpc.ClientConnInterface, error)
	// SessionTTL is the election session's lease TTL: how long a dead
	// leader holds the role. Default 10s.
	SessionTTL time.Duration
	// Interval re-checks the state even without changes. Default 5s.
	Interval time.Duration
	// FollowerCheckInterval, FollowerCheckTimeout and
	// FollowerCheckRetries tune the follower checks (Elasticsearch's
	// cluster.fault_detection.follower_check.*): defaults 1s, 2s and 3.
	FollowerCheckInterval time.Duration
	FollowerCheckTimeout  time.Duration
	FollowerCheckRetries  int
	// CopyStateTimeout bounds the wait for promotion candidates' answers.
	// Default 1s.
	CopyStateTimeout time.Duration
	// MaxTxnEntries bounds routing entries written per transaction
	// (etcd's --max-txn-ops is 128 by default). Default 50.
	MaxTxnEntries int
	// Now is the clock (tests). Default time.Now.
	Now    func() time.Time
	Logger *slog.Logger
}

// Allocator runs for the allocator role and, when elected, allocates.
type Allocator struct {
	cfg    Config
	leader atomic.Bool
	rounds atomic.Int64
}

// New returns an allocator; Run starts it.
func New(cfg Config) *Allocator {
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = 10 * time.Second
	}
	if cfg.Interval <= 0 {
		cfg.Interval = 5 * time.Second
	}
	if cfg.FollowerCheckInterval <= 0 {
		cfg.FollowerCheckInterval = time.Second
	}
	if cfg.FollowerCheckTimeout <= 0 {
		cfg.FollowerCheckTimeout = 2 * time.Second
	}
	if cfg.FollowerCheckRetries <= 0 {
		cfg.FollowerCheckRetries = 3
	}
	if cfg.CopyStateTimeout <= 0 {
		cfg.CopyStateTimeout = time.Second
	}
	if cfg.MaxTxnEntries <= 0 {
		cfg.MaxTxnEntries = 50
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Allocator{cfg: cfg}
}

// IsLeader reports whether this allocator currently holds the role.
func (a *Allocator) IsLeader() bool { return a.leader.Load() }

// Leader returns the id of the coordinator holding the allocator role, or
// "" if none does.
func Leader(ctx context.Context, c *clientv3.Client, keys state.Keys) (string, error) {
	resp, err := c.Get(ctx, keys.Election()+"/", clientv3.WithFirstCreate()...)
	if err != nil {
		return "", fmt.Errorf("allocator: read leader: %w", err)
	}
	if len(resp.Kvs) == 0 {
		return "", nil
	}
	return string(resp.Kvs[0].Value), nil
}

// Run campaigns for the role and allocates while holding it; when the
// session is lost (etcd outage, lease expiry) it campaigns again. It returns
// when ctx ends, resigning first so another coordinator takes over at once.
func (a *Allocator) Run(ctx context.Context) error {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := a.term(ctx)
		if ctx.Err() != nil {
			break
		}
		a.cfg.Logger.Warn("allocator term ended", "id", a.cfg.ID, "err", err)
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
		}
		backoff = min(2*backoff, 5*time.Second)
	}
	return ctx.Err()
}

// term is one election session: campaign, then lead until the session ends.
func (a *Allocator) term(ctx context.Context) error {
	sess, err := concurrency.NewSession(a.cfg.Store.Client,
		concurrency.WithTTL(int((a.cfg.SessionTTL+time.Second-1)/time.Second)), concurrency.WithContext(ctx))
	if err != nil {
		return fmt.Errorf("session: %w", err)
	}
	defer sess.Close() // revokes the lease: followers see the key go at once
	e := concurrency.NewElection(sess, a.cfg.Store.Keys.Election())
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-sess.Done():
			cancel()
		case <-cctx.Done():
		}
	}()
	if err := e.Campaign(cctx, a.cfg.ID); err != nil {
		return fmt.Errorf("campaign: %w", err)
	}
	a.leader.Store(true)
	defer a.leader.Store(false)
	a.cfg.Logger.Info("elected allocator", "id", a.cfg.ID)
	// Writes are only valid while our election key is the one we created.
	guard := clientv3.Compare(clientv3.CreateRevision(e.Key()), "=", e.Rev())
	return a.lead(cctx, guard)
}

func (a *Allocator) lead(ctx context.Context, guard clientv3.Cmp) error {
	tick := time.NewTicker(a.cfg.Interval)
	defer tick.Stop()
	var checks *followers
	var checked <-chan struct{}
	if a.cfg.Conn != nil {
		checks = newFollowers(a.cfg.Conn, a.cfg.FollowerCheckInterval, a.cfg.FollowerCheckTimeout, a.cfg.FollowerCheckRetries, a.cfg.Logger)
		defer checks.stop()
		checked = checks.changed
	}
	due := time.NewTimer(time.Hour)
	defer due.Stop()
	for {
		changed := a.cfg.Cache.Changed()
		if st := a.cfg.Cache.State(); st != nil {
			var unreachable map[string]string
			if checks != nil {
				checks.sync(ctx, st)
				unreachable = checks.unreachable()
			}
			next, err := a.allocate(ctx, st, unreachable, guard)
			switch {
			case errors.Is(err, state.ErrConflict):
				// Our view was stale or we lost the role; a fresh state
				// (or the session ending) follows.
				a.cfg.Logger.Debug("allocation conflicted; waiting for a fresh state")
				if _, err := a.cfg.Cache.Refresh(ctx); err != nil {
					a.cfg.Logger.Warn("refresh state", "err", err)
				}
				continue
			case err != nil && ctx.Err() == nil:
				a.cfg.Logger.Warn("allocation failed", "err", err)
			}
			// A replica's delay running out is a change no watch reports.
			if next.IsZero() {
				due.Reset(time.Hour)
			} else {
				due.Reset(max(next.Sub(a.cfg.Now()), time.Millisecond))
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		case <-checked:
		case <-due.C:
		case <-tick.C:
		}
	}
}

// Rounds counts allocation rounds that wrote something (for tests).
func (a *Allocator) Rounds() int64 { return a.rounds.Load() }

// allocate plans for st and writes the plan in transactions of
// MaxTxnEntries entries. When a primary must be replaced, the in-sync
// candidates are asked how far they are first (GetCopyState, bounded by
// CopyStateTimeout), so the plan promotes the one furthest ahead. It
// returns when to plan again at the latest (zero: no deadline).
func (a *Allocator) allocate(ctx context.Context, st *state.Snapshot, unreachable map[string]string, guard clientv3.Cmp) (time.Time, error) {
	in := Input{State: st, Keys: a.cfg.Store.Keys, Now: a.cfg.Now(), Unreachable: unreachable, NewID: uuid.NewString}
	if a.cfg.Conn != nil {
		type ask struct {
			id state.ShardID
			c  *statev1.ShardCopy
		}
		var asks []ask
		in.CopyState = func(id state.ShardID, c *statev1.ShardCopy) (*nodev1.GetCopyStateResponse, bool) {
			asks = append(asks, ask{id, c})
			return nil, false
		}
		Plan(in) // a dry run: which candidates to ask
		answers := map[string]*nodev1.GetCopyStateResponse{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, q := range asks {
			wg.Go(func() {
				if resp, err := a.copyState(ctx, st, q.id, q.c); err == nil {
					mu.Lock()
					answers[q.c.GetAllocationId()] = resp
					mu.Unlock()
				} else {
					a.cfg.Logger.Info("promotion candidate did not say how far it is; any in-sync copy will do", "shard", q.id, "node", q.c.GetNodeId(), "err", err)
				}
			})
		}
		wg.Wait()
		in.CopyState = func(_ state.ShardID, c *statev1.ShardCopy) (*nodev1.GetCopyStateResponse, bool) {
			r, ok := answers[c.GetAllocationId()]
			return r, ok
		}
	}
	ups, next := Plan(in)
	blocks := DiskBlocks(in)
	err := a.commit(ctx, []clientv3.Cmp{guard}, len(blocks), func(i int) (string, int64, proto.Message) {
		return blocks[i].Key, blocks[i].ModRevision, blocks[i].Meta
	}, func(i int) {
		if b := blocks[i].Meta.GetDiskBlock(); b != nil {
			a.cfg.Logger.Warn("index refuses writes: a node holding a copy is past the flood-stage disk watermark", "index", blocks[i].Meta.GetName(), "reason", b.GetReason())
		} else {
			a.cfg.Logger.Info("index takes writes again: every node holding a copy is below the high disk watermark", "index", blocks[i].Meta.GetName())
		}
	})
	if err != nil {
		return next, err
	}
	// A task may have pinned shards since st was read (a local reindex
	// accepted meanwhile): a move planned or completed from st could part
	// what it placed together, so plan again from a fresh state. Pins
	// change when a task starts, finishes a slice or ends: seldom.
	guards := []clientv3.Cmp{guard, clientv3.Compare(clientv3.ModRevision(a.cfg.Store.Keys.Pins()), "<", st.Revision+1).WithPrefix()}
	return next, a.commit(ctx, guards, len(ups), func(i int) (string, int64, proto.Message) {
		return ups[i].Key, ups[i].ModRevision, ups[i].Routing
	}, func(i int) { a.logChange(st, ups[i]) })
}

// commit writes n entries (key, the mod revision it was computed from,
// value) in transactions of MaxTxnEntries, each guarded by guards (the
// leader's election key, ...) and every entry's revision, and calls done for each entry
// written.
func (a *Allocator) commit(ctx context.Context, guards []clientv3.Cmp, n int, entry func(i int) (string, int64, proto.Message), done func(i int)) error {
	for lo := 0; lo < n; lo += a.cfg.MaxTxnEntries {
		hi := min(n, lo+a.cfg.MaxTxnEntries)
		var t state.Txn
		t.If(guards...)
		for i := lo; i < hi; i++ {
			key, rev, v := entry(i)
			t.Unchanged(key, rev)
			t.Put(key, v)
		}
		if err := a.cfg.Store.Commit(ctx, &t); err != nil {
			return err
		}
		for i := lo; i < hi; i++ {
			done(i)
		}
		a.rounds.Add(1)
	}
	return nil
}

// copyState asks a candidate's node how far its copy is.
func (a *Allocator) copyState(ctx context.Context, st *state.Snapshot, id state.ShardID, c *statev1.ShardCopy) (*nodev1.GetCopyStateResponse, error) {
	addr, ok := st.NodeAddress(c.GetNodeId())
	if !ok {
		return nil, fmt.Errorf("node [%s]: %w", c.GetNodeId(), state.ErrNotFound)
	}
	conn, err := a.cfg.Conn(addr)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, a.cfg.CopyStateTimeout)
	defer cancel()
	return nodev1.NewReplicationClient(conn).GetCopyState(cctx, &nodev1.GetCopyStateRequest{
		Shard: &nodev1.ShardID{IndexUuid: id.Index, Shard: int32(id.Shard)}, AllocationId: c.GetAllocationId()})
}

// logChange logs what a written change did to each copy.
func (a *Allocator) logChange(st *state.Snapshot, u Change) {
	var before *statev1.ShardRouting
	if x := st.ByUUID[u.ID.Index]; x != nil && x.Shards[u.ID.Shard] != nil {
		before = x.Shards[u.ID.Shard].Routing
	}
	if before.GetPrimaryTerm() != u.Routing.GetPrimaryTerm() {
		a.cfg.Logger.Warn("primary changed", "shard", u.Key, "term", u.Routing.GetPrimaryTerm(),
			"from", state.Primary(before).GetNodeId(), "to", state.Primary(u.Routing).GetNodeId(), "in_sync", u.Routing.GetInSync())
	}
	for _, c := range u.Routing.GetCopies() {
		if old := state.CopyByAllocation(before, c.GetAllocationId()); old != nil && proto.Equal(old, c) {
			continue
		}
		a.cfg.Logger.Info("shard copy", "shard", u.Key, "primary", c.GetPrimary(), "node", c.GetNodeId(),
			"state", c.GetState().String(), "reason", c.GetReason())
	}
}
