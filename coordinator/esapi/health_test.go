package esapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// TestHealthCounts: _cluster/health and _cat/health count shards as
// Elasticsearch does with replicas and moves: primaries apart, a moving
// copy once (its source active and relocating, its target not counted).
func TestHealthCounts(t *testing.T) {
	started, initializing := sluicev1.ShardState_SHARD_STATE_STARTED, sluicev1.ShardState_SHARD_STATE_INITIALIZING
	resp := &sluicev1.ClusterHealthResponse{ClusterName: "c", Status: sluicev1.HealthStatus_HEALTH_STATUS_YELLOW, NumberOfDataNodes: 3,
		Indices: []*sluicev1.IndexHealth{{Index: "i", Status: sluicev1.HealthStatus_HEALTH_STATUS_YELLOW, Shards: []*sluicev1.ShardRouting{
			{Shard: 0, NodeId: "n1", Primary: true, State: started},
			{Shard: 0, NodeId: "n2", State: started},
			{Shard: 0, NodeId: "n3", State: initializing, RelocatingFromNode: "n2"},
			{Shard: 1, NodeId: "n2", Primary: true, State: started},
			{Shard: 1, NodeId: "n1", State: initializing},
		}}}}
	api := New(Config{Client: stubClient{health: resp}})
	get := func(path string) string {
		rec := httptest.NewRecorder()
		api.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec.Body.String()
	}
	var h struct {
		ActivePrimary int `json:"active_primary_shards"`
		Active        int `json:"active_shards"`
		Relocating    int `json:"relocating_shards"`
		Initializing  int `json:"initializing_shards"`
		Unassigned    int `json:"unassigned_shards"`
		Indices       map[string]struct {
			Shards        int `json:"number_of_shards"`
			Replicas      int `json:"number_of_replicas"`
			ActivePrimary int `json:"active_primary_shards"`
			Relocating    int `json:"relocating_shards"`
		} `json:"indices"`
	}
	body := get("/_cluster/health?level=indices")
	if err := json.Unmarshal([]byte(body), &h); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	i := h.Indices["i"]
	if h.ActivePrimary != 2 || h.Active != 3 || h.Relocating != 1 || h.Initializing != 1 || h.Unassigned != 0 ||
		i.Shards != 2 || i.Replicas != 1 || i.ActivePrimary != 2 || i.Relocating != 1 {
		t.Errorf("_cluster/health: %s", body)
	}
	// shards pri relo init unassign
	if body := get("/_cat/health?h=shards,pri,relo,init,unassign"); strings.Join(strings.Fields(body), " ") != "3 2 1 1 0" {
		t.Errorf("_cat/health: %q", body)
	}
}

// movingStub answers ClusterHealth green with one copy relocating for its
// first moving calls, then green with none.
type movingStub struct {
	stubClient
	calls  *atomic.Int32
	moving int32
}

func (c movingStub) ClusterHealth(context.Context, *sluicev1.ClusterHealthRequest, ...grpc.CallOption) (*sluicev1.ClusterHealthResponse, error) {
	started := sluicev1.ShardState_SHARD_STATE_STARTED
	ih := &sluicev1.IndexHealth{Index: "i", Status: sluicev1.HealthStatus_HEALTH_STATUS_GREEN, Shards: []*sluicev1.ShardRouting{
		{NodeId: "n1", Primary: true, State: started}, {NodeId: "n2", State: started}}}
	if c.calls.Add(1) <= c.moving {
		ih.RelocatingShards = 1
		ih.Shards = append(ih.Shards, &sluicev1.ShardRouting{NodeId: "n3", State: sluicev1.ShardState_SHARD_STATE_INITIALIZING, RelocatingFromNode: "n2"})
	}
	return &sluicev1.ClusterHealthResponse{ClusterName: "c", Status: sluicev1.HealthStatus_HEALTH_STATUS_GREEN,
		RelocatingShards: ih.RelocatingShards, Indices: []*sluicev1.IndexHealth{ih}}, nil
}

