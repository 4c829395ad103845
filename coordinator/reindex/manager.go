package reindex

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sluice-search/sluice/cluster/metadata"
	"github.com/sluice-search/sluice/cluster/rpc"
	"github.com/sluice-search/sluice/cluster/state"
	nodev1 "github.com/sluice-search/sluice/proto/sluice/node/v1"
	statev1 "github.com/sluice-search/sluice/proto/sluice/state/v1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
	"github.com/sluice-search/sluice/querydsl"
)

// Nodes gives clients of data nodes by node id (cluster/nodeconn.Pool).
type Nodes interface {
	Client(nodeID string) (nodev1.NodeClient, error)
	Reindex(nodeID string) (nodev1.ReindexClient, error)
}

// DocAPI is the coordinator's document API that baseline mode reindexes
// through, as an external scroll + bulk tool would (the data path).
type DocAPI interface {
	Bulk(context.Context, *sluicev1.BulkRequest) (*sluicev1.BulkResponse, error)
	Scroll(ctx context.Context, req *sluicev1.ScrollRequest, send func(*sluicev1.ScrollResponse) error) error
}

// Options configure a Manager.
type Options struct {
	// ID names this coordinator as a task owner and election candidate.
	ID string
	// ProgressInterval: how often a running task persists its progress.
	// Default 1 s.
	ProgressInterval time.Duration
	// CheckpointInterval asks nodes to checkpoint this often; 0 is the
	// node's default.
	CheckpointInterval time.Duration
	// MaxRetryBackoff caps the wait between attempts of a failing slice.
	// Default 5 s.
	MaxRetryBackoff time.Duration
	// StallTimeout fails a slice that makes no progress this long (its
	// node gone for good, say). Default 10 minutes.
	StallTimeout time.Duration
	// SessionTTL of the task runner election. Default 10 s.
	SessionTTL time.Duration
	// BaselineBatch is the scroll and bulk size of baseline mode. Default 1000.
	BaselineBatch int
	// TaskRetention: the task runner deletes a finished task's record
	// (succeeded, failed or cancelled) this long after it ended, so tasks/
	// in etcd does not grow with every reindex ever run. Default
	// DefaultTaskRetention; negative keeps records forever.
	TaskRetention time.Duration
	// Errors is the coordinator's error table: it decides which errors end
	// a task (retrying cannot help) and describes a failed task's error.
	Errors *rpc.Errors
	Logger *slog.Logger
}

// DefaultTaskRetention keeps finished tasks a week: long enough to look a
// result up after a weekend.
const DefaultTaskRetention = 7 * 24 * time.Hour

