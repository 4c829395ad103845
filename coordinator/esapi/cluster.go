package esapi

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/sluice-search/sluice/esjson"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
	"github.com/sluice-search/sluice/version"
)

// CompatibleVersion is the Elasticsearch version GET / reports: the API
// level whose subset Sluice serves (docs/elasticsearch-api.md). Clients
// that gate features on the version see an 8.x server; the
// "distribution" and "build_flavor" fields say it is Sluice.
const CompatibleVersion = "8.0.0"

func (a *API) info(r *request) (int, any, error) {
	h, err := a.c.ClusterHealth(r.Context(), &sluicev1.ClusterHealthRequest{})
	if err != nil {
		return 0, nil, err
	}
	v := version.Get()
	return http.StatusOK, map[string]any{
		"name":         "sluice-coordinator",
		"cluster_name": h.GetClusterName(),
		"cluster_uuid": "_na_",
		"version": map[string]any{
			"number":                              CompatibleVersion,
			"distribution":                        "sluice",
			"build_flavor":                        "sluice",
			"build_type":                          "sluice",
			"build_hash":                          v.Commit,
			"build_snapshot":                      false,
			"sluice_version":                      v.Version,
			"minimum_wire_compatibility_version":  CompatibleVersion,
			"minimum_index_compatibility_version": CompatibleVersion,
		},
		"tagline": "Sluice, serving a subset of the Elasticsearch API",
	}, nil
}

// healthWord is a health status in Elasticsearch's words.
func healthWord(s sluicev1.HealthStatus) string {
	switch s {
	case sluicev1.HealthStatus_HEALTH_STATUS_GREEN:
		return "green"
	case sluicev1.HealthStatus_HEALTH_STATUS_YELLOW:
		return "yellow"
	case sluicev1.HealthStatus_HEALTH_STATUS_RED:
		return "red"
	}
	return "unknown"
}

// clusterHealth reads health for an index expression, waiting as the
// wait_for_status and timeout parameters say.
func (a *API) clusterHealth(r *request, expr string) (*sluicev1.ClusterHealthResponse, bool, error) {
	names, all, err := a.resolve(r.Context(), expr)
	if err != nil {
		return nil, false, err
	}
	if !all && len(names) == 0 {
		return nil, false, notFoundIndex(expr)
	}
	req := &sluicev1.ClusterHealthRequest{Indices: names}
	switch w := r.param("wait_for_status"); w {
	case "":
	case "green":
		req.WaitForStatus = sluicev1.HealthStatus_HEALTH_STATUS_GREEN
	case "yellow":
		req.WaitForStatus = sluicev1.HealthStatus_HEALTH_STATUS_YELLOW
	case "red":
		req.WaitForStatus = sluicev1.HealthStatus_HEALTH_STATUS_RED
	default:
		return nil, false, badRequest("unknown health status [%s]", w)
	}
	if d, ok, err := r.durationParam("timeout"); err != nil {
		return nil, false, err
	} else if ok {
		req.Timeout = durationpb.New(d)
	}
	if on, err := r.boolParam("wait_for_no_initializing_shards", false); err != nil {
		return nil, false, err
	} else if on && req.WaitForStatus == 0 {
		// Green means no copy is initializing, a relocation's target
		// aside, which Elasticsearch does not count as initializing either.
		req.WaitForStatus = sluicev1.HealthStatus_HEALTH_STATUS_GREEN
	}
	noRelocating, err := r.boolParam("wait_for_no_relocating_shards", false)
	if err != nil {
		return nil, false, err
	}
	h, err := a.awaitHealth(r.Context(), req, noRelocating)
	if err != nil {
		return nil, false, fromStatus(err, kindIndex, expr)
	}
	return h, all, nil
}

// relocationPoll is how often a wait for no relocating shards asks again.
const relocationPoll = 100 * time.Millisecond

