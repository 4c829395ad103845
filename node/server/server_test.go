package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/sluice-search/sluice/node"
	"github.com/sluice-search/sluice/node/engine/document"
	"github.com/sluice-search/sluice/node/engine/mapping"
	"github.com/sluice-search/sluice/node/nodetest"
	"github.com/sluice-search/sluice/node/shard"
	nodev1 "github.com/sluice-search/sluice/proto/sluice/node/v1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

var sid = &nodev1.ShardID{IndexUuid: "uuid1", Shard: 0}

type fixture struct {
	host   *shard.Host
	client nodev1.NodeClient
}

// newFixture starts a real data node (node.New) with shard uuid1/0 of
// index books open on it, and a client of its Node service.
func newFixture(t *testing.T, hopts shard.HostOptions) *fixture {
	t.Helper()
	n := nodetest.Start(t, nil, node.Config{Shards: hopts})
	n.Open(t, shard.Meta{ID: shard.ID{IndexUUID: sid.IndexUuid}, Index: "books", RefreshInterval: -1})
	return &fixture{host: n.Shards(), client: nodev1.NewNodeClient(n.Conn)}
}

func indexItems(n int) []*sluicev1.BulkItem {
	items := make([]*sluicev1.BulkItem, n)
	for i := range items {
		items[i] = &sluicev1.BulkItem{Action: sluicev1.BulkAction_BULK_ACTION_INDEX, Id: fmt.Sprintf("d%03d", i),
			Source: fmt.Appendf(nil, `{"title":"doc number %d %s","n":%d,"tag":"t%d"}`, i, strings.Repeat("even ", 1-i%2), i, i%3)}
	}
	return items
}

func (f *fixture) bulk(t *testing.T, items []*sluicev1.BulkItem, refresh sluicev1.RefreshPolicy) []*sluicev1.BulkItemResult {
	t.Helper()
	resp, err := f.client.ShardBulk(context.Background(), &nodev1.ShardBulkRequest{Shard: sid, Index: "books", Items: items, Refresh: refresh})
	if err != nil {
		t.Fatal(err)
	}
	return resp.Items
}

func wantCode(t *testing.T, err error, c codes.Code) {
	t.Helper()
	if status.Code(err) != c {
		t.Fatalf("err = %v, want code %v", err, c)
	}
}

func TestBulkPerItemResultsAndVisibility(t *testing.T) {
	f := newFixture(t, shard.HostOptions{})
	items := indexItems(50)
	items = append(items,
		&sluicev1.BulkItem{Action: sluicev1.BulkAction_BULK_ACTION_INDEX, Id: "bad-json", Source: []byte(`{"title": "unterminated`)},
		&sluicev1.BulkItem{Action: sluicev1.BulkAction_BULK_ACTION_INDEX, Id: "bad-type", Source: []byte(`{"n": "many"}`)},
		&sluicev1.BulkItem{Action: sluicev1.BulkAction_BULK_ACTION_DELETE, Id: "d001"},
		&sluicev1.BulkItem{Action: sluicev1.BulkAction_BULK_ACTION_DELETE, Id: "never"},
		&sluicev1.BulkItem{Action: sluicev1.BulkAction_BULK_ACTION_CREATE, Id: "d002", Source: []byte(`{"n":1}`)},
		&sluicev1.BulkItem{Action: sluicev1.BulkAction_BULK_ACTION_INDEX, Id: "d003", Source: []byte(`{"n":3}`)},
	)
	res := f.bulk(t, items, sluicev1.RefreshPolicy_REFRESH_POLICY_WAIT_FOR)
	for i := range 50 {
		if res[i].Status != sluicev1.BulkItemStatus_BULK_ITEM_STATUS_CREATED || res[i].Id != items[i].Id {
			t.Fatalf("item %d: %v", i, res[i])
		}
	}
	want := []struct {
		status sluicev1.BulkItemStatus
		code   codes.Code
		field  string
	}{
		{sluicev1.BulkItemStatus_BULK_ITEM_STATUS_ERROR, codes.InvalidArgument, "title"}, // where the JSON broke
		{sluicev1.BulkItemStatus_BULK_ITEM_STATUS_ERROR, codes.InvalidArgument, "n"},
		{sluicev1.BulkItemStatus_BULK_ITEM_STATUS_DELETED, codes.OK, ""},
		{sluicev1.BulkItemStatus_BULK_ITEM_STATUS_NOT_FOUND, codes.OK, ""},
		{sluicev1.BulkItemStatus_BULK_ITEM_STATUS_ERROR, codes.AlreadyExists, ""},
		{sluicev1.BulkItemStatus_BULK_ITEM_STATUS_UPDATED, codes.OK, ""},
	}
	for i, w := range want {
		r := res[50+i]
		if r.Status != w.status || codes.Code(r.GetError().GetCode()) != w.code || r.GetError().GetField() != w.field {
			t.Errorf("item %s: %v; want %v code %v field %q", r.Id, r, w.status, w.code, w.field)
		}
	}
	// wait_for: everything acknowledged is visible without a refresh.
	st, err := f.client.ShardStats(context.Background(), &nodev1.ShardStatsRequest{Shard: sid})
	if err != nil {
		t.Fatal(err)
	}
	if st.NumDocs != 49 {
		t.Fatalf("num_docs after wait_for = %d, want 49", st.NumDocs)
	}
	g, err := f.client.ShardGet(context.Background(), &nodev1.ShardGetRequest{Shard: sid, Id: "d003"})
	if err != nil || !g.Found || string(g.Source) != `{"n":3}` {
		t.Fatalf("get d003: %v %v", g, err)
	}
	g, err = f.client.ShardGet(context.Background(), &nodev1.ShardGetRequest{Shard: sid, Id: "d001"})
	if err != nil || g.Found {
		t.Fatalf("get deleted d001: %v %v", g, err)
	}
}

