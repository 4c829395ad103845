package esapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

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
