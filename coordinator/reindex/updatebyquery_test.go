package reindex_test

import (
	"context"
	"fmt"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// TestUpdateByQuery runs update-by-query tasks on a real cluster: the
// matching documents (and only they) get the new value in place, over
// several slices and shards; a throttled task can be cancelled midway;
// bad requests are refused naming the field.
func TestUpdateByQuery(t *testing.T) {
	tc := startCluster(t)
	ctx := context.Background()
	long, kw := sluicev1.FieldType_FIELD_TYPE_LONG, sluicev1.FieldType_FIELD_TYPE_KEYWORD
	if _, err := tc.cl.CreateIndex(ctx, &sluicev1.CreateIndexRequest{Name: "shop", WaitForActiveShards: true,
		Settings: &sluicev1.IndexSettings{NumberOfShards: 2},
		Mapping: &sluicev1.Mapping{Dynamic: sluicev1.DynamicMapping_DYNAMIC_MAPPING_STRICT, Properties: map[string]*sluicev1.FieldMapping{
			"price": {Type: long, Index: new(false)}, "tag": {Type: kw}}}}); err != nil {
		t.Fatal(err)
	}
	tc.waitGreen("shop")
	const n = 600
	var items []*sluicev1.BulkItem
	for i := range n {
		items = append(items, &sluicev1.BulkItem{Action: sluicev1.BulkAction_BULK_ACTION_INDEX, Id: fmt.Sprintf("p%04d", i),
			Source: fmt.Appendf(nil, `{"price":%d,"tag":"t%d"}`, i, i%3)})
	}
	if resp, err := tc.cl.Bulk(ctx, &sluicev1.BulkRequest{Index: "shop", Items: items, Refresh: sluicev1.RefreshPolicy_REFRESH_POLICY_IMMEDIATE}); err != nil || resp.Errors {
		t.Fatalf("bulk: %v %v", err, resp)
	}
	// prices reads every document's current price (docvalue_fields).
	prices := func() map[string]int64 {
		t.Helper()
		r, err := tc.cl.Search(ctx, &sluicev1.SearchRequest{Indices: []string{"shop"}, Size: new(int32(n)), DocvalueFields: []string{"price"}})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]int64{}
		for _, h := range r.Hits {
			out[h.Id] = h.Fields["price"].GetLongValue()
		}
		return out
	}
	tag := func(v string) *sluicev1.Query {
		return &sluicev1.Query{Kind: &sluicev1.Query_Term{Term: &sluicev1.TermQuery{Field: "tag",
			Value: &sluicev1.FieldValue{Kind: &sluicev1.FieldValue_StringValue{StringValue: v}}}}}
	}

	t.Run("sets the matching documents", func(t *testing.T) {
		resp, err := tc.cl.UpdateByQuery(ctx, &sluicev1.UpdateByQueryRequest{Index: "shop", Query: tag("t1"),
			DocValues: []byte(`{"price":-1}`), Slices: 4, WaitForCompletion: true})
		if err != nil {
			t.Fatal(err)
		}
		task := tc.wait(resp.Task.Id)
		succeeded(t, task)
		if task.Type != "update_by_query" || task.Reindex.Updated != n/3 || task.Reindex.Total != n/3 {
			t.Fatalf("task %s: updated %d of %d, want %d", task.Type, task.Reindex.Updated, task.Reindex.Total, n/3)
		}
		got := prices()
		for i := range n {
			id, want := fmt.Sprintf("p%04d", i), int64(i)
			if i%3 == 1 {
				want = -1
			}
			if got[id] != want {
				t.Fatalf("%s: price %d, want %d", id, got[id], want)
			}
		}
	})

	// A BASELINE reindex would copy _source, whose prices are as indexed:
	// refused, where the data nodes' copies carry the current values.
	t.Run("no BASELINE copy of stale values", func(t *testing.T) {
		_, err := tc.cl.Reindex(ctx, &sluicev1.ReindexRequest{Source: &sluicev1.ReindexSource{Index: "shop"},
			Dest: &sluicev1.ReindexDestination{Index: "shop-copy"}, Mode: sluicev1.ReindexMode_REINDEX_MODE_BASELINE})
		if status.Code(err) != codes.InvalidArgument || !containsField(err, "mode") {
			t.Fatalf("BASELINE reindex of an index with in-place updates: %v, want INVALID_ARGUMENT naming mode", err)
		}
		if _, err := tc.cl.GetIndex(ctx, &sluicev1.GetIndexRequest{Name: "shop-copy"}); status.Code(err) != codes.NotFound {
			t.Fatalf("the refused reindex left its destination behind: %v", err)
		}
	})

	t.Run("throttled, cancelled", func(t *testing.T) {
		resp, err := tc.cl.UpdateByQuery(ctx, &sluicev1.UpdateByQueryRequest{Index: "shop", DocValues: []byte(`{"price":7}`), RequestsPerSecond: 100})
		if err != nil {
			t.Fatal(err)
		}
		tc.waitProgress(resp.Task.Id, 10)
		if _, err := tc.cl.CancelTask(ctx, &sluicev1.CancelTaskRequest{Id: resp.Task.Id}); err != nil {
			t.Fatal(err)
		}
		task := tc.wait(resp.Task.Id)
		if task.State != sluicev1.TaskState_TASK_STATE_CANCELLED {
			t.Fatalf("task ended %v: %v", task.State, task.Error)
		}
		sevens := 0
		for _, p := range prices() {
			if p == 7 {
				sevens++
			}
		}
		// 100/s over the ~second before the cancel: some documents, far from all.
		if sevens < 10 || sevens >= n {
			t.Fatalf("%d of %d documents updated before the cancel", sevens, n)
		}
	})

	t.Run("refused", func(t *testing.T) {
		for _, tt := range []struct {
			req   *sluicev1.UpdateByQueryRequest
			field string
		}{
			{&sluicev1.UpdateByQueryRequest{Index: "shop"}, "doc_values"},
			{&sluicev1.UpdateByQueryRequest{Index: "shop", DocValues: []byte(`{"tag":"x"}`)}, "doc_values"},
			{&sluicev1.UpdateByQueryRequest{Index: "shop", DocValues: []byte(`{"price":1}`), Slices: -1}, "slices"},
		} {
			_, err := tc.cl.UpdateByQuery(ctx, tt.req)
			if status.Code(err) != codes.InvalidArgument || !containsField(err, tt.field) {
				t.Errorf("%v: %v, want INVALID_ARGUMENT naming %s", tt.req, err, tt.field)
			}
		}
	})
}

// containsField reports whether err's BadRequest details name field.
func containsField(err error, field string) bool {
	for _, d := range status.Convert(err).Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			for _, v := range br.FieldViolations {
				if v.Field == field {
					return true
				}
			}
		}
	}
	return false
}