// awaitHealth is ClusterHealth, waiting too, if noRelocating, until no
// copy moves: green no longer says so (a shard stays green while a copy
// of it relocates), and the API waits for a status only. It asks again
// every relocationPoll within the request's timeout (30 s unset).
func (a *API) awaitHealth(ctx context.Context, req *sluicev1.ClusterHealthRequest, noRelocating bool) (*sluicev1.ClusterHealthResponse, error) {
	timeout := 30 * time.Second
	if req.GetTimeout() != nil {
		timeout = req.GetTimeout().AsDuration()
	}
	deadline := time.Now().Add(timeout)
	for {
		h, err := a.c.ClusterHealth(ctx, req)
		if err != nil || !noRelocating || h.GetTimedOut() || h.GetRelocatingShards() == 0 {
			return h, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			h.TimedOut = true
			return h, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(min(relocationPoll, left)):
		}
		req.Timeout = durationpb.New(max(0, time.Until(deadline)))
	}
}

func (a *API) health(r *request) (int, any, error) {
	level := r.param("level")
	switch level {
	case "", "cluster", "indices":
	default:
		return 0, nil, badRequest("level [%s] is not supported by Sluice (cluster or indices)", level)
	}
	h, _, err := a.clusterHealth(r, r.PathValue("index"))
	if err != nil {
		return 0, nil, err
	}
	c := healthCounts(h)
	out := map[string]any{
		"cluster_name":                     h.GetClusterName(),
		"status":                           healthWord(h.GetStatus()),
		"timed_out":                        h.GetTimedOut(),
		"number_of_nodes":                  h.GetNumberOfDataNodes(),
		"number_of_data_nodes":             h.GetNumberOfDataNodes(),
		"active_primary_shards":            c.activePrimaries,
		"active_shards":                    c.active,
		"relocating_shards":                c.relocating,
		"initializing_shards":              c.initializing,
		"unassigned_shards":                c.unassigned,
		"delayed_unassigned_shards":        0,
		"number_of_pending_tasks":          0,
		"number_of_in_flight_fetch":        0,
		"task_max_waiting_in_queue_millis": 0,
		"active_shards_percent_as_number":  c.percent(),
	}
	if level == "indices" {
		idx := map[string]any{}
		for _, ih := range h.GetIndices() {
			ic := healthCounts(&sluicev1.ClusterHealthResponse{Indices: []*sluicev1.IndexHealth{ih}})
			idx[ih.GetIndex()] = map[string]any{"status": healthWord(ih.GetStatus()), "number_of_shards": ic.shards,
				"number_of_replicas": ic.replicas(), "active_primary_shards": ic.activePrimaries, "active_shards": ic.active,
				"relocating_shards": ic.relocating, "initializing_shards": ic.initializing, "unassigned_shards": ic.unassigned}
		}
		out["indices"] = idx
	}
	code := http.StatusOK
	if h.GetTimedOut() {
		code = http.StatusRequestTimeout // as Elasticsearch answers a wait that timed out
	}
	return code, out, nil
}

// shardCounts are health's shard counts as Elasticsearch counts them:
// every copy (total) of every shard (shards), active or initializing or
// else unassigned; a relocation's target not at all, its source — active
// until the target takes over — counted relocating too.
type shardCounts struct {
	shards, total, active, activePrimaries, relocating, initializing, unassigned int
}

// replicas is number_of_replicas of one index's counts: the allocator
// keeps 1 + number_of_replicas copies of each shard, unassigned included.
func (c shardCounts) replicas() int {
	if c.shards == 0 {
		return 0
	}
	return c.total/c.shards - 1
}

func (c shardCounts) percent() float64 {
	if c.total == 0 {
		return 100
	}
	return 100 * float64(c.active) / float64(c.total)
}