// TestWaitForNoRelocatingShards: a shard stays green while a copy of it
// moves, so wait_for_no_relocating_shards waits for the move itself, and
// answers 408 timed_out if it outlasts the timeout.
func TestWaitForNoRelocatingShards(t *testing.T) {
	for _, tt := range []struct {
		name, query string
		moving      int32
		code        int
		relocating  int
		calls       int32
	}{
		{"green while moving: no wait asked", "", 3, http.StatusOK, 1, 1},
		{"waits for the move", "?wait_for_no_relocating_shards=true", 3, http.StatusOK, 0, 4},
		{"waits with wait_for_status=green too", "?wait_for_status=green&wait_for_no_relocating_shards=true", 3, http.StatusOK, 0, 4},
		{"times out while moving", "?wait_for_no_relocating_shards=true&timeout=250ms", 1000, http.StatusRequestTimeout, 1, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			calls := &atomic.Int32{}
			api := New(Config{Client: movingStub{calls: calls, moving: tt.moving}})
			rec := httptest.NewRecorder()
			api.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/_cluster/health"+tt.query, nil))
			var h struct {
				Status     string `json:"status"`
				Relocating int    `json:"relocating_shards"`
				TimedOut   bool   `json:"timed_out"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &h); err != nil {
				t.Fatalf("%v: %s", err, rec.Body)
			}
			if rec.Code != tt.code || h.Relocating != tt.relocating || h.TimedOut != (tt.code == http.StatusRequestTimeout) || h.Status != "green" {
				t.Errorf("%d %s", rec.Code, rec.Body)
			}
			if tt.calls > 0 && calls.Load() != tt.calls {
				t.Errorf("%d health calls, want %d", calls.Load(), tt.calls)
			}
		})
	}
}

// TestConflictAbortAnswers409: a reindex or update-by-query that a
// version conflict aborted (conflicts=abort; its task failed ABORTED)
// answers as Elasticsearch: 409, a version_conflict_engine_exception
// among its failures, the conflict counted. A task that succeeded with
// documents failing answers 200.
func TestConflictAbortAnswers409(t *testing.T) {
	aborted := &sluicev1.ErrorDetail{Code: int32(codes.Aborted),
		Reason: "slice 0: shard u/0: [d1]: version conflict, required seqNo [3], primary term [1]. current document has seqNo [9] and primary term [1]: version conflict (conflicts=abort)"}
	for _, tt := range []struct {
		name, path, body string
		task             *sluicev1.Task
		code             int
		cause            string
	}{
		{"update-by-query aborted", "/shop/_update_by_query", `{"doc_values":{"price":1}}`,
			&sluicev1.Task{Type: "update_by_query", State: sluicev1.TaskState_TASK_STATE_FAILED, Error: aborted,
				Reindex: &sluicev1.ReindexStatus{Total: 10, Updated: 4, VersionConflicts: 1}}, http.StatusConflict, "version_conflict_engine_exception"},
		{"reindex aborted", "/_reindex", `{"source":{"index":"a"},"dest":{"index":"b","op_type":"create"}}`,
			&sluicev1.Task{Type: "reindex", State: sluicev1.TaskState_TASK_STATE_FAILED, Error: aborted,
				Reindex: &sluicev1.ReindexStatus{Total: 10, Created: 4, VersionConflicts: 1}}, http.StatusConflict, "version_conflict_engine_exception"},
		{"reindex with a document failing", "/_reindex", `{"source":{"index":"a"},"dest":{"index":"b"}}`,
			&sluicev1.Task{Type: "reindex", State: sluicev1.TaskState_TASK_STATE_SUCCEEDED, Reindex: &sluicev1.ReindexStatus{Total: 10, Created: 9, Failures: 1,
				FailureSamples: []*sluicev1.ShardFailure{{Index: "b", Error: &sluicev1.ErrorDetail{Code: int32(codes.InvalidArgument), Reason: "bad"}}}}},
			http.StatusOK, "illegal_argument_exception"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			api := New(Config{Client: taskStub{task: tt.task}})
			rec := httptest.NewRecorder()
			api.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, tt.path, strings.NewReader(tt.body)))
			var out struct {
				VersionConflicts int64 `json:"version_conflicts"`
				Failures         []struct {
					Status int `json:"status"`
					Cause  struct {
						Type string `json:"type"`
					} `json:"cause"`
				} `json:"failures"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
				t.Fatalf("%v: %s", err, rec.Body)
			}
			if rec.Code != tt.code || len(out.Failures) != 1 || out.Failures[0].Cause.Type != tt.cause ||
				out.VersionConflicts != tt.task.GetReindex().GetVersionConflicts() {
				t.Errorf("%d %s", rec.Code, rec.Body)
			}
		})
	}
}