func TestNotHere(t *testing.T) {
	f := newFixture(t, shard.HostOptions{})
	_, err := f.client.ShardGet(context.Background(), &nodev1.ShardGetRequest{Shard: &nodev1.ShardID{IndexUuid: "other"}, Id: "x"})
	wantCode(t, err, codes.NotFound)
	if !strings.Contains(status.Convert(err).Message(), shard.ErrNotHere.Error()) {
		t.Fatalf("message %q lacks %q", status.Convert(err).Message(), shard.ErrNotHere.Error())
	}
}

func TestSearchFetchAndSearchAfter(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, shard.HostOptions{})
	f.bulk(t, indexItems(95), sluicev1.RefreshPolicy_REFRESH_POLICY_IMMEDIATE)

	// Score order: "even" docs match both terms.
	q := &sluicev1.Query{Kind: &sluicev1.Query_Match{Match: &sluicev1.MatchQuery{Field: "title", Query: "even number"}}}
	resp, err := f.client.ShardSearch(ctx, &nodev1.ShardSearchRequest{Shard: sid, Query: q, Size: 5})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Total.Value != 95 || len(resp.Hits) != 5 || resp.ReaderId == 0 || resp.MaxScore != resp.Hits[0].Score {
		t.Fatalf("search: %v", resp)
	}
	docs := make([]int32, len(resp.Hits))
	for i, h := range resp.Hits {
		docs[i] = h.Doc
	}
	fr, err := f.client.ShardFetch(ctx, &nodev1.ShardFetchRequest{Shard: sid, ReaderId: resp.ReaderId, Docs: docs, FetchSource: true, Release: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range fr.Docs {
		if !strings.Contains(string(d.Source), "even") {
			t.Fatalf("top hit %s is not an even doc: %s", d.Id, d.Source)
		}
	}
	if n := f.host.PinnedReaders(); n != 0 {
		t.Fatalf("fetch with release left %d readers open", n)
	}

	// Page by n descending with search_after on a pinned reader; a write
	// after pinning is not seen.
	open, err := f.client.OpenShardReader(ctx, &nodev1.OpenShardReaderRequest{Shard: sid, KeepAlive: durationpb.New(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	f.bulk(t, []*sluicev1.BulkItem{{Action: sluicev1.BulkAction_BULK_ACTION_INDEX, Id: "late", Source: []byte(`{"n":1000}`)}}, sluicev1.RefreshPolicy_REFRESH_POLICY_IMMEDIATE)
	sort := []*sluicev1.SortField{{Field: "n", Order: sluicev1.SortOrder_SORT_ORDER_DESC}}
	var got []int64
	var after *sluicev1.SearchAfter
	for {
		r, err := f.client.ShardSearch(ctx, &nodev1.ShardSearchRequest{Shard: sid, ReaderId: open.ReaderId, Size: 10, Sort: sort, SearchAfter: after, TrackTotalHits: -1})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Hits) == 0 {
			break
		}
		for _, h := range r.Hits {
			got = append(got, h.Sort[0].GetLongValue())
		}
		after = &sluicev1.SearchAfter{Values: r.Hits[len(r.Hits)-1].Sort}
	}
	if len(got) != 95 || got[0] != 94 || got[94] != 0 || !slices.IsSortedFunc(got, func(a, b int64) int { return int(b - a) }) {
		t.Fatalf("paged values (%d): %v", len(got), got)
	}
	cr, err := f.client.CloseShardReader(ctx, &nodev1.CloseShardReaderRequest{Shard: sid, ReaderId: open.ReaderId})
	if err != nil || !cr.Succeeded {
		t.Fatalf("close: %v %v", cr, err)
	}
	_, err = f.client.ShardSearch(ctx, &nodev1.ShardSearchRequest{Shard: sid, ReaderId: open.ReaderId, Size: 1})
	wantCode(t, err, codes.NotFound)

	// Bad requests are INVALID_ARGUMENT.
	_, err = f.client.ShardSearch(ctx, &nodev1.ShardSearchRequest{Shard: sid, Size: 1, Sort: []*sluicev1.SortField{{Field: "title"}}})
	wantCode(t, err, codes.InvalidArgument)
	_, err = f.client.ShardSearch(ctx, &nodev1.ShardSearchRequest{Shard: sid, Size: 1,
		Query: &sluicev1.Query{Kind: &sluicev1.Query_Term{Term: &sluicev1.TermQuery{Field: "n", Value: &sluicev1.FieldValue{Kind: &sluicev1.FieldValue_StringValue{StringValue: "x"}}}}}})
	wantCode(t, err, codes.InvalidArgument)
}

func TestReaderCapAndKeepAlive(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, shard.HostOptions{MaxOpenReaders: 2, ReapInterval: 10 * time.Millisecond})
	open := func(ka time.Duration) (*nodev1.OpenShardReaderResponse, error) {
		return f.client.OpenShardReader(ctx, &nodev1.OpenShardReaderRequest{Shard: sid, KeepAlive: durationpb.New(ka)})
	}
	a, err := open(time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := open(50 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	_, err = open(time.Minute)
	wantCode(t, err, codes.ResourceExhausted)
	// The short one expires and frees a slot.
	deadline := time.Now().Add(5 * time.Second)
	for f.host.PinnedReaders() > 1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := open(time.Minute); err != nil {
		t.Fatalf("after keep-alive expiry: %v", err)
	}
	// The long one is still there.
	if _, err := f.client.ShardSearch(ctx, &nodev1.ShardSearchRequest{Shard: sid, ReaderId: a.ReaderId, Size: 1}); err != nil {
		t.Fatal(err)
	}
}

// scanAll reads a whole scan, restarting from the cursor every `restart`
// batches to check that resuming neither skips nor repeats.
func scanAll(t *testing.T, f *fixture, reader uint64, sl *sluicev1.Slice, q *sluicev1.Query, restart int) (ids []string, total int64) {
	t.Helper()
	var cursor []byte
	for {
		stream, err := f.client.ShardScan(context.Background(), &nodev1.ShardScanRequest{Shard: sid, ReaderId: reader, Slice: sl, Query: q, BatchSize: 7, Cursor: cursor, FetchSource: true})
		if err != nil {
			t.Fatal(err)
		}
		batches := 0
		for {
			r, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				return ids, total
			}
			if err != nil {
				t.Fatal(err)
			}
			total = r.Total
			if len(r.Docs) == 0 {
				return ids, total // the end, reached by a resumed scan
			}
			for _, d := range r.Docs {
				if len(d.Source) == 0 {
					t.Fatalf("doc %s without source", d.Id)
				}
				ids = append(ids, d.Id)
			}
			cursor = r.Cursor
			if batches++; restart > 0 && batches == restart {
				break
			}
		}
	}
}

func TestScanSlicesAreDisjointAndComplete(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, shard.HostOptions{})
	f.bulk(t, indexItems(200), sluicev1.RefreshPolicy_REFRESH_POLICY_IMMEDIATE)
	// A second segment with deletes and an update.
	f.bulk(t, []*sluicev1.BulkItem{
		{Action: sluicev1.BulkAction_BULK_ACTION_DELETE, Id: "d000"},
		{Action: sluicev1.BulkAction_BULK_ACTION_DELETE, Id: "d150"},
		{Action: sluicev1.BulkAction_BULK_ACTION_INDEX, Id: "d007", Source: []byte(`{"n":7}`)},
	}, sluicev1.RefreshPolicy_REFRESH_POLICY_IMMEDIATE)
	open, err := f.client.OpenShardReader(ctx, &nodev1.OpenShardReaderRequest{Shard: sid, KeepAlive: durationpb.New(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	if open.NumDocs != 198 {
		t.Fatalf("reader has %d docs, want 198", open.NumDocs)
	}
	all, total := scanAll(t, f, open.ReaderId, nil, nil, 3)
	if total != 198 || len(all) != 198 {
		t.Fatalf("full scan: %d docs, total %d", len(all), total)
	}
	slices.Sort(all)
	for _, max := range []int32{1, 2, 3, 7} {
		var union []string
		for id := range max {
			got, total := scanAll(t, f, open.ReaderId, &sluicev1.Slice{Id: id, Max: max}, nil, 2)
			if int64(len(got)) != total {
				t.Fatalf("slice %d/%d: %d docs, total says %d", id, max, len(got), total)
			}
			if max > 2 && len(got) < 198/int(max)/2 {
				t.Errorf("slice %d/%d is lopsided: %d docs", id, max, len(got))
			}
			union = append(union, got...)
		}
		slices.Sort(union)
		if !slices.Equal(union, all) {
			t.Fatalf("slices of %d: union of %d docs differs from the %d docs", max, len(union), len(all))
		}
	}
	// A query filter: docs with n < 10 (d000 deleted).
	q := &sluicev1.Query{Kind: &sluicev1.Query_Range{Range: &sluicev1.RangeQuery{Field: "n", Lt: &sluicev1.FieldValue{Kind: &sluicev1.FieldValue_LongValue{LongValue: 10}}}}}
	got, total := scanAll(t, f, open.ReaderId, &sluicev1.Slice{Id: 0, Max: 1}, q, 1)
	if total != 9 || len(got) != 9 {
		t.Fatalf("filtered scan: %v total %d", got, total)
	}
	_, err = f.client.ShardScan(ctx, &nodev1.ShardScanRequest{Shard: sid, ReaderId: open.ReaderId, Cursor: []byte{9, 9}})
	if err == nil {
		var s grpc.ServerStreamingClient[nodev1.ShardScanResponse]
		s, _ = f.client.ShardScan(ctx, &nodev1.ShardScanRequest{Shard: sid, ReaderId: open.ReaderId, Cursor: []byte{9, 9}})
		_, err = s.Recv()
	}
	wantCode(t, err, codes.InvalidArgument)
}

func TestRoutingStoredAndReturned(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, shard.HostOptions{BulkParallelism: 3})
	items := indexItems(30)
	routingOf := func(i int) string {
		if i%2 == 0 {
			return ""
		}
		return fmt.Sprintf("tenant-%d", i%4)
	}
	for i, it := range items {
		it.Routing = routingOf(i)
	}
	f.bulk(t, items, sluicev1.RefreshPolicy_REFRESH_POLICY_IMMEDIATE)
	want := map[string]string{}
	for i, it := range items {
		want[it.Id] = routingOf(i)
	}
	for id, r := range want {
		g, err := f.client.ShardGet(ctx, &nodev1.ShardGetRequest{Shard: sid, Id: id})
		if err != nil || !g.Found || g.Routing != r {
			t.Fatalf("get %s: %v %v, want routing %q", id, g, err, r)
		}
	}
	resp, err := f.client.ShardSearch(ctx, &nodev1.ShardSearchRequest{Shard: sid, Size: 30})
	if err != nil {
		t.Fatal(err)
	}
	var docs []int32
	for _, h := range resp.Hits {
		docs = append(docs, h.Doc)
	}
	fr, err := f.client.ShardFetch(ctx, &nodev1.ShardFetchRequest{Shard: sid, ReaderId: resp.ReaderId, Docs: docs, Release: true})
	if err != nil || len(fr.Docs) != len(want) {
		t.Fatalf("fetch: %d docs, %v", len(fr.GetDocs()), err)
	}
	for _, d := range fr.Docs {
		if d.Routing != want[d.Id] || len(d.Source) != 0 {
			t.Fatalf("fetch %s: routing %q (want %q), %d source bytes without fetch_source", d.Id, d.Routing, want[d.Id], len(d.Source))
		}
	}
	open, err := f.client.OpenShardReader(ctx, &nodev1.OpenShardReaderRequest{Shard: sid, KeepAlive: durationpb.New(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	stream, err := f.client.ShardScan(ctx, &nodev1.ShardScanRequest{Shard: sid, ReaderId: open.ReaderId, BatchSize: 7})
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
				t.Fatalf("scan %s: routing %q, want %q", d.Id, d.Routing, want[d.Id])
			}
			n++
		}
	}
	if n != len(want) {
		t.Fatalf("scan returned %d docs, want %d", n, len(want))
	}
}

// TestBulkUpdateDocValues: the update_doc_values action sets a
// doc-value-only field in place: sorting sees the new value after
// wait_for, _source keeps the indexed document, and bad items fail alone
// with the field named.
func TestBulkUpdateDocValues(t *testing.T) {
	ctx := context.Background()
	n := nodetest.Start(t, nil, node.Config{})
	price := mapping.NewField(document.Long)
	price.Index = false
	m, err := mapping.New(mapping.DynamicTrue, map[string]mapping.Field{"price": price, "n": mapping.NewField(document.Long)})
	if err != nil {
		t.Fatal(err)
	}
	n.Open(t, shard.Meta{ID: shard.ID{IndexUUID: sid.IndexUuid}, Index: "books", RefreshInterval: -1, Mapping: m})
	f := &fixture{host: n.Shards(), client: nodev1.NewNodeClient(n.Conn)}
	var items []*sluicev1.BulkItem
	for i := range 10 {
		items = append(items, &sluicev1.BulkItem{Action: sluicev1.BulkAction_BULK_ACTION_INDEX, Id: fmt.Sprintf("d%d", i), Source: fmt.Appendf(nil, `{"n":%d,"price":%d}`, i, i)})
	}
	f.bulk(t, items, sluicev1.RefreshPolicy_REFRESH_POLICY_WAIT_FOR)
	upd := func(id, fields string) *sluicev1.BulkItem {
		return &sluicev1.BulkItem{Action: sluicev1.BulkAction_BULK_ACTION_UPDATE_DOC_VALUES, Id: id, Source: []byte(fields)}
	}
	res := f.bulk(t, []*sluicev1.BulkItem{upd("d3", `{"price":1000}`), upd("never", `{"price":1}`), upd("d4", `{"n":5}`)},
		sluicev1.RefreshPolicy_REFRESH_POLICY_WAIT_FOR)
	if res[0].Status != sluicev1.BulkItemStatus_BULK_ITEM_STATUS_UPDATED || res[0].SeqNo != 11 {
		t.Fatalf("update d3: %v", res[0])
	}
	if res[1].Status != sluicev1.BulkItemStatus_BULK_ITEM_STATUS_ERROR || codes.Code(res[1].GetError().GetCode()) != codes.FailedPrecondition {
		t.Fatalf("update of a missing doc: %v", res[1])
	}
	if codes.Code(res[2].GetError().GetCode()) != codes.InvalidArgument || res[2].GetError().GetField() != "n" {
		t.Fatalf("update of an indexed field: %v", res[2])
	}
	resp, err := f.client.ShardSearch(ctx, &nodev1.ShardSearchRequest{Shard: sid, Size: 1,
		Sort: []*sluicev1.SortField{{Field: "price", Order: sluicev1.SortOrder_SORT_ORDER_DESC}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Hits[0].Sort[0].GetLongValue(); got != 1000 {
		t.Fatalf("top price %d, want 1000", got)
	}
	fr, err := f.client.ShardFetch(ctx, &nodev1.ShardFetchRequest{Shard: sid, ReaderId: resp.ReaderId, Docs: []int32{resp.Hits[0].Doc}, FetchSource: true,
		DocvalueFields: []string{"price", "n", "unmapped"}, Release: true})
	if err != nil {
		t.Fatal(err)
	}
	if d := fr.Docs[0]; d.Id != "d3" || string(d.Source) != `{"n":3,"price":3}` {
		t.Fatalf("top hit %s %s; want d3 with its source as indexed", d.Id, d.Source)
	}
	// docvalue_fields read the current values.
	if fs := fr.Docs[0].Fields; len(fs) != 2 || fs["price"].GetLongValue() != 1000 || fs["n"].GetLongValue() != 3 {
		t.Fatalf("docvalue_fields of the top hit: %v; want price 1000, n 3", fs)
	}
}

// TestBulkPartialUpdate: the update action merges a partial document into
// the current one — read real-time, with the values an in-place update
// set earlier in the same bulk, not the stale ones of _source — creates
// from upsert or doc_as_upsert when the id is missing, writes nothing for
// a merge that changes nothing, and fails bad items alone.
func TestBulkPartialUpdate(t *testing.T) {
	ctx := context.Background()
	n := nodetest.Start(t, nil, node.Config{})
	price := mapping.NewField(document.Long)
	price.Index = false
	long := mapping.NewField(document.Long)
	m, err := mapping.New(mapping.DynamicStrict, map[string]mapping.Field{"price": price, "n": long,
		"o.x": long, "o.y": long, "o.z": long, "t": mapping.NewField(document.Keyword)})
	if err != nil {
		t.Fatal(err)
	}
	n.Open(t, shard.Meta{ID: shard.ID{IndexUUID: sid.IndexUuid}, Index: "books", RefreshInterval: -1, Mapping: m})
	f := &fixture{host: n.Shards(), client: nodev1.NewNodeClient(n.Conn)}
	for _, r := range f.bulk(t, []*sluicev1.BulkItem{
		{Action: sluicev1.BulkAction_BULK_ACTION_INDEX, Id: "a", Source: []byte(`{"n":1,"price":10,"o":{"x":1,"y":2},"t":["p","q"]}`)},
		{Action: sluicev1.BulkAction_BULK_ACTION_INDEX, Id: "b", Source: []byte(`{"n":2,"price":20}`)},
	}, sluicev1.RefreshPolicy_REFRESH_POLICY_NONE) {
		if r.Error != nil {
			t.Fatal(r.Error)
		}
	}
	update := func(id, doc string) *sluicev1.BulkItem {
		return &sluicev1.BulkItem{Action: sluicev1.BulkAction_BULK_ACTION_UPDATE, Id: id, Source: []byte(doc)}
	}
	const (
		created = sluicev1.BulkItemStatus_BULK_ITEM_STATUS_CREATED
		updated = sluicev1.BulkItemStatus_BULK_ITEM_STATUS_UPDATED
		noop    = sluicev1.BulkItemStatus_BULK_ITEM_STATUS_NOOP
		failed  = sluicev1.BulkItemStatus_BULK_ITEM_STATUS_ERROR
	)
	tests := []struct {
		name   string
		items  []*sluicev1.BulkItem
		status sluicev1.BulkItemStatus // of the last item
		code   codes.Code              // of the last item, when it fails
		id     string
		want   string // the document's _source after the bulk ("" : none)
	}{
		{"merge objects, replace arrays", []*sluicev1.BulkItem{update("a", `{"o":{"y":3,"z":4},"t":["r"]}`)}, updated, 0,
			"a", `{"n":1,"price":10,"o":{"x":1,"y":3,"z":4},"t":["r"]}`},
		{"noop", []*sluicev1.BulkItem{update("a", `{"n":1,"o":{"x":1}}`)}, noop, 0,
			"a", `{"n":1,"price":10,"o":{"x":1,"y":3,"z":4},"t":["r"]}`},
		{"keeps an in-place update", []*sluicev1.BulkItem{
			{Action: sluicev1.BulkAction_BULK_ACTION_UPDATE_DOC_VALUES, Id: "b", Source: []byte(`{"price":25}`)},
			update("b", `{"n":3}`)}, updated, 0,
			"b", `{"n":3,"price":25}`},
		{"missing", []*sluicev1.BulkItem{update("c", `{"n":1}`)}, failed, codes.FailedPrecondition, "c", ""},
		{"upsert", []*sluicev1.BulkItem{{Action: sluicev1.BulkAction_BULK_ACTION_UPDATE, Id: "c", Source: []byte(`{"n":1}`), Upsert: []byte(`{"n":0,"price":1}`)}}, created, 0,
			"c", `{"n":0,"price":1}`},
		{"upsert of an existing doc merges", []*sluicev1.BulkItem{{Action: sluicev1.BulkAction_BULK_ACTION_UPDATE, Id: "c", Source: []byte(`{"n":1}`), Upsert: []byte(`{"n":0}`)}}, updated, 0,
			"c", `{"n":1,"price":1}`},
		{"doc_as_upsert", []*sluicev1.BulkItem{{Action: sluicev1.BulkAction_BULK_ACTION_UPDATE, Id: "d", Source: []byte(`{"n":4}`), DocAsUpsert: true}}, created, 0,
			"d", `{"n":4}`},
		{"partial doc not an object", []*sluicev1.BulkItem{update("a", `[1]`)}, failed, codes.InvalidArgument, "d", `{"n":4}`},
		{"partial doc malformed", []*sluicev1.BulkItem{update("a", `{"n":`)}, failed, codes.InvalidArgument, "d", `{"n":4}`},
		{"merge does not fit the mapping", []*sluicev1.BulkItem{update("d", `{"n":"x"}`)}, failed, codes.InvalidArgument, "d", `{"n":4}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := f.bulk(t, tt.items, sluicev1.RefreshPolicy_REFRESH_POLICY_NONE)
			last := res[len(res)-1]
			if last.Status != tt.status || codes.Code(last.GetError().GetCode()) != tt.code {
				t.Fatalf("status %v (%v), want %v (%v)", last.Status, last.GetError(), tt.status, tt.code)
			}
			got, err := f.client.ShardGet(ctx, &nodev1.ShardGetRequest{Shard: sid, Id: tt.id, Refresh: true})
			if err != nil {
				t.Fatal(err)
			}
			if got.Found != (tt.want != "") || string(got.Source) != tt.want {
				t.Fatalf("%s after the bulk: found=%v %s, want %s", tt.id, got.Found, got.Source, tt.want)
			}
		})
	}
}

// TestBulkIfSeqNo: items with if_seq_no / if_primary_term apply only to
// the version they name; a mismatch fails the item with ABORTED and the
// document's current version, and ShardGet reports versions.
func TestBulkIfSeqNo(t *testing.T) {
	ctx := context.Background()
	price := mapping.NewField(document.Long)
	price.Index = false
	f := startBooks(t, map[string]mapping.Field{"price": price, "n": mapping.NewField(document.Long)})
	first := f.bulk(t, []*sluicev1.BulkItem{{Action: sluicev1.BulkAction_BULK_ACTION_INDEX, Id: "a", Source: []byte(`{"n":1,"price":10}`)}},
		sluicev1.RefreshPolicy_REFRESH_POLICY_NONE)[0]
	if first.Error != nil || first.PrimaryTerm < 1 {
		t.Fatalf("index: %v", first)
	}
	cur := [2]int64{first.SeqNo, first.PrimaryTerm} // the model's version of "a"
	if_ := func(a sluicev1.BulkAction, src string, seq int64) *sluicev1.BulkItem {
		return &sluicev1.BulkItem{Action: a, Id: "a", Source: []byte(src), IfSeqNo: &seq, IfPrimaryTerm: &cur[1]}
	}
	const (
		index   = sluicev1.BulkAction_BULK_ACTION_INDEX
		update  = sluicev1.BulkAction_BULK_ACTION_UPDATE
		inPlace = sluicev1.BulkAction_BULK_ACTION_UPDATE_DOC_VALUES
		del     = sluicev1.BulkAction_BULK_ACTION_DELETE
	)
	tests := []struct {
		name   string
		item   func() *sluicev1.BulkItem
		ok     bool
		source string // of "a" afterwards ("": none)
	}{
		{"index, stale", func() *sluicev1.BulkItem { return if_(index, `{"n":2}`, cur[0]-1) }, false, `{"n":1,"price":10}`},
		{"index", func() *sluicev1.BulkItem { return if_(index, `{"n":2,"price":10}`, cur[0]) }, true, `{"n":2,"price":10}`},
		{"update, stale", func() *sluicev1.BulkItem { return if_(update, `{"n":3}`, cur[0]-1) }, false, `{"n":2,"price":10}`},
		{"update", func() *sluicev1.BulkItem { return if_(update, `{"n":3}`, cur[0]) }, true, `{"n":3,"price":10}`},
		{"in place, stale", func() *sluicev1.BulkItem { return if_(inPlace, `{"price":11}`, cur[0]-1) }, false, `{"n":3,"price":10}`},
		{"in place", func() *sluicev1.BulkItem { return if_(inPlace, `{"price":11}`, cur[0]) }, true, `{"n":3,"price":10}`},
		{"update after in place, stale", func() *sluicev1.BulkItem { return if_(update, `{"n":4}`, cur[0]-1) }, false, `{"n":3,"price":10}`},
		{"update after in place", func() *sluicev1.BulkItem { return if_(update, `{"n":4}`, cur[0]) }, true, `{"n":4,"price":11}`},
		{"other term", func() *sluicev1.BulkItem {
			it := if_(del, "", cur[0])
			it.IfPrimaryTerm = proto.Int64(cur[1] + 1)
			return it
		}, false, `{"n":4,"price":11}`},
		{"delete", func() *sluicev1.BulkItem { return if_(del, "", cur[0]) }, true, ""},
		{"index of a deleted doc", func() *sluicev1.BulkItem { return if_(index, `{"n":5}`, cur[0]) }, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := f.bulk(t, []*sluicev1.BulkItem{tt.item()}, sluicev1.RefreshPolicy_REFRESH_POLICY_NONE)[0]
			switch {
			case tt.ok && r.Error != nil:
				t.Fatalf("refused: %v", r.Error)
			case tt.ok:
				if r.SeqNo <= cur[0] || r.PrimaryTerm != cur[1] {
					t.Fatalf("new version %d/%d after %v", r.SeqNo, r.PrimaryTerm, cur)
				}
				cur[0] = r.SeqNo
			case codes.Code(r.GetError().GetCode()) != codes.Aborted:
				t.Fatalf("got %v (%v), want ABORTED", r.Status, r.GetError())
			case tt.source != "" && (r.SeqNo != cur[0] || r.PrimaryTerm != cur[1]):
				t.Fatalf("conflict reports %d/%d, current is %v", r.SeqNo, r.PrimaryTerm, cur)
			case tt.source == "" && (r.SeqNo != 0 || r.PrimaryTerm != 0):
				t.Fatalf("conflict on a missing doc reports %d/%d", r.SeqNo, r.PrimaryTerm)
			}
			got, err := f.client.ShardGet(ctx, &nodev1.ShardGetRequest{Shard: sid, Id: "a", Refresh: true})
			if err != nil {
				t.Fatal(err)
			}
			if got.Found != (tt.source != "") || string(got.Source) != tt.source {
				t.Fatalf("after: found=%v %s, want %s", got.Found, got.Source, tt.source)
			}
			if got.Found && (got.SeqNo != cur[0] || got.PrimaryTerm != cur[1]) {
				t.Fatalf("get reports %d/%d, want %v", got.SeqNo, got.PrimaryTerm, cur)
			}
		})
	}
}

// TestPartialUpdateRace: an index of the id landing between a partial
// update's read and its write is never overwritten with the stale merge.
// One writer re-indexes {"n": i} for rising i; others partial-update
// "price" with retry_on_conflict. Without the conditional write an update
// that read n=i could write it back over n=i+1, so the last re-index
// would not survive.
func TestPartialUpdateRace(t *testing.T) {
	ctx := context.Background()
	f := startBooks(t, map[string]mapping.Field{"price": mapping.NewField(document.Long), "n": mapping.NewField(document.Long)})
	const rounds = 200
	one := func(it *sluicev1.BulkItem) error {
		resp, err := f.client.ShardBulk(ctx, &nodev1.ShardBulkRequest{Shard: sid, Index: "books", Items: []*sluicev1.BulkItem{it}})
		if err != nil {
			return err
		}
		// Out of retries (ABORTED) is allowed: it wrote nothing.
		if e := resp.Items[0].GetError(); e != nil && codes.Code(e.GetCode()) != codes.Aborted {
			return fmt.Errorf("%v: %v", it.Action, e)
		}
		return nil
	}
	for round := range 3 {
		var wg sync.WaitGroup
		errs := make(chan error, 3)
		wg.Go(func() {
			for i := range rounds {
				if err := one(&sluicev1.BulkItem{Action: sluicev1.BulkAction_BULK_ACTION_INDEX, Id: "a", Source: fmt.Appendf(nil, `{"n":%d}`, round*rounds+i)}); err != nil {
					errs <- err
					return
				}
			}
		})
		for range 2 {
			wg.Go(func() {
				for i := range rounds {
					if err := one(&sluicev1.BulkItem{Action: sluicev1.BulkAction_BULK_ACTION_UPDATE, Id: "a", Source: fmt.Appendf(nil, `{"price":%d}`, i),
						DocAsUpsert: true, RetryOnConflict: 100}); err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		got, err := f.client.ShardGet(ctx, &nodev1.ShardGetRequest{Shard: sid, Id: "a", Refresh: true})
		if err != nil {
			t.Fatal(err)
		}
		var doc struct{ N int }
		if err := json.Unmarshal(got.Source, &doc); err != nil || doc.N != round*rounds+rounds-1 {
			t.Fatalf("round %d: after the last re-index {n:%d} the doc is %s: a stale update overwrote it", round, round*rounds+rounds-1, got.Source)
		}
	}
}

// startBooks starts a node with the shard sid of index "books", mapped
// strictly with fields, refreshed only when asked.
func startBooks(t *testing.T, fields map[string]mapping.Field) *fixture {
	t.Helper()
	n := nodetest.Start(t, nil, node.Config{})
	m, err := mapping.New(mapping.DynamicStrict, fields)
	if err != nil {
		t.Fatal(err)
	}
	n.Open(t, shard.Meta{ID: shard.ID{IndexUUID: sid.IndexUuid}, Index: "books", RefreshInterval: -1, Mapping: m})
	return &fixture{host: n.Shards(), client: nodev1.NewNodeClient(n.Conn)}
}
