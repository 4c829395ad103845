package reindex

import (
	"maps"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/sluice-search/sluice/cluster/etcdtest"
	"github.com/sluice-search/sluice/cluster/state"
	statev1 "github.com/sluice-search/sluice/proto/sluice/state/v1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// pinTask is a task t1 from index us into ud with slices on source shards
// 0, 1 and 1 (the last two halves of shard 1).
func pinTask(mode sluicev1.ReindexMode, st sluicev1.TaskState, done ...int) *statev1.ReindexTask {
	rec := &statev1.ReindexTask{Task: &sluicev1.Task{Id: "t1", State: st},
		Plan: &statev1.ReindexPlan{SourceUuid: "us", DestUuid: "ud", Mode: mode, Slices: []*statev1.ReindexPlanSlice{
			{Slice: 0, SourceShard: 0}, {Slice: 1, SourceShard: 1}, {Slice: 2, SourceShard: 1}}}}
	for i := range rec.Plan.Slices {
		rec.Checkpoints = append(rec.Checkpoints, &statev1.ReindexCheckpoint{Slice: int32(i)})
	}
	for _, i := range done {
		rec.Checkpoints[i].Done = true
	}
	return rec
}

func pins(src []int32, dest bool) *statev1.ShardPins {
	p := &statev1.ShardPins{Holder: "reindex task [t1]"}
	if src != nil {
		p.Indices = append(p.Indices, &statev1.PinnedShards{IndexUuid: "us", Shards: src})
	}
	if dest {
		p.Indices = append(p.Indices, &statev1.PinnedShards{IndexUuid: "ud"})
	}
	return p
}

func TestPinsOf(t *testing.T) {
	local, remote := sluicev1.ReindexMode_REINDEX_MODE_LOCAL, sluicev1.ReindexMode_REINDEX_MODE_REMOTE
	running := sluicev1.TaskState_TASK_STATE_RUNNING
	ubq := pinTask(local, running)
	ubq.Plan.UpdateDocValues = []byte(`{"x":1}`)
	for _, tt := range []struct {
		name string
		rec  *statev1.ReindexTask
		want *statev1.ShardPins
	}{
		{"pending local: every source shard of a slice, every destination shard", pinTask(local, sluicev1.TaskState_TASK_STATE_PENDING), pins([]int32{0, 1}, true)},
		{"a source shard is unpinned once its slices are done", pinTask(local, running, 0, 1), pins([]int32{1}, true)},
		{"every slice done (verifying): the destination stays pinned", pinTask(local, sluicev1.TaskState_TASK_STATE_VERIFYING, 0, 1, 2), pins(nil, true)},
		{"ended: nothing", pinTask(local, sluicev1.TaskState_TASK_STATE_FAILED), nil},
		{"remote: nothing (it streams to wherever the shards are)", pinTask(remote, running), nil},
		{"update by query: nothing (it writes in place)", ubq, nil},
	} {
		if d := cmp.Diff(tt.want, pinsOf(tt.rec), protocmp.Transform()); d != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, d)
		}
	}
}

// The pins key follows the task record, in the record's own writes:
// written with it, narrowed as slices finish, deleted when it ends.
func TestPinsFollowTheRecord(t *testing.T) {
	ctx := t.Context()
	store := state.NewStore(etcdtest.New(t), "")
	ts := taskStore{store}
	stored := func() *statev1.ShardPins {
		t.Helper()
		st, err := store.Load(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return st.Pins["t1"]
	}
	if err := ts.create(ctx, pinTask(sluicev1.ReindexMode_REINDEX_MODE_LOCAL, sluicev1.TaskState_TASK_STATE_PENDING)); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(pins([]int32{0, 1}, true), stored(), protocmp.Transform()); d != "" {
		t.Errorf("created (-want +got):\n%s", d)
	}
	for _, step := range []struct {
		fn   func(*statev1.ReindexTask)
		want *statev1.ShardPins
	}{
		{func(r *statev1.ReindexTask) {
			r.Task.State = sluicev1.TaskState_TASK_STATE_RUNNING
			r.Checkpoints[0].Done = true
		}, pins([]int32{1}, true)},
		{func(r *statev1.ReindexTask) { r.Checkpoints[0].Copied = 5 }, pins([]int32{1}, true)},
		{func(r *statev1.ReindexTask) { r.Task.State = sluicev1.TaskState_TASK_STATE_SUCCEEDED }, nil},
	} {
		if _, err := ts.update(ctx, "t1", func(r *statev1.ReindexTask) error { step.fn(r); return nil }); err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(step.want, stored(), protocmp.Transform()); d != "" {
			t.Errorf("after an update (-want +got):\n%s", d)
		}
	}
}

// A pin without a task is deleted by the sweep, but only one pass after it
// was seen (its task record may be about to be written); a task's own pin
// stays.
func TestSweepPins(t *testing.T) {
	ctx := t.Context()
	store := state.NewStore(etcdtest.New(t), "")
	ts := taskStore{store}
	if err := ts.create(ctx, pinTask(sluicev1.ReindexMode_REINDEX_MODE_LOCAL, sluicev1.TaskState_TASK_STATE_RUNNING)); err != nil {
		t.Fatal(err)
	}
	var tx state.Txn
	tx.Put(store.Keys.Pin("orphan"), &statev1.ShardPins{Holder: pinHolder("orphan"), Indices: []*statev1.PinnedShards{{IndexUuid: "ux"}}})
	if err := store.Commit(ctx, &tx); err != nil {
		t.Fatal(err)
	}
	always := clientv3.Compare(clientv3.CreateRevision(store.Keys.Prefix+"none"), "=", 0)
	pinned := func() []string {
		st, err := store.Load(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return slices.Sorted(maps.Keys(st.Pins))
	}
	rev, err := ts.sweepPins(ctx, always, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := pinned(); !slices.Equal(got, []string{"orphan", "t1"}) {
		t.Errorf("after the first pass: %v, want both (the orphan seen once)", got)
	}
	if _, err := ts.sweepPins(ctx, always, rev); err != nil {
		t.Fatal(err)
	}
	if got := pinned(); !slices.Equal(got, []string{"t1"}) {
		t.Errorf("after the second pass: %v, want the task's alone", got)
	}
}
