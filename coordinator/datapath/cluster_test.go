package datapath_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/sluice-search/sluice/client"
	"github.com/sluice-search/sluice/cluster/routing"
	"github.com/sluice-search/sluice/coordinator/datapath"
	"github.com/sluice-search/sluice/coordinator/datapath/datapathtest"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// testCluster is a real cluster (datapathtest) with its data path.
type testCluster struct {
	*datapathtest.Cluster
	dp     *datapath.DataPath
	client *client.Client
}

func startCluster(t *testing.T) *testCluster {
	c := datapathtest.Start(t, 3, datapath.Options{})
	return &testCluster{Cluster: c, dp: c.DataPath, client: c.Client}
}

func docItems(from, to int) []*sluicev1.BulkItem {
	items := make([]*sluicev1.BulkItem, 0, to-from)
	for i := from; i < to; i++ {
		items = append(items, &sluicev1.BulkItem{Action: sluicev1.BulkAction_BULK_ACTION_INDEX, Id: fmt.Sprintf("doc-%04d", i),
			Source: fmt.Appendf(nil, `{"title":"document %d about %s","n":%d,"tag":"t%d"}`, i, []string{"rivers", "mountains", "lakes"}[i%3], i, i%7)})
	}
	return items
}

func textMapping() *sluicev1.Mapping {
	return &sluicev1.Mapping{Properties: map[string]*sluicev1.FieldMapping{
		"title": {Type: sluicev1.FieldType_FIELD_TYPE_TEXT},
		"n":     {Type: sluicev1.FieldType_FIELD_TYPE_LONG},
		"tag":   {Type: sluicev1.FieldType_FIELD_TYPE_KEYWORD},
	}}
}

func count(t *testing.T, c *client.Client, index string, q *sluicev1.Query) int64 {
	t.Helper()
	r, err := c.Search(context.Background(), &sluicev1.SearchRequest{Indices: []string{index}, Query: q, TrackTotalHits: -1, Size: proto.Int32(0)})
	if err != nil {
		t.Fatal(err)
	}
	if r.Shards.Failed != 0 {
		t.Fatalf("shard failures: %v", r.Shards.Failures)
	}
	if len(r.Hits) != 0 {
		t.Fatalf("size 0 returned %d hits; it should only count", len(r.Hits))
	}
	return r.Total.Value
}

