package reindex

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"

	"github.com/sluice-search/sluice/cluster/state"
	statev1 "github.com/sluice-search/sluice/proto/sluice/state/v1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// taskStore reads and writes task records under tasks/<id>.
type taskStore struct{ s *state.Store }

func (ts taskStore) get(ctx context.Context, id string) (*statev1.ReindexTask, int64, error) {
	resp, err := ts.s.Client.Get(ctx, ts.s.Keys.Task(id))
	if err != nil {
		return nil, 0, fmt.Errorf("read task %s: %w", id, err)
	}
	if len(resp.Kvs) == 0 {
		return nil, 0, state.NotFoundf("no such task [%s]", id)
	}
	rec := &statev1.ReindexTask{}
	if err := state.Unmarshal(resp.Kvs[0].Value, rec); err != nil {
		return nil, 0, err
	}
	return rec, resp.Kvs[0].ModRevision, nil
}

// list returns every task, newest first, and the revision read at.
func (ts taskStore) list(ctx context.Context) ([]*statev1.ReindexTask, int64, error) {
	resp, err := ts.s.Client.Get(ctx, ts.s.Keys.Tasks(), clientv3.WithPrefix())
	if err != nil {
		return nil, 0, fmt.Errorf("list tasks: %w", err)
	}
	out := make([]*statev1.ReindexTask, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		rec := &statev1.ReindexTask{}
		if err := state.Unmarshal(kv.Value, rec); err != nil {
			return nil, 0, fmt.Errorf("%s: %w", kv.Key, err)
		}
		out = append(out, rec)
	}
	sort.SliceStable(out, func(i, j int) bool {
		return out[i].GetTask().GetStartTime().AsTime().After(out[j].GetTask().GetStartTime().AsTime())
	})
	return out, resp.Header.Revision, nil
}

func (ts taskStore) create(ctx context.Context, rec *statev1.ReindexTask) error {
	var t state.Txn
	key := ts.s.Keys.Task(rec.GetTask().GetId())
	t.Unchanged(key, 0)
	t.Put(key, rec)
	ts.pin(&t, nil, rec)
	return ts.s.Commit(ctx, &t)
}

// pinsOf is what a task pins in place (nil: nothing), for the allocator,
// whose rebalancing leaves those primaries where they are: a LOCAL reindex
// that has not ended pins the source shards of its slices not yet done —
// a slice runs on its source shard's primary and writes into the
// destination primaries placed next to it (a segment copy needs them
// there; moved, it falls back to copying documents) — and every
// destination shard until the task ends (verification counts them). An
// update by query writes in place, on whatever node its shard is: it pins
// nothing.
func pinsOf(rec *statev1.ReindexTask) *statev1.ShardPins {
	plan := rec.GetPlan()
	if terminal(rec.GetTask().GetState()) || plan.GetMode() != sluicev1.ReindexMode_REINDEX_MODE_LOCAL || len(plan.GetUpdateDocValues()) > 0 {
		return nil
	}
	src := &statev1.PinnedShards{IndexUuid: plan.GetSourceUuid()}
	for i, s := range plan.GetSlices() {
		if i < len(rec.GetCheckpoints()) && rec.GetCheckpoints()[i].GetDone() || slices.Contains(src.Shards, s.GetSourceShard()) {
			continue
		}
		src.Shards = append(src.Shards, s.GetSourceShard())
	}
	p := &statev1.ShardPins{Holder: pinHolder(rec.GetTask().GetId())}
	if len(src.Shards) > 0 {
		slices.Sort(src.Shards)
		p.Indices = append(p.Indices, src)
	}
	p.Indices = append(p.Indices, &statev1.PinnedShards{IndexUuid: plan.GetDestUuid()})
	return p
}

// pinHolder names a task as the holder of its pins.
func pinHolder(id string) string { return fmt.Sprintf("reindex task [%s]", id) }

// unpin deletes a task's pins (best effort: a task that could not be
// stored).
func (ts taskStore) unpin(ctx context.Context, id string) {
	_, _ = ts.s.Client.Delete(ctx, ts.s.Keys.Pin(id))
}

