package reindex

import (
	"context"
	"errors"
	"fmt"
	"sort"

	clientv3 "go.etcd.io/etcd/client/v3"

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
	return ts.s.Commit(ctx, &t)
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