func TestClusterDataPath(t *testing.T) {
	tc := startCluster(t)
	ctx := context.Background()
	const index, shards, docs = "docs", 4, 1000
	tc.CreateIndex(t, index, shards, textMapping())

	// Bulk in batches; the last waits for visibility.
	for from := 0; from < docs; from += 250 {
		refresh := sluicev1.RefreshPolicy_REFRESH_POLICY_NONE
		if from+250 >= docs {
			refresh = sluicev1.RefreshPolicy_REFRESH_POLICY_WAIT_FOR
		}
		resp, err := tc.client.Bulk(ctx, &sluicev1.BulkRequest{Index: index, Items: docItems(from, from+250), Refresh: refresh})
		if err != nil {
			t.Fatal(err)
		}
		if resp.Errors {
			t.Fatalf("bulk errors: %v", resp.Items[0])
		}
	}
	if _, err := tc.client.Refresh(ctx, &sluicev1.RefreshRequest{Indices: []string{index}}); err != nil {
		t.Fatal(err)
	}
	if n := count(t, tc.client, index, nil); n != docs {
		t.Fatalf("count = %d, want %d", n, docs)
	}

	t.Run("search", func(t *testing.T) {
		q := &sluicev1.Query{Kind: &sluicev1.Query_Match{Match: &sluicev1.MatchQuery{Field: "title", Query: "lakes"}}}
		if n := count(t, tc.client, index, q); n != docs/3 {
			t.Fatalf("lakes: %d, want %d", n, docs/3)
		}
		r, err := tc.client.Search(ctx, &sluicev1.SearchRequest{Indices: []string{index}, Size: proto.Int32(5), From: 3,
			Sort: []*sluicev1.SortField{{Field: "n", Order: sluicev1.SortOrder_SORT_ORDER_DESC}}})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, h := range r.Hits {
			if len(h.Source) == 0 {
				t.Fatalf("hit %s without source", h.Id)
			}
			got = append(got, h.Id)
		}
		if want := []string{"doc-0996", "doc-0995", "doc-0994", "doc-0993", "doc-0992"}; !slices.Equal(got, want) {
			t.Fatalf("sorted page = %v, want %v", got, want)
		}
		_, err = tc.client.Search(ctx, &sluicev1.SearchRequest{Indices: []string{index},
			Query: &sluicev1.Query{Kind: &sluicev1.Query_Match{Match: &sluicev1.MatchQuery{Field: "nope", Query: "x"}}}})
		if status.Code(err) != codes.InvalidArgument {
			t.Fatalf("unknown field: %v", err)
		}
		g, err := tc.client.Get(ctx, &sluicev1.GetRequest{Index: index, Id: "doc-0042"})
		if err != nil || !g.Found || string(g.Source) != string(docItems(42, 43)[0].Source) {
			t.Fatalf("get: %v %v", g, err)
		}
	})

	t.Run("docvalue_fields", func(t *testing.T) {
		r, err := tc.client.Search(ctx, &sluicev1.SearchRequest{Indices: []string{index}, Size: proto.Int32(2),
			Sort: []*sluicev1.SortField{{Field: "n", Order: sluicev1.SortOrder_SORT_ORDER_DESC}}, DocvalueFields: []string{"n", "tag", "unmapped"}})
		if err != nil {
			t.Fatal(err)
		}
		for i, h := range r.Hits {
			n := int64(docs - 1 - i)
			if fs := h.Fields; len(fs) != 2 || fs["n"].GetLongValue() != n || string(fs["tag"].GetKeywordValue()) != fmt.Sprintf("t%d", n%7) {
				t.Errorf("hit %s: fields %v, want n %d and tag t%d", h.Id, fs, n, n%7)
			}
		}
		_, err = tc.client.Search(ctx, &sluicev1.SearchRequest{Indices: []string{index}, DocvalueFields: []string{"title"}})
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "title") {
			t.Errorf("docvalue_fields of a text field: %v, want InvalidArgument naming it", err)
		}
	})

	t.Run("partial update", func(t *testing.T) {
		up := sluicev1.BulkAction_BULK_ACTION_UPDATE
		resp, err := tc.client.Bulk(ctx, &sluicev1.BulkRequest{Index: index, Items: []*sluicev1.BulkItem{
			{Action: up, Id: "doc-0007", Source: []byte(`{"tag":"edited"}`)},
			{Action: up, Id: "new-doc", Source: []byte(`{"n":-1}`), DocAsUpsert: true},
			{Action: up, Source: []byte(`{"n":1}`)},
			{Action: sluicev1.BulkAction_BULK_ACTION_INDEX, Id: "x", Source: []byte(`{"n":1}`), Upsert: []byte(`{}`)},
		}, Refresh: sluicev1.RefreshPolicy_REFRESH_POLICY_WAIT_FOR})
		if err != nil {
			t.Fatal(err)
		}
		for i, want := range []sluicev1.BulkItemStatus{sluicev1.BulkItemStatus_BULK_ITEM_STATUS_UPDATED, sluicev1.BulkItemStatus_BULK_ITEM_STATUS_CREATED,
			sluicev1.BulkItemStatus_BULK_ITEM_STATUS_ERROR, sluicev1.BulkItemStatus_BULK_ITEM_STATUS_ERROR} {
			if r := resp.Items[i]; r.Status != want || want == sluicev1.BulkItemStatus_BULK_ITEM_STATUS_ERROR && codes.Code(r.GetError().GetCode()) != codes.InvalidArgument {
				t.Errorf("item %d: %v, want %v", i, r, want)
			}
		}
		g, err := tc.client.Get(ctx, &sluicev1.GetRequest{Index: index, Id: "doc-0007"})
		if err != nil || string(g.Source) != `{"title":"document 7 about mountains","n":7,"tag":"edited"}` {
			t.Fatalf("get after the update: %s %v", g.GetSource(), err)
		}
		// Put the doc back as it was for the subtests that follow.
		if _, err := tc.client.Bulk(ctx, &sluicev1.BulkRequest{Index: index, Items: append(docItems(7, 8),
			&sluicev1.BulkItem{Action: sluicev1.BulkAction_BULK_ACTION_DELETE, Id: "new-doc"}), Refresh: sluicev1.RefreshPolicy_REFRESH_POLICY_WAIT_FOR}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("if_seq_no", func(t *testing.T) {
		g, err := tc.client.Get(ctx, &sluicev1.GetRequest{Index: index, Id: "doc-0007"})
		if err != nil || !g.Found || g.PrimaryTerm < 1 {
			t.Fatalf("get: %v %v", g, err)
		}
		idx := sluicev1.BulkAction_BULK_ACTION_INDEX
		src := []byte(`{"title":"document 7 about mountains","n":7}`)
		stale := g.SeqNo - 1
		resp, err := tc.client.Bulk(ctx, &sluicev1.BulkRequest{Index: index, Items: []*sluicev1.BulkItem{
			{Action: idx, Id: "doc-0007", Source: src, IfSeqNo: &g.SeqNo, IfPrimaryTerm: &g.PrimaryTerm},
			{Action: idx, Id: "doc-0007", Source: src, IfSeqNo: &g.SeqNo, IfPrimaryTerm: &g.PrimaryTerm}, // now stale
			{Action: idx, Id: "doc-0007", Source: src, IfSeqNo: &stale},
			{Action: sluicev1.BulkAction_BULK_ACTION_CREATE, Id: "doc-0007", Source: src, IfSeqNo: &g.SeqNo, IfPrimaryTerm: &g.PrimaryTerm},
			{Action: idx, Id: "doc-0007", Source: src, RetryOnConflict: 3},
			{Action: sluicev1.BulkAction_BULK_ACTION_UPDATE, Id: "doc-0007", Source: []byte(`{"n":8}`), IfSeqNo: &g.SeqNo, IfPrimaryTerm: &g.PrimaryTerm, RetryOnConflict: 3},
		}})
		if err != nil {
			t.Fatal(err)
		}
		if r := resp.Items[0]; r.Status != sluicev1.BulkItemStatus_BULK_ITEM_STATUS_UPDATED || r.SeqNo <= g.SeqNo || r.PrimaryTerm != g.PrimaryTerm {
			t.Fatalf("conditional index: %v", r)
		}
		if r := resp.Items[1]; codes.Code(r.GetError().GetCode()) != codes.Aborted || r.SeqNo != resp.Items[0].SeqNo {
			t.Fatalf("stale conditional index: %v, want ABORTED with the current seq_no %d", r, resp.Items[0].SeqNo)
		}
		for i, field := range map[int]string{2: "if_primary_term", 3: "if_seq_no", 4: "retry_on_conflict", 5: "retry_on_conflict"} {
			if r := resp.Items[i]; codes.Code(r.GetError().GetCode()) != codes.InvalidArgument || r.GetError().GetField() != field {
				t.Errorf("item %d: %v, want INVALID_ARGUMENT naming %s", i, r, field)
			}
		}
	})

	t.Run("pit and search_after", func(t *testing.T) {
		pit, err := tc.client.OpenPointInTime(ctx, &sluicev1.OpenPointInTimeRequest{Indices: []string{index}, KeepAlive: durationpb.New(time.Minute)})
		if err != nil {
			t.Fatal(err)
		}
		// A write after the PIT is not seen through it.
		if _, err := tc.client.Bulk(ctx, &sluicev1.BulkRequest{Index: index, Items: docItems(5000, 5001), Refresh: sluicev1.RefreshPolicy_REFRESH_POLICY_IMMEDIATE}); err != nil {
			t.Fatal(err)
		}
		sort := []*sluicev1.SortField{{Field: "tag"}, {Field: "_shard_doc"}}
		seen := map[string]bool{}
		var after *sluicev1.SearchAfter
		var last *sluicev1.Hit
		for {
			r, err := tc.client.Search(ctx, &sluicev1.SearchRequest{Pit: &sluicev1.PointInTime{Id: pit.Id}, Size: proto.Int32(77), Sort: sort, SearchAfter: after})
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Hits) == 0 {
				break
			}
			for _, h := range r.Hits {
				if seen[h.Id] {
					t.Fatalf("%s seen twice", h.Id)
				}
				seen[h.Id] = true
				if last != nil && string(last.Sort[0].GetKeywordValue()) > string(h.Sort[0].GetKeywordValue()) {
					t.Fatalf("out of order: %v then %v", last.Sort, h.Sort)
				}
				last = h
			}
			after = &sluicev1.SearchAfter{Values: last.Sort}
		}
		if len(seen) != docs {
			t.Fatalf("paged %d docs through the PIT, want %d", len(seen), docs)
		}
		cl, err := tc.client.ClosePointInTime(ctx, &sluicev1.ClosePointInTimeRequest{Id: pit.Id})
		if err != nil || !cl.Succeeded {
			t.Fatalf("close pit: %v %v", cl, err)
		}
		_, err = tc.client.Search(ctx, &sluicev1.SearchRequest{Pit: &sluicev1.PointInTime{Id: pit.Id}})
		if status.Code(err) != codes.NotFound {
			t.Fatalf("search of a closed pit: %v", err)
		}
		tc.client.Bulk(ctx, &sluicev1.BulkRequest{Index: index, Refresh: sluicev1.RefreshPolicy_REFRESH_POLICY_IMMEDIATE,
			Items: []*sluicev1.BulkItem{{Action: sluicev1.BulkAction_BULK_ACTION_DELETE, Id: "doc-5000"}}})
	})

	t.Run("pit keep_alive from search", func(t *testing.T) {
		open := func() string {
			pit, err := tc.client.OpenPointInTime(ctx, &sluicev1.OpenPointInTimeRequest{Indices: []string{index}, KeepAlive: durationpb.New(time.Second)})
			if err != nil {
				t.Fatal(err)
			}
			return pit.Id
		}
		extended, plain := open(), open()
		defer tc.client.ClosePointInTime(ctx, &sluicev1.ClosePointInTimeRequest{Id: extended})
		search := func(id string, ka *durationpb.Duration) error {
			_, err := tc.client.Search(ctx, &sluicev1.SearchRequest{Pit: &sluicev1.PointInTime{Id: id, KeepAlive: ka}, Size: proto.Int32(1)})
			return err
		}
		if err := search(extended, durationpb.New(time.Minute)); err != nil {
			t.Fatal(err)
		}
		if err := search(plain, nil); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2500 * time.Millisecond) // > 1 s keep-alive + the nodes' 1 s reaper
		if err := search(extended, nil); err != nil {
			t.Errorf("a PIT searched with keep_alive 1m expired after its original 1s: %v", err)
		}
		if err := search(plain, nil); status.Code(err) != codes.NotFound {
			t.Errorf("a PIT with keep-alive 1s, unused for 2.5s: %v, want NotFound", err)
		}
		err := search(extended, durationpb.New(48*time.Hour))
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "pit.keep_alive") {
			t.Errorf("keep_alive 48h: %v, want InvalidArgument naming pit.keep_alive", err)
		}
		_, err = tc.client.OpenPointInTime(ctx, &sluicev1.OpenPointInTimeRequest{Indices: []string{index}, KeepAlive: durationpb.New(25 * time.Hour)})
		if status.Code(err) != codes.InvalidArgument {
			t.Errorf("open with keep_alive 25h: %v, want InvalidArgument", err)
		}
	})

	t.Run("sliced scroll exactly once", func(t *testing.T) {
		for _, max := range []int32{1, 2, shards, 2 * shards, 3*shards + 1} {
			seen := map[string]int{}
			var mu sync.Mutex
			var wg sync.WaitGroup
			for id := range max {
				wg.Go(func() {
					ids, total := scroll(t, tc.client, index, &sluicev1.Slice{Id: id, Max: max}, 2)
					if int64(len(ids)) != total {
						t.Errorf("slice %d/%d: %d docs, total %d", id, max, len(ids), total)
					}
					mu.Lock()
					defer mu.Unlock()
					for _, d := range ids {
						seen[d]++
					}
				})
			}
			wg.Wait()
			if len(seen) != docs {
				t.Fatalf("%d slices read %d distinct docs, want %d", max, len(seen), docs)
			}
			for d, n := range seen {
				if n != 1 {
					t.Fatalf("%d slices: %s read %d times", max, d, n)
				}
			}
		}
	})

	t.Run("routing stored and returned", func(t *testing.T) {
		// A separate index: the counts above stay exact.
		const routed = "routed"
		tc.CreateIndex(t, routed, shards, textMapping())
		p := routing.Params{Shards: shards, RoutingShards: shards}
		want := map[string]string{} // id -> routing
		items := docItems(0, 60)
		for i, it := range items {
			if i%3 != 0 {
				it.Routing = fmt.Sprintf("tenant-%d", i%4)
			}
			want[it.Id] = it.Routing
		}
		resp, err := tc.client.Bulk(ctx, &sluicev1.BulkRequest{Index: routed, Items: items, Refresh: sluicev1.RefreshPolicy_REFRESH_POLICY_WAIT_FOR})
		if err != nil || resp.Errors {
			t.Fatalf("bulk: %v %v", resp, err)
		}
		for i, r := range resp.Items {
			key := items[i].Id
			if items[i].Routing != "" {
				key = items[i].Routing
			}
			if int(r.Shard) != routing.Shard(key, p) {
				t.Fatalf("%s went to shard %d, routes to %d", r.Id, r.Shard, routing.Shard(key, p))
			}
		}
		for id, r := range want {
			g, err := tc.client.Get(ctx, &sluicev1.GetRequest{Index: routed, Id: id, Routing: r})
			if err != nil || !g.Found || g.Routing != r {
				t.Fatalf("get %s routing %q: %v %v", id, r, g, err)
			}
			// Without its routing a get looks in the shard of the id.
			g, err = tc.client.Get(ctx, &sluicev1.GetRequest{Index: routed, Id: id})
			if err != nil || g.Found != (routing.Shard(id, p) == routing.Shard(cmp.Or(r, id), p)) {
				t.Fatalf("get %s without routing: %v %v", id, g, err)
			}
		}
		sr, err := tc.client.Search(ctx, &sluicev1.SearchRequest{Indices: []string{routed}, Routing: "tenant-1", Size: proto.Int32(100)})
		if err != nil || len(sr.Hits) == 0 {
			t.Fatalf("routed search: %v %v", sr, err)
		}
		for _, h := range sr.Hits {
			if h.Routing != want[h.Id] || int(h.Shard) != routing.Shard("tenant-1", p) {
				t.Fatalf("hit %s: routing %q shard %d, want %q shard %d", h.Id, h.Routing, h.Shard, want[h.Id], routing.Shard("tenant-1", p))
			}
		}
		stream, err := tc.client.Scroll(ctx, &sluicev1.ScrollRequest{Indices: []string{routed}})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for {
			r, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range r.Docs {
				if d.Routing != want[d.Id] {
					t.Fatalf("scroll %s: routing %q, want %q", d.Id, d.Routing, want[d.Id])
				}
				n++
			}
		}
		if n != len(want) {
			t.Fatalf("scroll read %d docs, want %d", n, len(want))
		}
	})

	t.Run("per-item errors", func(t *testing.T) {
		items := append(docItems(2000, 2003),
			&sluicev1.BulkItem{Action: sluicev1.BulkAction_BULK_ACTION_INDEX, Id: "bad-json", Source: []byte(`{"title": "oops`)},
			&sluicev1.BulkItem{Action: sluicev1.BulkAction_BULK_ACTION_INDEX, Id: "bad-type", Source: []byte(`{"n": "many"}`)},
			&sluicev1.BulkItem{Action: sluicev1.BulkAction_BULK_ACTION_INDEX, Index: "no-such-index", Id: "x", Source: []byte(`{}`)},
			&sluicev1.BulkItem{Action: sluicev1.BulkAction_BULK_ACTION_INDEX, Index: "Bad*Name", Id: "y", Source: []byte(`{}`)},
			&sluicev1.BulkItem{Action: sluicev1.BulkAction_BULK_ACTION_INDEX, Id: "new-field", Source: []byte(`{"color": 7}`)},
			&sluicev1.BulkItem{Action: sluicev1.BulkAction_BULK_ACTION_INDEX, Id: "clash", Source: []byte(`{"color": "red"}`)},
		)
		resp, err := tc.client.Bulk(ctx, &sluicev1.BulkRequest{Index: index, Items: items, Refresh: sluicev1.RefreshPolicy_REFRESH_POLICY_WAIT_FOR})
		if err != nil {
			t.Fatal(err)
		}
		want := []codes.Code{codes.OK, codes.OK, codes.OK, codes.InvalidArgument, codes.InvalidArgument, codes.NotFound, codes.InvalidArgument}
		for i, w := range want {
			r := resp.Items[i]
			if got := codes.Code(r.GetError().GetCode()); got != w {
				t.Errorf("item %d (%s): code %v, want %v: %v", i, r.Id, got, w, r)
			}
		}
		// "color" arrives as long on one shard and as text on another at
		// once: exactly one wins the cluster mapping, the other is rejected.
		wantType := sluicev1.FieldType_FIELD_TYPE_LONG
		long, text := resp.Items[7], resp.Items[8]
		if long.Status == sluicev1.BulkItemStatus_BULK_ITEM_STATUS_ERROR {
			long, text, wantType = text, long, sluicev1.FieldType_FIELD_TYPE_TEXT
		}
		if long.Status != sluicev1.BulkItemStatus_BULK_ITEM_STATUS_CREATED || codes.Code(text.GetError().GetCode()) != codes.InvalidArgument {
			t.Errorf("racing dynamic field: %v / %v", long, text)
		}
		if n := count(t, tc.client, index, nil); n != docs+4 {
			t.Fatalf("count after the mixed bulk = %d, want %d", n, docs+4)
		}
		info, err := tc.client.GetIndex(ctx, &sluicev1.GetIndexRequest{Name: index, IncludeStats: true})
		if err != nil {
			t.Fatal(err)
		}
		if f := info.Index.Mapping.Properties["color"]; f.GetType() != wantType {
			t.Fatalf("dynamic field in the cluster mapping: %v", f)
		}
		if info.Index.DocsCount != docs+4 {
			t.Fatalf("index stats docs_count = %d, want %d", info.Index.DocsCount, docs+4)
		}
	})

	t.Run("overload is RESOURCE_EXHAUSTED with RetryInfo", func(t *testing.T) {
		// Fill every node's budget, as concurrent bulks would.
		var held []func()
		for _, n := range tc.Nodes {
			release, ok := datapath.HoldBudget(tc.dp, n.ID())
			if !ok {
				t.Fatal("budget already in use")
			}
			held = append(held, release)
		}
		_, err := tc.client.Bulk(ctx, &sluicev1.BulkRequest{Index: index, Items: docItems(3000, 3010)})
		for _, release := range held {
			release()
		}
		st := status.Convert(err)
		if st.Code() != codes.ResourceExhausted {
			t.Fatalf("bulk into full budgets: %v", err)
		}
		var ri *errdetails.RetryInfo
		for _, d := range st.Details() {
			if r, ok := d.(*errdetails.RetryInfo); ok {
				ri = r
			}
		}
		if ri == nil || ri.RetryDelay.AsDuration() <= 0 {
			t.Fatalf("no RetryInfo in %v", st.Details())
		}
		// Nothing was applied; after the budget frees, the retry works.
		g, _ := tc.client.Get(ctx, &sluicev1.GetRequest{Index: index, Id: "doc-3000", Refresh: true})
		if g.GetFound() {
			t.Fatal("a rejected item was applied")
		}
		resp, err := tc.client.Bulk(ctx, &sluicev1.BulkRequest{Index: index, Items: docItems(3000, 3010)})
		if err != nil || resp.Errors {
			t.Fatalf("retry: %v %v", resp, err)
		}
	})
}

// scroll reads a whole (sliced) scroll, breaking the stream every
// `restart` batches and resuming from the cursor.
func scroll(t *testing.T, c *client.Client, index string, sl *sluicev1.Slice, restart int) (ids []string, total int64) {
	t.Helper()
	var cursor []byte
	for {
		ctx, cancel := context.WithCancel(context.Background())
		stream, err := c.Scroll(ctx, &sluicev1.ScrollRequest{Indices: []string{index}, Slice: sl, BatchSize: 50, Cursor: cursor})
		if err != nil {
			cancel()
			t.Error(err)
			return
		}
		batches := 0
		for {
			r, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				cancel()
				return ids, total
			}
			if err != nil {
				cancel()
				t.Error(err)
				return
			}
			total = r.Total
			for _, d := range r.Docs {
				ids = append(ids, d.Id)
			}
			cursor = r.Cursor
			if batches++; batches == restart && len(r.Docs) > 0 {
				break
			}
		}
		cancel()
	}
}