// sweepPins deletes the pins of tasks that do not exist (a coordinator
// that stopped between creating a destination and storing its task) and
// that were there at revision before, a previous pass's (0: none): a pin
// is written with its destination just before its task record, so a pin
// without a task is left alone for one pass. It returns the revision read
// at, for the next pass.
func (ts taskStore) sweepPins(ctx context.Context, guard clientv3.Cmp, before int64) (int64, error) {
	resp, err := ts.s.Client.Get(ctx, ts.s.Keys.Pins(), clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return before, fmt.Errorf("list pins: %w", err)
	}
	for _, kv := range resp.Kvs {
		if before == 0 || kv.ModRevision > before {
			continue // not seen by a previous pass
		}
		id := strings.TrimPrefix(string(kv.Key), ts.s.Keys.Pins())
		task, err := ts.s.Client.Get(ctx, ts.s.Keys.Task(id), clientv3.WithCountOnly())
		if err != nil {
			return before, fmt.Errorf("read task %s: %w", id, err)
		}
		if task.Count > 0 {
			continue
		}
		var t state.Txn
		t.Unchanged(string(kv.Key), kv.ModRevision)
		t.Unchanged(ts.s.Keys.Task(id), 0)
		t.If(guard)
		t.Delete(string(kv.Key))
		if err := ts.s.Commit(ctx, &t); err != nil && !errors.Is(err, state.ErrConflict) {
			return before, err
		}
	}
	return resp.Header.Revision, nil
}

// pin adds to t the write that keeps the task's pins key in step with its
// record, from before (nil: a new record) to after.
func (ts taskStore) pin(t *state.Txn, before, after *statev1.ReindexTask) {
	var was *statev1.ShardPins
	if before != nil {
		was = pinsOf(before)
	}
	now := pinsOf(after)
	key := ts.s.Keys.Pin(after.GetTask().GetId())
	switch {
	case proto.Equal(was, now):
	case now == nil:
		t.Delete(key)
	default:
		t.Put(key, now)
	}
}

// errStop ends an update without writing.
var errStop = errors.New("stop")

// update applies fn to the stored record and writes it back, guarded by the
// record's revision (and guards, e.g. leadership); a concurrent change
// re-reads and re-applies fn. fn returning errStop writes nothing.
func (ts taskStore) update(ctx context.Context, id string, fn func(*statev1.ReindexTask) error, guards ...clientv3.Cmp) (*statev1.ReindexTask, error) {
	for attempt := 0; ; attempt++ {
		rec, rev, err := ts.get(ctx, id)
		if err != nil {
			return nil, err
		}
		before := proto.Clone(rec).(*statev1.ReindexTask)
		if err := fn(rec); err != nil {
			if errors.Is(err, errStop) {
				return rec, nil
			}
			return nil, err
		}
		var t state.Txn
		key := ts.s.Keys.Task(id)
		t.Unchanged(key, rev)
		t.If(guards...)
		t.Put(key, rec)
		ts.pin(&t, before, rec)
		err = ts.s.Commit(ctx, &t)
		if err == nil {
			return rec, nil
		}
		if !errors.Is(err, state.ErrConflict) || attempt == 20 {
			return nil, err
		}
		if len(guards) > 0 {
			// The guard may be what failed (leadership lost): check.
			resp, gerr := ts.s.Client.Txn(ctx).If(guards...).Commit()
			if gerr != nil {
				return nil, gerr
			}
			if !resp.Succeeded {
				return nil, errNotLeader
			}
		}
	}
}

// deleteFinished deletes a finished task's record, unless it changed since
// it was read or this coordinator no longer leads (guard).
func (ts taskStore) deleteFinished(ctx context.Context, id string, guard clientv3.Cmp) error {
	rec, rev, err := ts.get(ctx, id)
	if err != nil {
		return err
	}
	if !terminal(rec.GetTask().GetState()) {
		return fmt.Errorf("task %s is %v, not finished", id, rec.GetTask().GetState())
	}
	var t state.Txn
	key := ts.s.Keys.Task(id)
	t.Unchanged(key, rev)
	t.If(guard)
	t.Delete(key)
	t.Delete(ts.s.Keys.Pin(id)) // deleted when it ended; never left behind
	return ts.s.Commit(ctx, &t)
}

// errNotLeader: this coordinator no longer runs tasks.
var errNotLeader = errors.New("no longer the task runner")

func terminal(s sluicev1.TaskState) bool {
	switch s {
	case sluicev1.TaskState_TASK_STATE_SUCCEEDED, sluicev1.TaskState_TASK_STATE_FAILED, sluicev1.TaskState_TASK_STATE_CANCELLED:
		return true
	}
	return false
}
