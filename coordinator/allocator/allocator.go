// Package allocator places shards on data nodes. Every coordinator runs an
// Allocator; one of them, elected through etcd (election/allocator, with
// go.etcd.io/etcd/client/v3/concurrency), acts: it watches the cluster state
// and on every change
//
//   - places UNASSIGNED shards on live nodes (cluster/placement decides),
//     writing node, INITIALIZING and a fresh allocation id;
//   - marks shards whose node's lease expired NODE_LEFT. With no replicas
//     the shard's only copy is on that node's disk, so it is not moved: it
//     waits for the node, which reopens it and reports STARTED.
//
// Shards that are STARTED, INITIALIZING or FAILED on a live node are left
// alone (no rebalancing: moving a shard needs recovery, which does not
// exist yet). Each write is one transaction guarded by the routing entries'
// mod revisions and by the leader's election key, so a deposed leader
// cannot write, and a node's concurrent report is never overwritten.
package allocator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"google.golang.org/protobuf/proto"

	"github.com/sluice-search/sluice/cluster/placement"
	"github.com/sluice-search/sluice/cluster/state"
	statev1 "github.com/sluice-search/sluice/proto/sluice/state/v1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// Config configures an Allocator.
type Config struct {
	Store *state.Store
	// Cache supplies state changes; it must be running.
	Cache *state.Cache
	// ID identifies this coordinator in the election.
	ID string
	// SessionTTL is the election session's lease TTL: how long a dead
	// leader holds the role. Default 10s.
	SessionTTL time.Duration
	// Interval re-checks the state even without changes. Default 5s.
	Interval time.Duration
	// MaxTxnEntries bounds routing entries written per transaction
	// (etcd's --max-txn-ops is 128 by default). Default 50.
	MaxTxnEntries int
	Logger        *slog.Logger
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
	if cfg.MaxTxnEntries <= 0 {
		cfg.MaxTxnEntries = 50
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
	for {
		changed := a.cfg.Cache.Changed()
		if st := a.cfg.Cache.State(); st != nil {
			err := a.allocate(ctx, st, guard)
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
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		case <-tick.C:
		}
	}
}

// Rounds counts allocation rounds that wrote something (for tests).
func (a *Allocator) Rounds() int64 { return a.rounds.Load() }

// Change is one routing entry the allocator writes, guarded by the mod
// revision it was computed from.
type Change struct {
	Key         string
	ModRevision int64
	Routing     *statev1.ShardRouting
}

// Plan computes the routing changes the allocator wants for st.
func Plan(st *state.Snapshot, keys state.Keys, newID func() string) []Change {
	var ups []Change
	var pending []placement.Shard
	where := map[state.ShardID]*state.Shard{}
	for uuid, x := range st.ByUUID {
		for n, sh := range x.Shards {
			if sh == nil {
				continue // being created in several transactions
			}
			r := sh.Routing
			switch {
			case r.GetNodeId() == "":
				pending = append(pending, placement.Shard{Index: uuid, Shard: n})
				where[state.ShardID{Index: uuid, Shard: n}] = sh
			case !st.Live(r.GetNodeId()) && r.GetState() != sluicev1.ShardState_SHARD_STATE_NODE_LEFT:
				nr := proto.Clone(r).(*statev1.ShardRouting)
				nr.State = sluicev1.ShardState_SHARD_STATE_NODE_LEFT
				nr.Reason = fmt.Sprintf("node [%s] left the cluster; waiting for it to return (the shard's data is on its disk)", r.GetNodeId())
				ups = append(ups, Change{keys.Shard(uuid, n), sh.ModRevision, nr})
			}
		}
	}
	for _, d := range placement.Place(st.PlacementNodes(), st.PlacementCopies(), pending) {
		sh := where[state.ShardID{Index: d.Shard.Index, Shard: d.Shard.Shard}]
		nr := proto.Clone(sh.Routing).(*statev1.ShardRouting)
		if d.Node == "" {
			if nr.Reason == d.Reason {
				continue
			}
			nr.Reason = d.Reason
		} else {
			nr.NodeId, nr.State, nr.AllocationId, nr.Reason = d.Node, sluicev1.ShardState_SHARD_STATE_INITIALIZING, newID(), ""
		}
		ups = append(ups, Change{keys.Shard(d.Shard.Index, d.Shard.Shard), sh.ModRevision, nr})
	}
	return ups
}

// allocate writes st's plan in transactions of MaxTxnEntries entries.
func (a *Allocator) allocate(ctx context.Context, st *state.Snapshot, guard clientv3.Cmp) error {
	ups := Plan(st, a.cfg.Store.Keys, uuid.NewString)
	if len(ups) == 0 {
		return nil
	}
	for len(ups) > 0 {
		batch := ups[:min(len(ups), a.cfg.MaxTxnEntries)]
		ups = ups[len(batch):]
		var t state.Txn
		t.If(guard)
		for _, u := range batch {
			t.Unchanged(u.Key, u.ModRevision)
			t.Put(u.Key, u.Routing)
		}
		if err := a.cfg.Store.Commit(ctx, &t); err != nil {
			return err
		}
		for _, u := range batch {
			a.cfg.Logger.Info("shard routing", "shard", u.Key, "node", u.Routing.GetNodeId(), "state", u.Routing.GetState().String(), "reason", u.Routing.GetReason())
		}
	}
	a.rounds.Add(1)
	return nil
}
