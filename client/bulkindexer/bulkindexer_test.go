package bulkindexer_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/sluice-search/sluice/client/bulkindexer"
	"github.com/sluice-search/sluice/coordinator/datapath"
	"github.com/sluice-search/sluice/coordinator/datapath/datapathtest"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

func item(i int) *sluicev1.BulkItem {
	return &sluicev1.BulkItem{Action: sluicev1.BulkAction_BULK_ACTION_INDEX, Id: fmt.Sprintf("d%05d", i),
		Source: fmt.Appendf(nil, `{"title":"doc %d","n":%d}`, i, i)}
}

func TestLoadReportsBadItemsAndRetriesOverload(t *testing.T) {
	for _, tc := range []struct {
		name     string
		opts     datapath.Options
		workers  int
		retrying bool
	}{
		{name: "plenty of room", workers: 4},
		// Each node admits one small group at a time and rejects at
		// once: batches keep bouncing and must be retried until done.
		{name: "overloaded", opts: datapath.Options{MaxInFlightBytesPerNode: 8 << 10, AdmissionWait: time.Microsecond, RetryAfter: time.Millisecond}, workers: 6, retrying: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := datapathtest.Start(t, 2, tc.opts)
			c.CreateIndex(t, "books", 4, nil)
			var mu sync.Mutex
			var failed []*sluicev1.BulkItemResult
			ix, err := bulkindexer.New(bulkindexer.Config{Client: c.Client, Index: "books", BatchDocs: 100, Workers: tc.workers,
				InitialBackoff: time.Millisecond, MaxBackoff: 100 * time.Millisecond, MaxRetries: 1000,
				OnError: func(_ *sluicev1.BulkItem, r *sluicev1.BulkItemResult) {
					mu.Lock()
					failed = append(failed, r)
					mu.Unlock()
				}})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			const n = 3000
			for i := range n {
				it := item(i)
				if i == 10 || i == 2000 {
					it.Source = []byte(`{"title": broken`)
				}
				if err := ix.Add(ctx, it); err != nil {
					t.Fatal(err)
				}
			}
			if err := ix.Close(ctx); err != nil {
				t.Fatal(err)
			}
			st := ix.Stats()
			if len(failed) != 2 || st.Failed != 2 || st.Created != n-2 || st.Added != n {
				t.Fatalf("stats %+v, failures %v", st, failed)
			}
			for _, r := range failed {
				if codes.Code(r.GetError().GetCode()) != codes.InvalidArgument {
					t.Fatalf("bad item reported as %v", r)
				}
			}
			if tc.retrying && st.Retries == 0 {
				t.Fatal("the overloaded cluster never pushed back")
			}
			if got := c.Count(t, "books", nil); got != n-2 {
				t.Fatalf("count = %d, want %d", got, n-2)
			}
		})
	}
}