// SetDefaults fills zero fields.
func (o *Options) SetDefaults() {
	if o.ID == "" {
		o.ID = uuid.NewString()
	}
	if o.ProgressInterval <= 0 {
		o.ProgressInterval = time.Second
	}
	if o.MaxRetryBackoff <= 0 {
		o.MaxRetryBackoff = 5 * time.Second
	}
	if o.StallTimeout <= 0 {
		o.StallTimeout = 10 * time.Minute
	}
	if o.SessionTTL <= 0 {
		o.SessionTTL = 10 * time.Second
	}
	if o.BaselineBatch <= 0 {
		o.BaselineBatch = 1000
	}
	if o.TaskRetention == 0 {
		o.TaskRetention = DefaultTaskRetention
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// Manager accepts reindex tasks on any coordinator and, on the one elected
// task runner, runs them. See the package doc.
type Manager struct {
	store *state.Store
	tasks taskStore
	cache *state.Cache
	nodes Nodes
	md    *metadata.Service
	docs  DocAPI
	opts  Options
	log   *slog.Logger
	now   func() time.Time

	mu      sync.Mutex
	running map[string]*taskRun
	leading bool
}

// New returns a Manager. docs may be nil (baseline mode is then refused).
func New(store *state.Store, cache *state.Cache, nodes Nodes, md *metadata.Service, docs DocAPI, opts Options) *Manager {
	opts.SetDefaults()
	return &Manager{store: store, tasks: taskStore{store}, cache: cache, nodes: nodes, md: md, docs: docs,
		opts: opts, log: opts.Logger, now: time.Now, running: map[string]*taskRun{}}
}

// electionKey is the task runner election's prefix.
func (m *Manager) electionKey() string { return m.store.Keys.Prefix + "election/reindex" }

// Reindex validates a request, creates the destination if needed, and
// stores the task PENDING for the task runner; with wait_for_completion it
// answers when the task has ended.
func (m *Manager) Reindex(ctx context.Context, req *sluicev1.ReindexRequest) (*sluicev1.Task, error) {
	if err := validate(req); err != nil {
		return nil, err
	}
	if req.GetMode() == sluicev1.ReindexMode_REINDEX_MODE_BASELINE && m.docs == nil {
		return nil, state.Invalidf("mode BASELINE needs the coordinator's data path")
	}
	st, err := m.store.Load(ctx)
	if err != nil {
		return nil, err
	}
	src, err := st.ResolveOne(req.GetSource().GetIndex())
	if err != nil {
		return nil, err
	}
	if req.GetMode() == sluicev1.ReindexMode_REINDEX_MODE_BASELINE {
		if f := updatableField(src.Meta.GetMapping()); f != "" {
			return nil, state.InvalidFieldf("mode", "mode BASELINE copies each document's _source as indexed, without the values of field [%s] updated in place since; use AUTO, LOCAL or REMOTE, which copy the current values", f)
		}
	}
	// The query is checked against the source's mapping now, as a search
	// would be, rather than failing the task on its first slice.
	if q := req.GetSource().GetQuery(); q != nil {
		m, err := querydsl.MappingFromProto(src.Meta.GetMapping())
		if err == nil {
			_, err = querydsl.Compiler{Mapping: m, Strict: true}.Compile(q)
		}
		if err != nil {
			return nil, fmt.Errorf("source.query: %w", err)
		}
	}
	id := uuid.NewString()
	plan := &statev1.ReindexPlan{SourceIndex: src.Name(), SourceUuid: src.UUID(), DestIndex: req.GetDest().GetIndex()}
	if plan.DestIndex == plan.SourceIndex {
		return nil, state.Invalidf("reindex from [%s] into itself", plan.SourceIndex)
	}
	srcP := paramsOf(src.Meta.GetSettings())
	if dst, ok := st.Indices[plan.DestIndex]; ok {
		if req.GetDest().GetSettings() != nil || req.GetDest().GetMapping() != nil {
			return nil, state.Invalidf("dest [%s] exists: settings and mapping apply only to a destination the reindex creates", plan.DestIndex)
		}
		if plan.Mode, plan.Colocatable, err = chooseMode(req.GetMode(), srcP, paramsOf(dst.Meta.GetSettings())); err != nil {
			return nil, err
		}
		plan.DestUuid = dst.UUID()
		if plan.DestDocsAtStart, err = m.countDocs(ctx, st, dst); err != nil {
			// Unknown: verification can only check a lower bound.
			plan.DestDocsAtStart = -1
		}
		if plan.CopyMethod, plan.CopyMethodReason, err = chooseCopyMethod(req, plan, srcP, src.Meta.GetMapping(), dst.Meta.GetMapping()); err != nil {
			return nil, err
		}
	} else {
		settings := destSettings(src.Meta.GetSettings(), req.GetDest().GetSettings())
		if plan.Mode, plan.Colocatable, err = chooseMode(req.GetMode(), srcP, paramsOf(settings)); err != nil {
			return nil, err
		}
		mapping := req.GetDest().GetMapping()
		if mapping == nil {
			mapping = src.Meta.GetMapping()
		}
		// Decided before the destination exists: SEGMENTS on a task that
		// cannot use them is refused without leaving an index behind.
		if plan.CopyMethod, plan.CopyMethodReason, err = chooseCopyMethod(req, plan, srcP, src.Meta.GetMapping(), mapping); err != nil {
			return nil, err
		}
		var opts metadata.CreateOptions
		if plan.Mode == sluicev1.ReindexMode_REINDEX_MODE_LOCAL {
			// Placed next to the source's primaries, and pinned there with
			// them from this transaction on (the task record, written
			// next, keeps the pins in step: store.go).
			opts.ColocateWith = src.Name()
			opts.Pin = &statev1.ShardPins{Holder: pinHolder(id), Indices: []*statev1.PinnedShards{{IndexUuid: src.UUID()}}}
			opts.PinKey = m.store.Keys.Pin(id)
		}
		info, err := m.md.CreateIndex(ctx, &sluicev1.CreateIndexRequest{Name: plan.DestIndex, Settings: settings, Mapping: mapping}, opts)
		if err != nil {
			return nil, fmt.Errorf("create destination: %w", err)
		}
		plan.DestUuid, plan.DestCreated = info.GetUuid(), true
	}
	plan.Colocatable = plan.Colocatable && keepsRouting(req)
	plan.Slices = planSlices(srcP.Shards, int(req.GetSlices()), req.GetMaxDocs())
	return m.accept(ctx, id, req, plan, "reindex", description(req))
}

// accept stores a planned task PENDING for the task runner and answers
// with it, or when it has ended with wait_for_completion.
func (m *Manager) accept(ctx context.Context, id string, req *sluicev1.ReindexRequest, plan *statev1.ReindexPlan, typ, desc string) (*sluicev1.Task, error) {
	now := timestamppb.New(m.now())
	rec := &statev1.ReindexTask{Request: req, Plan: plan, RequestsPerSecond: req.GetRequestsPerSecond(),
		Task: &sluicev1.Task{Id: id, Type: typ, Description: desc,
			State: sluicev1.TaskState_TASK_STATE_PENDING, StartTime: now,
			Reindex: &sluicev1.ReindexStatus{Mode: plan.Mode, SourceIndex: plan.SourceIndex, DestIndex: plan.DestIndex,
				RequestsPerSecond: req.GetRequestsPerSecond(), CopyMethod: plan.CopyMethod, CopyMethodReason: plan.CopyMethodReason}}}
	for _, s := range plan.Slices {
		rec.Checkpoints = append(rec.Checkpoints, &statev1.ReindexCheckpoint{Slice: s.Slice})
	}
	publicView(rec)
	if err := m.tasks.create(ctx, rec); err != nil {
		// The destination's creation may have pinned shards for it; the
		// runner's sweep deletes pins left without a task (store.go).
		m.tasks.unpin(ctx, id)
		return nil, err
	}
	m.log.Info(typ+" task accepted", "task", rec.Task.Id, "source", plan.SourceIndex, "dest", plan.DestIndex,
		"mode", plan.Mode, "copy_method", plan.CopyMethod, "copy_method_reason", plan.CopyMethodReason,
		"slices", len(plan.Slices), "dest_created", plan.DestCreated)
	if req.GetWaitForCompletion() {
		return m.wait(ctx, rec.Task.Id)
	}
	return rec.Task, nil
}

// countDocs sums the live docs of an index's shards (after a refresh).
func (m *Manager) countDocs(ctx context.Context, st *state.Snapshot, x *state.Index) (int64, error) {
	counts, err := m.shardCounts(ctx, st, x)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, c := range counts {
		n += c
	}
	return n, nil
}

// shardCounts refreshes every shard of an index and returns its live docs.
func (m *Manager) shardCounts(ctx context.Context, st *state.Snapshot, x *state.Index) ([]int64, error) {
	out := make([]int64, len(x.Shards))
	for i := range x.Shards {
		p := st.ActivePrimary(x, i)
		if p == nil {
			return nil, fmt.Errorf("index [%s] shard %d has no started primary", x.Name(), i)
		}
		cl, err := m.nodes.Client(p.GetNodeId())
		if err != nil {
			return nil, err
		}
		id := &nodev1.ShardID{IndexUuid: x.UUID(), Shard: int32(i)}
		if _, err := cl.ShardRefresh(ctx, &nodev1.ShardRefreshRequest{Shard: id}); err != nil {
			return nil, fmt.Errorf("refresh [%s] shard %d: %w", x.Name(), i, err)
		}
		s, err := cl.ShardStats(ctx, &nodev1.ShardStatsRequest{Shard: id})
		if err != nil {
			return nil, fmt.Errorf("stats of [%s] shard %d: %w", x.Name(), i, err)
		}
		out[i] = s.GetNumDocs()
	}
	return out, nil
}

// GetTask returns a task, waiting for its end if asked (30 s by default).
func (m *Manager) GetTask(ctx context.Context, req *sluicev1.GetTaskRequest) (*sluicev1.Task, error) {
	if !req.GetWaitForCompletion() {
		rec, _, err := m.tasks.get(ctx, req.GetId())
		if err != nil {
			return nil, err
		}
		return rec.Task, nil
	}
	timeout := 30 * time.Second
	if req.GetTimeout() != nil {
		if timeout = req.GetTimeout().AsDuration(); timeout < 0 {
			return nil, state.InvalidFieldf("timeout", "timeout must not be negative, got %v", timeout)
		}
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t, err := m.wait(wctx, req.GetId())
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		rec, _, err := m.tasks.get(ctx, req.GetId())
		if err != nil {
			return nil, err
		}
		return rec.Task, nil
	}
	return t, err
}

// wait watches a task until it ends.
func (m *Manager) wait(ctx context.Context, id string) (*sluicev1.Task, error) {
	for {
		rec, rev, err := m.tasks.get(ctx, id)
		if err != nil {
			return nil, err
		}
		if terminal(rec.GetTask().GetState()) {
			return rec.Task, nil
		}
		wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
		w := m.store.Client.Watch(wctx, m.store.Keys.Task(id), clientv3.WithRev(rev+1))
		select {
		case <-w:
		case <-ctx.Done():
		}
		cancel()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
}

// ListTasks lists tasks, newest first, optionally only in some states.
func (m *Manager) ListTasks(ctx context.Context, req *sluicev1.ListTasksRequest) ([]*sluicev1.Task, error) {
	recs, _, err := m.tasks.list(ctx)
	if err != nil {
		return nil, err
	}
	var out []*sluicev1.Task
	for _, r := range recs {
		if len(req.GetStates()) == 0 || slices.Contains(req.GetStates(), r.GetTask().GetState()) {
			out = append(out, r.Task)
		}
	}
	return out, nil
}

// CancelTask asks the task runner to stop a task; an ended task is returned
// as it is.
func (m *Manager) CancelTask(ctx context.Context, id string) (*sluicev1.Task, error) {
	rec, err := m.tasks.update(ctx, id, func(r *statev1.ReindexTask) error {
		if terminal(r.GetTask().GetState()) || r.CancelRequested {
			return errStop
		}
		r.CancelRequested = true
		return nil
	})
	if err != nil {
		return nil, err
	}
	return rec.Task, nil
}

// RethrottleTask changes a task's throttle; the runner passes it to the
// running slices at once.
func (m *Manager) RethrottleTask(ctx context.Context, id string, rps float32) (*sluicev1.Task, error) {
	if err := checkRate(rps); err != nil {
		return nil, err
	}
	rec, err := m.tasks.update(ctx, id, func(r *statev1.ReindexTask) error {
		if terminal(r.GetTask().GetState()) {
			return state.Invalidf("task [%s] has ended (%v)", id, r.GetTask().GetState())
		}
		r.RequestsPerSecond = rps
		r.Task.Reindex.RequestsPerSecond = rps
		return nil
	})
	if err != nil {
		return nil, err
	}
	return rec.Task, nil
}

// Run campaigns to be the task runner and, while elected, runs every task
// that has not ended, until ctx ends.
func (m *Manager) Run(ctx context.Context) error {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := m.campaign(ctx)
		if ctx.Err() != nil {
			break
		}
		m.log.Warn("reindex task runner: lost or failed the election; retrying", "err", err, "in", backoff)
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
		}
		backoff = min(2*backoff, 5*time.Second)
	}
	return ctx.Err()
}

// Leading reports whether this manager is the task runner.
func (m *Manager) Leading() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.leading
}

