package reindex

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sluice-search/sluice/cluster/etcdtest"
	"github.com/sluice-search/sluice/cluster/metadata"
	"github.com/sluice-search/sluice/cluster/state"
	statev1 "github.com/sluice-search/sluice/proto/sluice/state/v1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// TestTaskLifecycleInEtcd drives the Manager over a real etcd without data
// nodes: requests are validated and planned, tasks persisted, listed,
// rethrottled and cancelled, and the elected runner ends a cancelled task.
func TestTaskLifecycleInEtcd(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	store := state.NewStore(etcdtest.New(t), "")
	md := metadata.New(store)
	if _, err := md.CreateIndex(ctx, &sluicev1.CreateIndexRequest{Name: "src",
		Settings: &sluicev1.IndexSettings{NumberOfShards: 2, NumberOfRoutingShards: 4}}, metadata.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cache := state.NewCache(store, slog.New(slog.DiscardHandler))
	go func() { _ = cache.Run(ctx) }()
	m := New(store, cache, nil, md, nil, Options{ID: "c1", SessionTTL: time.Second, Logger: slog.New(slog.DiscardHandler)})

	bad := []*sluicev1.ReindexRequest{
		{Dest: &sluicev1.ReindexDestination{Index: "d"}},
		{Source: &sluicev1.ReindexSource{Index: "src"}},
		{Source: &sluicev1.ReindexSource{Index: "src"}, Dest: &sluicev1.ReindexDestination{Index: "src"}},
		{Source: &sluicev1.ReindexSource{Index: "nope"}, Dest: &sluicev1.ReindexDestination{Index: "d"}},
		{Source: &sluicev1.ReindexSource{Index: "src"}, Dest: &sluicev1.ReindexDestination{Index: "d", Settings: &sluicev1.IndexSettings{NumberOfShards: 3}}, Mode: sluicev1.ReindexMode_REINDEX_MODE_LOCAL},
		{Source: &sluicev1.ReindexSource{Index: "src"}, Dest: &sluicev1.ReindexDestination{Index: "d"}, Mode: sluicev1.ReindexMode_REINDEX_MODE_BASELINE},
		{Source: &sluicev1.ReindexSource{Index: "src"}, Dest: &sluicev1.ReindexDestination{Index: "d"}, RequestsPerSecond: -1},
	}
	for i, req := range bad {
		if _, err := m.Reindex(ctx, req); err == nil || !(errors.Is(err, state.ErrInvalid) || errors.Is(err, state.ErrNotFound)) {
			t.Errorf("bad request %d: %v", i, err)
		}
	}

	task, err := m.Reindex(ctx, &sluicev1.ReindexRequest{Source: &sluicev1.ReindexSource{Index: "src"},
		Dest: &sluicev1.ReindexDestination{Index: "dst", Settings: &sluicev1.IndexSettings{NumberOfShards: 4}}, Slices: 8, RequestsPerSecond: 100})
	if err != nil {
		t.Fatal(err)
	}
	rec, _, err := m.tasks.get(ctx, task.Id)
	if err != nil {
		t.Fatal(err)
	}
	if p := rec.Plan; p.Mode != sluicev1.ReindexMode_REINDEX_MODE_LOCAL || !p.DestCreated || len(p.Slices) != 8 || len(rec.Checkpoints) != 8 ||
		rec.Task.State != sluicev1.TaskState_TASK_STATE_PENDING {
		t.Errorf("stored record %v", rec)
	}
	dst, err := md.GetIndex(ctx, "dst")
	if err != nil || dst.Settings.NumberOfShards != 4 || dst.Settings.NumberOfRoutingShards != 4 {
		t.Errorf("destination %v %v", dst, err)
	}

	if got, err := m.RethrottleTask(ctx, task.Id, 7); err != nil || got.Reindex.RequestsPerSecond != 7 {
		t.Errorf("rethrottle: %v %v", got, err)
	}
	if got, err := m.CancelTask(ctx, task.Id); err != nil || got.State != sluicev1.TaskState_TASK_STATE_PENDING {
		t.Errorf("cancel: %v %v", got, err)
	}
	if _, err := m.CancelTask(ctx, "nope"); !errors.Is(err, state.ErrNotFound) {
		t.Errorf("cancel unknown task: %v", err)
	}
	list, err := m.ListTasks(ctx, &sluicev1.ListTasksRequest{States: []sluicev1.TaskState{sluicev1.TaskState_TASK_STATE_PENDING}})
	if err != nil || len(list) != 1 {
		t.Errorf("list pending: %v %v", list, err)
	}

	// The runner picks the task up and ends it as cancelled.
	rctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { _ = m.Run(rctx); close(done) }()
	end, err := m.GetTask(ctx, &sluicev1.GetTaskRequest{Id: task.Id, WaitForCompletion: true, Timeout: nil})
	stop()
	<-done
	if err != nil || end.State != sluicev1.TaskState_TASK_STATE_CANCELLED || end.EndTime == nil {
		t.Errorf("after the runner: %v %v", end, err)
	}
	if m.Leading() {
		t.Error("still leading after Run returned")
	}
}

// TestFinishedTasksExpire: the task runner deletes finished task records
// past the retention, and keeps recent ones.
func TestFinishedTasksExpire(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	store := state.NewStore(etcdtest.New(t), "")
	cache := state.NewCache(store, slog.New(slog.DiscardHandler))
	go func() { _ = cache.Run(ctx) }()
	m := New(store, cache, nil, metadata.New(store), nil, Options{ID: "c1", SessionTTL: time.Second,
		TaskRetention: time.Hour, Logger: slog.New(slog.DiscardHandler)})
	now := time.Now()
	for _, tt := range []struct {
		id    string
		state sluicev1.TaskState
		ended time.Duration // ago; 0: still running
	}{
		{"old-ok", sluicev1.TaskState_TASK_STATE_SUCCEEDED, 2 * time.Hour},
		{"old-cancelled", sluicev1.TaskState_TASK_STATE_CANCELLED, 3 * time.Hour},
		{"recent-failed", sluicev1.TaskState_TASK_STATE_FAILED, 10 * time.Minute},
	} {
		task := &sluicev1.Task{Id: tt.id, State: tt.state, StartTime: timestamppb.New(now.Add(-tt.ended - time.Minute))}
		if tt.ended > 0 {
			task.EndTime = timestamppb.New(now.Add(-tt.ended))
		}
		if err := m.tasks.create(ctx, &statev1.ReindexTask{Task: task}); err != nil {
			t.Fatal(err)
		}
	}

	rctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { _ = m.Run(rctx); close(done) }()
	defer func() { stop(); <-done }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		list, err := m.ListTasks(ctx, &sluicev1.ListTasksRequest{})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, task := range list {
			ids = append(ids, task.Id)
		}
		if slices.Equal(ids, []string{"recent-failed"}) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("tasks after the sweep: %v, want only recent-failed", ids)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := m.GetTask(ctx, &sluicev1.GetTaskRequest{Id: "old-ok"}); !errors.Is(err, state.ErrNotFound) {
		t.Errorf("get an expired task: %v, want not found", err)
	}
}