func healthCounts(h *sluicev1.ClusterHealthResponse) shardCounts {
	var c shardCounts
	for _, ih := range h.GetIndices() {
		seen := map[int32]bool{}
		for _, s := range ih.GetShards() {
			if s.GetRelocatingFromNode() != "" {
				c.relocating++
				continue
			}
			if !seen[s.GetShard()] {
				seen[s.GetShard()] = true
				c.shards++
			}
			c.total++
			switch s.GetState() {
			case sluicev1.ShardState_SHARD_STATE_STARTED:
				c.active++
				if s.GetPrimary() {
					c.activePrimaries++
				}
			case sluicev1.ShardState_SHARD_STATE_INITIALIZING:
				c.initializing++
			default:
				c.unassigned++
			}
		}
	}
	return c
}

// reindexBody is POST /_reindex's body, as far as Sluice reads it.
type reindexBody struct {
	Source struct {
		Index any            `json:"index"` // a name or a list
		Query rawJSON        `json:"query"`
		Size  *int           `json:"size"`
		Slice map[string]any `json:"slice"`
	} `json:"source"`
	Dest struct {
		Index   string `json:"index"`
		OpType  string `json:"op_type"`
		Routing string `json:"routing"`
	} `json:"dest"`
	MaxDocs   *int64 `json:"max_docs"`
	Conflicts string `json:"conflicts"`
	Size      *int64 `json:"size"` // the old name of max_docs
}

func (a *API) reindex(r *request) (int, any, error) {
	b, err := r.body()
	if err != nil {
		return 0, nil, err
	}
	var body reindexBody
	if err := decodeStrict(b, &body, "reindex body (Sluice's reindex takes source.index, source.query, dest.index, dest.op_type, dest.routing, max_docs and conflicts; no script, remote or pipeline)"); err != nil {
		return 0, nil, err
	}
	req, err := reindexRequest(r, &body)
	if err != nil {
		return 0, nil, err
	}
	if req.WaitForCompletion, err = r.boolParam("wait_for_completion", true); err != nil {
		return 0, nil, err
	}
	start := time.Now()
	resp, err := a.c.Reindex(r.Context(), req)
	if err != nil {
		return 0, nil, fromStatus(err, kindIndex, req.GetSource().GetIndex())
	}
	t := resp.GetTask()
	if !req.WaitForCompletion {
		return http.StatusOK, map[string]any{"task": t.GetId()}, nil
	}
	out, code := reindexResponse(t)
	out["took"] = time.Since(start).Milliseconds()
	return code, out, nil
}

// rawJSON keeps a JSON value's bytes (a query, for esjson).
type rawJSON []byte

func (j *rawJSON) UnmarshalJSON(b []byte) error { *j = append(rawJSON(nil), b...); return nil }

func reindexRequest(r *request, body *reindexBody) (*sluicev1.ReindexRequest, error) {
	req := &sluicev1.ReindexRequest{Source: &sluicev1.ReindexSource{}, Dest: &sluicev1.ReindexDestination{Index: body.Dest.Index, Routing: body.Dest.Routing}}
	switch x := body.Source.Index.(type) {
	case string:
		req.Source.Index = x
	case []any:
		if len(x) != 1 {
			return nil, badRequest("source.index: Sluice reindexes one index or alias, got %d", len(x))
		}
		s, _ := x[0].(string)
		req.Source.Index = s
	}
	if req.Source.Index == "" || req.Dest.Index == "" {
		return nil, validationError("use _reindex with source.index and dest.index")
	}
	if len(body.Source.Query) > 0 {
		q, err := parseQueryJSON(body.Source.Query)
		if err != nil {
			return nil, err
		}
		req.Source.Query = q
	}
	if body.Source.Slice != nil {
		return nil, badRequest("source.slice is not supported by Sluice: set slices= instead")
	}
	switch body.Dest.OpType {
	case "", "index":
		req.Dest.OpType = sluicev1.BulkAction_BULK_ACTION_INDEX
	case "create":
		req.Dest.OpType = sluicev1.BulkAction_BULK_ACTION_CREATE
	default:
		return nil, badRequest("dest.op_type must be index or create, got [%s]", body.Dest.OpType)
	}
	if body.MaxDocs == nil {
		body.MaxDocs = body.Size
	}
	var err error
	req.Conflicts, req.MaxDocs, req.RequestsPerSecond, req.Slices, err = taskOptions(r, body.Conflicts, body.MaxDocs)
	if err != nil {
		return nil, err
	}
	return req, nil
}