func (m *Manager) campaign(ctx context.Context) error {
	sess, err := concurrency.NewSession(m.store.Client, concurrency.WithTTL(int(m.opts.SessionTTL.Seconds())), concurrency.WithContext(ctx))
	if err != nil {
		return err
	}
	defer sess.Close()
	e := concurrency.NewElection(sess, m.electionKey())
	if err := e.Campaign(ctx, m.opts.ID); err != nil {
		return err
	}
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-sess.Done():
			cancel()
		case <-lctx.Done():
		}
	}()
	guard := clientv3.Compare(clientv3.CreateRevision(e.Key()), "=", e.Rev())
	m.log.Info("reindex task runner elected", "id", m.opts.ID)
	err = m.lead(lctx, guard)
	// Resign so a successor need not wait for the session to expire.
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	_ = e.Resign(rctx)
	rcancel()
	return err
}

// lead runs tasks while elected: every unfinished task gets a taskRun, and
// changes written by other coordinators (cancel, rethrottle) reach it
// through a watch on tasks/.
func (m *Manager) lead(ctx context.Context, guard clientv3.Cmp) error {
	var wg sync.WaitGroup
	m.mu.Lock()
	m.leading = true
	m.mu.Unlock()
	defer func() {
		wg.Wait()
		m.mu.Lock()
		m.leading = false
		m.mu.Unlock()
	}()
	recs, rev, err := m.tasks.list(ctx)
	if err != nil {
		return err
	}
	for _, r := range recs {
		m.dispatch(ctx, &wg, guard, r)
	}
	if m.opts.TaskRetention > 0 {
		wg.Go(func() { m.sweepFinished(ctx, guard) })
	}
	w := m.store.Client.Watch(clientv3.WithRequireLeader(ctx), m.store.Keys.Tasks(), clientv3.WithPrefix(), clientv3.WithRev(rev+1))
	for resp := range w {
		if err := resp.Err(); err != nil {
			return err
		}
		for _, ev := range resp.Events {
			if ev.Type != clientv3.EventTypePut {
				continue
			}
			rec := &statev1.ReindexTask{}
			if err := state.Unmarshal(ev.Kv.Value, rec); err != nil {
				m.log.Warn("reindex: undecodable task record", "key", string(ev.Kv.Key), "err", err)
				continue
			}
			m.dispatch(ctx, &wg, guard, rec)
		}
	}
	return ctx.Err()
}

