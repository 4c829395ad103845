package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/sluice-search/sluice/cluster/state"
	statev1 "github.com/sluice-search/sluice/proto/sluice/state/v1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// reconciler makes the open shards match the routing table: level-triggered
// on every new cluster state (and on a timer, to retry failed reports), so
// a missed event or a restart converges the same way.
type reconciler struct {
	nodeID string
	host   shardSet
	store  *state.Store
	cache  *state.Cache
	log    *slog.Logger

	mu     sync.Mutex // held while reconciling; stop takes it to wait
	open   map[state.ShardID]*openShard
	failed map[state.ShardID]*openFailure
	halted bool
}

// A shard that fails to open is reported FAILED and retried, as
// Elasticsearch retries a failed allocation (index.allocation.max_retries,
// 5): a passing cause (a full disk, a file still locked) heals without an
// operator, and a lasting one (a corrupt file) stays FAILED with its reason
// after the last attempt. Attempt n waits n × openRetryBase after the one
// before; a node restart starts counting again.
const maxOpenAttempts = 5

var openRetryBase = 5 * time.Second // a variable for tests

// openFailure counts failed opens of one allocation of a shard.
type openFailure struct {
	alloc    string
	attempts int
	next     time.Time // when to try again
}

type openShard struct {
	alloc    string
	indexRev int64 // mod revision of the index metadata it was given
}

func newReconciler(nodeID string, host shardSet, store *state.Store, cache *state.Cache, log *slog.Logger) *reconciler {
	return &reconciler{nodeID: nodeID, host: host, store: store, cache: cache, log: log,
		open: map[state.ShardID]*openShard{}, failed: map[state.ShardID]*openFailure{}}
}

func (r *reconciler) run(ctx context.Context) {
	tick := time.NewTicker(min(5*time.Second, openRetryBase))
	defer tick.Stop()
	failures := r.host.failures()
	for {
		changed := r.cache.Changed()
		if st := r.cache.State(); st != nil {
			r.reconcile(ctx, st)
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-tick.C:
		case <-failures:
		}
	}
}

// wanted reports whether a routing entry asks this node to hold the copy.
func (r *reconciler) wanted(rt *statev1.ShardRouting) bool {
	if rt.GetNodeId() != r.nodeID {
		return false
	}
	switch rt.GetState() {
	case sluicev1.ShardState_SHARD_STATE_INITIALIZING, sluicev1.ShardState_SHARD_STATE_STARTED, sluicev1.ShardState_SHARD_STATE_NODE_LEFT:
		return true
	}
	return false
}