// taskOptions reads what reindex and update-by-query share: conflicts
// (of the body, else the URL), max_docs (the URL's over the body's),
// requests_per_second and slices.
func taskOptions(r *request, conflicts string, maxDocs *int64) (policy sluicev1.ConflictPolicy, max int64, rps float32, slices int32, err error) {
	if conflicts == "" {
		conflicts = r.param("conflicts")
	}
	switch conflicts {
	case "", "abort":
		policy = sluicev1.ConflictPolicy_CONFLICT_POLICY_ABORT
	case "proceed":
		policy = sluicev1.ConflictPolicy_CONFLICT_POLICY_PROCEED
	default:
		return 0, 0, 0, 0, badRequest("conflicts may only be \"proceed\" or \"abort\" but was [%s]", conflicts)
	}
	if maxDocs != nil {
		max = *maxDocs
	}
	if n, ok, err := r.intParam("max_docs"); err != nil {
		return 0, 0, 0, 0, err
	} else if ok {
		max = n
	}
	if v := r.param("requests_per_second"); v != "" && v != "-1" {
		f, err := parseFloat(v)
		if err != nil || f <= 0 {
			return 0, 0, 0, 0, badRequest("[requests_per_second] must be a positive number or -1, got [%s]", v)
		}
		rps = float32(f)
	}
	if v := r.param("slices"); v != "" && v != "auto" {
		n, ok, err := r.intParam("slices")
		if err != nil || !ok || n < 1 {
			return 0, 0, 0, 0, badRequest("[slices] must be a positive number or auto, got [%s]", v)
		}
		slices = int32(n)
	}
	return policy, max, rps, slices, nil
}

// reindexResponse is a finished reindex as Elasticsearch reports it, and
// the HTTP status to answer it with: the failure's if the task failed
// (409 for one a version conflict aborted, as Elasticsearch), else 200 —
// documents that failed alone, which Sluice counts and goes on past,
// leave it 200.
func reindexResponse(t *sluicev1.Task) (map[string]any, int) {
	st := t.GetReindex()
	failures := []any{}
	code := http.StatusOK
	for _, f := range st.GetFailureSamples() {
		e := fromDetail(f.GetError(), true)
		failures = append(failures, map[string]any{"index": f.GetIndex(), "status": e.status, "cause": e.body()})
	}
	out := map[string]any{
		"timed_out": false, "total": st.GetTotal(), "created": st.GetCreated(), "updated": st.GetUpdated(), "deleted": 0,
		"version_conflicts": st.GetVersionConflicts(), "noops": 0, "batches": 0,
		"retries":          map[string]any{"bulk": 0, "search": 0},
		"throttled_millis": st.GetThrottled().AsDuration().Milliseconds(), "requests_per_second": rps(st.GetRequestsPerSecond()),
		"throttled_until_millis": 0, "failures": failures,
	}
	if t.GetError() != nil {
		// A task a conflict aborted (ABORTED) failed on a document:
		// Elasticsearch's version_conflict_engine_exception.
		e := fromDetail(t.GetError(), codes.Code(t.GetError().GetCode()) == codes.Aborted)
		out["failures"] = append(failures, map[string]any{"status": e.status, "cause": e.body()})
		code = e.status
	}
	dropCreated(t, out)
	return out, code
}

// dropCreated leaves "created" out of an update-by-query's counts, as
// Elasticsearch does: it creates nothing.
func dropCreated(t *sluicev1.Task, counts map[string]any) {
	if t.GetType() == "update_by_query" {
		delete(counts, "created")
	}
}

func rps(f float32) float32 {
	if f <= 0 {
		return -1
	}
	return f
}