// sweepFinished deletes finished tasks past TaskRetention, and pins left
// without a task, now and then periodically, while this manager leads.
func (m *Manager) sweepFinished(ctx context.Context, guard clientv3.Cmp) {
	every := min(time.Hour, max(m.opts.TaskRetention/4, 10*time.Millisecond))
	var pinsRead int64
	for {
		var err error
		if pinsRead, err = m.tasks.sweepPins(ctx, guard, pinsRead); err != nil && ctx.Err() == nil {
			m.log.Warn("reindex: sweeping pins left without a task", "err", err)
		}
		recs, _, err := m.tasks.list(ctx)
		if err != nil && ctx.Err() == nil {
			m.log.Warn("reindex: listing tasks to expire", "err", err)
		}
		for _, r := range recs {
			t := r.GetTask()
			if !terminal(t.GetState()) || t.GetEndTime() == nil || m.now().Sub(t.GetEndTime().AsTime()) < m.opts.TaskRetention {
				continue
			}
			switch err := m.tasks.deleteFinished(ctx, t.GetId(), guard); {
			case err == nil:
				m.log.Info("reindex: expired finished task", "task", t.GetId(), "state", t.GetState(), "ended", t.GetEndTime().AsTime())
			case ctx.Err() == nil:
				m.log.Warn("reindex: expiring finished task", "task", t.GetId(), "err", err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
	}
}

// dispatch starts a run for an unfinished task, or passes a running task's
// external changes to its run.
func (m *Manager) dispatch(ctx context.Context, wg *sync.WaitGroup, guard clientv3.Cmp, rec *statev1.ReindexTask) {
	id := rec.GetTask().GetId()
	m.mu.Lock()
	run := m.running[id]
	if run == nil && !terminal(rec.GetTask().GetState()) {
		run = newTaskRun(m, guard, proto.Clone(rec).(*statev1.ReindexTask))
		m.running[id] = run
		wg.Go(func() {
			run.run(ctx)
			m.mu.Lock()
			delete(m.running, id)
			m.mu.Unlock()
		})
	}
	m.mu.Unlock()
	if run != nil {
		run.external(rec)
	}
}

// updatableField names a field of m that can be updated in place, "" when
// there is none: a BASELINE reindex copies _source through the
// coordinator's scroll, and _source keeps such a field's value as indexed,
// so it would copy stale values where the data nodes' copies write
// current ones (engine.CurrentSource).
func updatableField(m *sluicev1.Mapping) string {
	mm, err := querydsl.MappingFromProto(m)
	if err != nil {
		return ""
	}
	for _, name := range mm.Names() {
		if f, _ := mm.Field(name); f.Updatable() {
			return name
		}
	}
	return ""
}
