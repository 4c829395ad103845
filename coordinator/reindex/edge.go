package reindex

import (
	"context"

	"github.com/sluice-search/sluice/coordinator"
	"github.com/sluice-search/sluice/coordinator/server"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// DataPath is a coordinator data path whose task RPCs are the Manager's.
// The coordinator runs Run in the background (task runner election).
type DataPath struct {
	server.DataPath
	Manager *Manager
}

// WithTasks wraps a data path factory (coordinator.Config.DataPath) so the
// coordinator also accepts and runs reindex tasks.
func WithTasks(inner func(coordinator.Cluster) (server.DataPath, error), opts Options) func(coordinator.Cluster) (server.DataPath, error) {
	return func(cl coordinator.Cluster) (server.DataPath, error) {
		var dp server.DataPath = server.NoDataPath{}
		if inner != nil {
			var err error
			if dp, err = inner(cl); err != nil {
				return nil, err
			}
		}
		if opts.Logger == nil {
			opts.Logger = cl.Logger
		}
		var docs DocAPI
		if _, none := dp.(server.NoDataPath); !none {
			docs = dp
		}
		return &DataPath{DataPath: dp, Manager: New(cl.Store, cl.Cache, cl.Nodes, cl.Metadata, docs, opts)}, nil
	}
}

// Run runs the task runner until ctx ends.
func (d *DataPath) Run(ctx context.Context) error { return d.Manager.Run(ctx) }

// Reindex starts a reindex task.
func (d *DataPath) Reindex(ctx context.Context, req *sluicev1.ReindexRequest) (*sluicev1.ReindexResponse, error) {
	t, err := d.Manager.Reindex(ctx, req)
	if err != nil {
		return nil, server.ToStatus(err)
	}
	return &sluicev1.ReindexResponse{Task: t}, nil
}

// GetTask reads a task.
func (d *DataPath) GetTask(ctx context.Context, req *sluicev1.GetTaskRequest) (*sluicev1.GetTaskResponse, error) {
	t, err := d.Manager.GetTask(ctx, req)
	if err != nil {
		return nil, server.ToStatus(err)
	}
	return &sluicev1.GetTaskResponse{Task: t}, nil
}

// ListTasks lists tasks.
func (d *DataPath) ListTasks(ctx context.Context, req *sluicev1.ListTasksRequest) (*sluicev1.ListTasksResponse, error) {
	ts, err := d.Manager.ListTasks(ctx, req)
	if err != nil {
		return nil, server.ToStatus(err)
	}
	return &sluicev1.ListTasksResponse{Tasks: ts}, nil
}

// CancelTask cancels a task.
func (d *DataPath) CancelTask(ctx context.Context, req *sluicev1.CancelTaskRequest) (*sluicev1.CancelTaskResponse, error) {
	t, err := d.Manager.CancelTask(ctx, req.GetId())
	if err != nil {
		return nil, server.ToStatus(err)
	}
	return &sluicev1.CancelTaskResponse{Task: t}, nil
}

// RethrottleTask changes a task's throttle.
func (d *DataPath) RethrottleTask(ctx context.Context, req *sluicev1.RethrottleTaskRequest) (*sluicev1.RethrottleTaskResponse, error) {
	t, err := d.Manager.RethrottleTask(ctx, req.GetId(), req.GetRequestsPerSecond())
	if err != nil {
		return nil, server.ToStatus(err)
	}
	return &sluicev1.RethrottleTaskResponse{Task: t}, nil
}