// taskAction is Elasticsearch's action name of a task type.
func taskAction(typ string) string {
	switch typ {
	case "reindex":
		return "indices:data/write/reindex"
	case "update_by_query":
		return "indices:data/write/update/byquery"
	}
	return typ
}

// taskDone reports a task that has ended.
func taskDone(t *sluicev1.Task) bool {
	switch t.GetState() {
	case sluicev1.TaskState_TASK_STATE_SUCCEEDED, sluicev1.TaskState_TASK_STATE_FAILED, sluicev1.TaskState_TASK_STATE_CANCELLED:
		return true
	}
	return false
}

// taskJSON is GET /_tasks/{id}'s answer: the task, and once it has ended
// its response (or error).
func taskJSON(t *sluicev1.Task) map[string]any {
	st := t.GetReindex()
	started := t.GetStartTime().AsTime()
	running := time.Since(started)
	if t.GetEndTime() != nil {
		running = t.GetEndTime().AsTime().Sub(started)
	}
	task := map[string]any{
		"node": "sluice", "id": t.GetId(), "type": "persistent", "action": taskAction(t.GetType()),
		"description": t.GetDescription(), "start_time_in_millis": started.UnixMilli(),
		"running_time_in_nanos": running.Nanoseconds(), "cancellable": !taskDone(t), "cancelled": t.GetState() == sluicev1.TaskState_TASK_STATE_CANCELLED,
		"status": map[string]any{"total": st.GetTotal(), "created": st.GetCreated(), "updated": st.GetUpdated(), "deleted": 0,
			"batches": 0, "version_conflicts": st.GetVersionConflicts(), "noops": 0, "retries": map[string]any{"bulk": 0, "search": 0},
			"throttled_millis": st.GetThrottled().AsDuration().Milliseconds(), "requests_per_second": rps(st.GetRequestsPerSecond()),
			"throttled_until_millis": 0, "state": strings.ToLower(strings.TrimPrefix(t.GetState().String(), "TASK_STATE_"))},
	}
	dropCreated(t, task["status"].(map[string]any))
	out := map[string]any{"completed": taskDone(t), "task": task}
	if taskDone(t) {
		if t.GetError() != nil {
			out["error"] = fromDetail(t.GetError(), false).body()
		} else {
			out["response"], _ = reindexResponse(t)
		}
	}
	return out
}

func (a *API) getTask(r *request) (int, any, error) {
	req := &sluicev1.GetTaskRequest{Id: r.PathValue("id")}
	var err error
	if req.WaitForCompletion, err = r.boolParam("wait_for_completion", false); err != nil {
		return 0, nil, err
	}
	if d, ok, err := r.durationParam("timeout"); err != nil {
		return 0, nil, err
	} else if ok {
		req.Timeout = durationpb.New(d)
	}
	resp, err := a.c.GetTask(r.Context(), req)
	if err != nil {
		return 0, nil, fromStatus(err, kindGeneral, "")
	}
	return http.StatusOK, taskJSON(resp.GetTask()), nil
}

func (a *API) cancelTask(r *request) (int, any, error) {
	resp, err := a.c.CancelTask(r.Context(), &sluicev1.CancelTaskRequest{Id: r.PathValue("id")})
	if err != nil {
		return 0, nil, fromStatus(err, kindGeneral, "")
	}
	return http.StatusOK, map[string]any{"nodes": map[string]any{"sluice": map[string]any{"tasks": map[string]any{resp.GetTask().GetId(): taskJSON(resp.GetTask())["task"]}}}}, nil
}

func parseFloat(s string) (float64, error) { return strconv.ParseFloat(s, 64) }

// parseQueryJSON reads a query of a body (esjson), as a parsing error.
func parseQueryJSON(b []byte) (*sluicev1.Query, error) {
	q, err := esjson.ParseQuery(b)
	if err != nil {
		return nil, parsingError(err)
	}
	return q, nil
}