func (r *reconciler) reconcile(ctx context.Context, st *state.Snapshot) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.halted {
		return
	}
	type want struct {
		x  *state.Index
		rt *statev1.ShardRouting
	}
	desired := map[state.ShardID]want{}
	now := time.Now()
	for uuid, x := range st.ByUUID {
		for n, sh := range x.Shards {
			id := state.ShardID{Index: uuid, Shard: n}
			if sh != nil && (r.wanted(sh.Routing) || r.retryDue(id, sh.Routing, now)) {
				desired[id] = want{x, sh.Routing}
			}
		}
	}
	for id := range r.failed {
		if st.ByUUID[id.Index] == nil {
			delete(r.failed, id) // the index is gone
		}
	}
	// Close what is no longer ours; delete the data of deleted indices.
	for id := range r.open {
		if _, ok := desired[id]; ok {
			continue
		}
		if err := r.host.closeShard(ctx, id); err != nil {
			r.log.Warn("close shard", "shard", id, "err", err)
		}
		delete(r.open, id)
		if _, exists := st.ByUUID[id.Index]; !exists {
			if err := r.host.deleteShard(ctx, id); err != nil {
				r.log.Warn("delete shard", "shard", id, "err", err)
			} else {
				r.log.Info("deleted shard of deleted index", "shard", id)
			}
		}
	}
	// A shard that failed while open is closed; the open below then
	// reports the host's refusal FAILED, with the reason.
	for id := range r.open {
		if err := r.host.failure(id); err != nil {
			r.log.Error("shard failed", "shard", id, "err", err)
			if err := r.host.closeShard(ctx, id); err != nil {
				r.log.Warn("close failed shard", "shard", id, "err", err)
			}
			delete(r.open, id)
		}
	}
	updated := map[string]bool{}
	for id, w := range desired {
		o, isOpen := r.open[id]
		switch {
		case !isOpen:
			if err := r.host.openShard(ctx, w.x.Meta, id); err != nil {
				f := r.failed[id]
				if f == nil || f.alloc != w.rt.GetAllocationId() {
					f = &openFailure{alloc: w.rt.GetAllocationId()}
					r.failed[id] = f
				}
				f.attempts++
				wait := time.Duration(f.attempts) * openRetryBase
				f.next = time.Now().Add(wait)
				retry := fmt.Sprintf("attempt %d of %d, next in %v", f.attempts, maxOpenAttempts, wait)
				if f.attempts >= maxOpenAttempts {
					retry = fmt.Sprintf("attempt %d of %d; restart the node to try again", f.attempts, maxOpenAttempts)
				}
				r.log.Error("open shard failed", "shard", id, "index", w.x.Name(), "attempt", f.attempts, "err", err)
				r.report(ctx, id, w.rt, sluicev1.ShardState_SHARD_STATE_FAILED, fmt.Sprintf("open failed (%s): %v", retry, err))
				continue
			}
			delete(r.failed, id)
			r.open[id] = &openShard{alloc: w.rt.GetAllocationId(), indexRev: w.x.ModRevision}
			r.log.Info("opened shard", "shard", id, "index", w.x.Name())
		case o.indexRev != w.x.ModRevision:
			if !updated[id.Index] {
				if err := r.host.updateIndex(ctx, w.x.Meta); err != nil {
					r.log.Warn("update index", "index", w.x.Name(), "err", err)
					continue
				}
				updated[id.Index] = true
			}
			o.indexRev = w.x.ModRevision
		}
		r.open[id].alloc = w.rt.GetAllocationId()
		if w.rt.GetState() != sluicev1.ShardState_SHARD_STATE_STARTED {
			r.report(ctx, id, w.rt, sluicev1.ShardState_SHARD_STATE_STARTED, "")
		}
	}
}

// retryDue reports whether a FAILED copy on this node is due for another
// open: one this process has not tried (as after a restart), or one whose
// backoff has passed with attempts left.
func (r *reconciler) retryDue(id state.ShardID, rt *statev1.ShardRouting, now time.Time) bool {
	if rt.GetNodeId() != r.nodeID || rt.GetState() != sluicev1.ShardState_SHARD_STATE_FAILED {
		return false
	}
	f := r.failed[id]
	return f == nil || f.alloc != rt.GetAllocationId() || f.attempts < maxOpenAttempts && !now.Before(f.next)
}

// report writes a shard's state into its routing entry, guarded by the
// allocation id; a stale report (the copy moved or was deleted) is dropped.
func (r *reconciler) report(ctx context.Context, id state.ShardID, rt *statev1.ShardRouting, to sluicev1.ShardState, reason string) {
	err := r.store.SetShardState(ctx, id, r.nodeID, rt.GetAllocationId(), to, reason)
	if err != nil && !errors.Is(err, state.ErrStale) && ctx.Err() == nil {
		// Retried by the next reconcile (timer or change).
		r.log.Warn("report shard state", "shard", id, "state", to.String(), "err", err)
	}
}

// stop halts reconciling and waits for a running pass to finish.
func (r *reconciler) stop() {
	r.mu.Lock()
	r.halted = true
	r.mu.Unlock()
}

// closeAll closes every open shard (they commit).
func (r *reconciler) closeAll(ctx context.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for id := range r.open {
		if err := r.host.closeShard(ctx, id); err != nil {
			r.log.Error("close shard on shutdown", "shard", id, "err", err)
		}
		delete(r.open, id)
	}
}

// openShards lists the open shards (for tests).
func (r *reconciler) openShards() []state.ShardID {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]state.ShardID, 0, len(r.open))
	for id := range r.open {
		out = append(out, id)
	}
	return out
}
