package esapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"google.golang.org/grpc"

	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// stubClient answers Get and ClusterHealth with canned responses (a
// narrow fake: the rest of the API is exercised against a real cluster by
// e2e's client suites).
type stubClient struct {
	sluicev1.SluiceClient
	get    *sluicev1.GetResponse
	health *sluicev1.ClusterHealthResponse
}

func (c stubClient) Get(context.Context, *sluicev1.GetRequest, ...grpc.CallOption) (*sluicev1.GetResponse, error) {
	return c.get, nil
}

func (c stubClient) ClusterHealth(context.Context, *sluicev1.ClusterHealthRequest, ...grpc.CallOption) (*sluicev1.ClusterHealthResponse, error) {
	return c.health, nil
}

// TestGetVersions: a found document's answer has its _seq_no and
// _primary_term; one of a segment written before versions were stored
// (seq_no -2, the cluster's unassigned) has them left out, as Elasticsearch
// only answers unassigned for a document that does not exist.
func TestGetVersions(t *testing.T) {
	for _, tt := range []struct {
		name string
		resp *sluicev1.GetResponse
		want string
	}{
		{"versioned", &sluicev1.GetResponse{Found: true, Index: "i", Id: "1", Source: []byte(`{}`), SeqNo: 7, PrimaryTerm: 2},
			`{"_index":"i","_id":"1","_seq_no":7,"_primary_term":2,"found":true,"_source":{}}`},
		{"before versions", &sluicev1.GetResponse{Found: true, Index: "i", Id: "1", Source: []byte(`{}`), SeqNo: -2},
			`{"_index":"i","_id":"1","found":true,"_source":{}}`},
		{"missing", &sluicev1.GetResponse{Index: "i", Id: "1", SeqNo: -2},
			`{"_index":"i","_id":"1","found":false}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			api := New(Config{Client: stubClient{get: tt.resp}})
			rec := httptest.NewRecorder()
			api.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/i/_doc/1", nil))
			if got := rec.Body.String(); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

// taskStub answers Reindex and UpdateByQuery with a finished task.
type taskStub struct {
	stubClient
	task *sluicev1.Task
}

func (c taskStub) Reindex(context.Context, *sluicev1.ReindexRequest, ...grpc.CallOption) (*sluicev1.ReindexResponse, error) {
	return &sluicev1.ReindexResponse{Task: c.task}, nil
}

func (c taskStub) UpdateByQuery(context.Context, *sluicev1.UpdateByQueryRequest, ...grpc.CallOption) (*sluicev1.UpdateByQueryResponse, error) {
	return &sluicev1.UpdateByQueryResponse{Task: c.task}, nil
}