// TestLoadWaitsForStartingShards: a load right after the index is
// created meets shards still starting (UNAVAILABLE items); they are
// retried, not reported as failed.
func TestLoadWaitsForStartingShards(t *testing.T) {
	c := datapathtest.Start(t, 2, datapath.Options{})
	ctx := context.Background()
	if _, err := c.Client.CreateIndex(ctx, &sluicev1.CreateIndexRequest{Name: "fresh",
		Settings: &sluicev1.IndexSettings{NumberOfShards: 4}}); err != nil {
		t.Fatal(err)
	}
	// Health reads the coordinator's state afresh, so its data path knows
	// the index (its shards still starting) when the load begins.
	if h, err := c.Client.ClusterHealth(ctx, &sluicev1.ClusterHealthRequest{Indices: []string{"fresh"}}); err != nil {
		t.Fatal(err)
	} else if h.GetStatus() == sluicev1.HealthStatus_HEALTH_STATUS_GREEN {
		t.Log("the shards started before the load: nothing to retry")
	}
	var failed atomic.Int64
	ix, err := bulkindexer.New(bulkindexer.Config{Client: c.Client, Index: "fresh", BatchDocs: 10, InitialBackoff: time.Millisecond,
		OnError: func(_ *sluicev1.BulkItem, r *sluicev1.BulkItemResult) {
			if failed.Add(1) == 1 {
				t.Errorf("failed: %v", r)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	const n = 200
	for i := range n {
		if err := ix.Add(ctx, item(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := ix.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if st := ix.Stats(); st.Created != n {
		t.Errorf("stats %+v, %d failed", st, failed.Load())
	}
}

// delayingBulker overloads every item of its first call, advertising a
// retry delay per item, and applies them after.
type delayingBulker struct {
	mu    sync.Mutex
	calls []time.Time
	delay time.Duration
}

func (b *delayingBulker) Bulk(_ context.Context, in *sluicev1.BulkRequest, _ ...grpc.CallOption) (*sluicev1.BulkResponse, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls = append(b.calls, time.Now())
	resp := &sluicev1.BulkResponse{}
	for _, it := range in.Items {
		r := &sluicev1.BulkItemResult{Id: it.Id, Status: sluicev1.BulkItemStatus_BULK_ITEM_STATUS_CREATED}
		if len(b.calls) == 1 {
			r.Status = sluicev1.BulkItemStatus_BULK_ITEM_STATUS_ERROR
			r.Error = &sluicev1.ErrorDetail{Code: int32(codes.ResourceExhausted), Reason: "busy", RetryDelay: durationpb.New(b.delay)}
		}
		resp.Items = append(resp.Items, r)
	}
	return resp, nil
}

// TestItemRetryDelayIsHonoured: items refused for overload are resent no
// sooner than their ErrorDetail.retry_delay says (less the jitter), even
// when the indexer's own backoff is much shorter.
func TestItemRetryDelayIsHonoured(t *testing.T) {
	b := &delayingBulker{delay: 400 * time.Millisecond}
	ix, err := bulkindexer.New(bulkindexer.Config{Client: b, Index: "x", Workers: 1, InitialBackoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 3 {
		if err := ix.Add(ctx, item(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := ix.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if st := ix.Stats(); st.Created != 3 || st.Retries != 3 {
		t.Fatalf("stats %+v", st)
	}
	if len(b.calls) != 2 {
		t.Fatalf("%d calls", len(b.calls))
	}
	if gap := b.calls[1].Sub(b.calls[0]); gap < 300*time.Millisecond {
		t.Fatalf("resent after %v; the items asked for %v", gap, b.delay)
	}
}

// TestInvalidUTF8FailsAlone: an item whose id is not UTF-8 cannot be
// encoded; it fails at once, alone, and its batch goes through.
func TestInvalidUTF8FailsAlone(t *testing.T) {
	b := &delayingBulker{}
	b.calls = []time.Time{{}} // past the first call: apply everything
	var failed []*sluicev1.BulkItemResult
	ix, err := bulkindexer.New(bulkindexer.Config{Client: b, Index: "x", Workers: 1,
		OnError: func(_ *sluicev1.BulkItem, r *sluicev1.BulkItemResult) { failed = append(failed, r) }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	bad := item(1)
	bad.Id = "d\xff"
	for _, it := range []*sluicev1.BulkItem{item(0), bad, item(2)} {
		if err := ix.Add(ctx, it); err != nil {
			t.Fatal(err)
		}
	}
	if err := ix.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if st := ix.Stats(); st.Created != 2 || st.Failed != 1 || st.Added != 3 {
		t.Fatalf("stats %+v", st)
	}
	if len(failed) != 1 || failed[0].Error.Field != "_id" || codes.Code(failed[0].Error.Code) != codes.InvalidArgument {
		t.Fatalf("failures %v", failed)
	}
}

// TestBothUpdateKinds: the indexer sends in-place doc-values updates and
// partial updates like any item and counts their outcomes: updated, and
// noop for a partial update that changes nothing (not a failure).
func TestBothUpdateKinds(t *testing.T) {
	c := datapathtest.Start(t, 1, datapath.Options{})
	no := false
	c.CreateIndex(t, "books", 2, &sluicev1.Mapping{Properties: map[string]*sluicev1.FieldMapping{
		"title": {Type: sluicev1.FieldType_FIELD_TYPE_TEXT},
		"n":     {Type: sluicev1.FieldType_FIELD_TYPE_LONG},
		"price": {Type: sluicev1.FieldType_FIELD_TYPE_LONG, Index: &no},
	}})
	ctx := context.Background()
	run := func(items ...*sluicev1.BulkItem) bulkindexer.Stats {
		t.Helper()
		ix, err := bulkindexer.New(bulkindexer.Config{Client: c.Client, Index: "books", BatchDocs: 10,
			OnError: func(it *sluicev1.BulkItem, r *sluicev1.BulkItemResult) { t.Errorf("%s: %v", it.Id, r.Error) }})
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range items {
			if err := ix.Add(ctx, it); err != nil {
				t.Fatal(err)
			}
		}
		if err := ix.Close(ctx); err != nil {
			t.Fatal(err)
		}
		return ix.Stats()
	}
	var items []*sluicev1.BulkItem
	for i := range 20 {
		it := item(i)
		it.Source = fmt.Appendf(nil, `{"title":"doc %d","n":%d,"price":%d}`, i, i, i)
		items = append(items, it)
	}
	run(items...)
	items = items[:0]
	for i := range 20 {
		id := fmt.Sprintf("d%05d", i)
		switch i % 3 {
		case 0:
			items = append(items, &sluicev1.BulkItem{Action: sluicev1.BulkAction_BULK_ACTION_UPDATE_DOC_VALUES, Id: id, Source: []byte(`{"price":100}`)})
		case 1:
			items = append(items, &sluicev1.BulkItem{Action: sluicev1.BulkAction_BULK_ACTION_UPDATE, Id: id, Source: []byte(`{"title":"edited"}`)})
		default:
			items = append(items, &sluicev1.BulkItem{Action: sluicev1.BulkAction_BULK_ACTION_UPDATE, Id: id, Source: fmt.Appendf(nil, `{"n":%d}`, i)})
		}
	}
	if st := run(items...); st.Updated != 7+7 || st.Noop != 6 || st.Failed != 0 {
		t.Fatalf("stats %+v: want 14 updated, 6 noop", st)
	}
}
