package datapath_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/sluice-search/sluice/cluster/rpc/rpctest"
	"github.com/sluice-search/sluice/coordinator/datapath"
	"github.com/sluice-search/sluice/coordinator/datapath/datapathtest"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// newFields is a document of n new fields.
func newFields(n int) []byte {
	var b strings.Builder
	b.WriteString("{")
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"f%d":%d`, i, i)
	}
	b.WriteString("}")
	return []byte(b.String())
}

// nested is a query of n bool levels around a match_all.
func nested(n int) *sluicev1.Query {
	q := &sluicev1.Query{Kind: &sluicev1.Query_MatchAll{MatchAll: &sluicev1.MatchAllQuery{}}}
	for range n {
		q = &sluicev1.Query{Kind: &sluicev1.Query_Bool{Bool: &sluicev1.BoolQuery{Must: []*sluicev1.Query{q}}}}
	}
	return q
}

// TestInputLimitsOverGRPC sends each kind of bad input through a real
// coordinator's gRPC server and checks the answer: INVALID_ARGUMENT naming
// the field (a google.rpc.BadRequest for a request, ErrorDetail.field for
// a bulk item), never INTERNAL; and nothing else is touched.
func TestInputLimitsOverGRPC(t *testing.T) {
	c := datapathtest.Start(t, 2, datapath.Options{})
	cl := c.Client
	ctx := context.Background()
	const index = "limits"
	c.CreateIndex(t, index, 3, &sluicev1.Mapping{Properties: map[string]*sluicev1.FieldMapping{
		"title": {Type: sluicev1.FieldType_FIELD_TYPE_TEXT}, "n": {Type: sluicev1.FieldType_FIELD_TYPE_LONG}}})
	if _, err := cl.UpdateIndexSettings(ctx, &sluicev1.UpdateIndexSettingsRequest{Name: index,
		Settings: &sluicev1.IndexSettings{MappingTotalFieldsLimit: 100}}); err != nil {
		t.Fatal(err)
	}
	idx := []string{index}
	long := strings.Repeat("x", 600)
	settings := func(s *sluicev1.IndexSettings) error {
		_, err := cl.CreateIndex(ctx, &sluicev1.CreateIndexRequest{Name: "bad-settings", Settings: s})
		return err
	}
	props := func(name string, f *sluicev1.FieldMapping) *sluicev1.Mapping {
		return &sluicev1.Mapping{Properties: map[string]*sluicev1.FieldMapping{name: f}}
	}
	text := &sluicev1.FieldMapping{Type: sluicev1.FieldType_FIELD_TYPE_TEXT}
	search := func(r *sluicev1.SearchRequest) error {
		r.Indices = idx
		_, err := cl.Search(ctx, r)
		return err
	}
	scroll := func(r *sluicev1.ScrollRequest) error {
		r.Indices = idx
		s, err := cl.Scroll(ctx, r)
		if err == nil {
			_, err = s.Recv()
		}
		return err
	}
	// An id of invalid UTF-8, as bytes no Go client would send.
	item := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.VarintType), nil)[:0]
	item = protowire.AppendVarint(protowire.AppendTag(item, 1, protowire.VarintType), 1)
	item = protowire.AppendBytes(protowire.AppendTag(item, 3, protowire.BytesType), []byte("id-\xff"))
	item = protowire.AppendBytes(protowire.AppendTag(item, 4, protowire.BytesType), []byte(`{"n": 1}`))
	rawBulk := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), []byte(index))
	rawBulk = protowire.AppendBytes(protowire.AppendTag(rawBulk, 2, protowire.BytesType), item)
	var actions []*sluicev1.AliasAction
	for i := range 100 {
		actions = append(actions, &sluicev1.AliasAction{Type: sluicev1.AliasActionType_ALIAS_ACTION_TYPE_ADD, Alias: fmt.Sprintf("a%d", i), Index: index})
	}

	for _, tt := range []struct {
		name  string
		call  func() error
		field string // the BadRequest field; "" for none
		text  string // in the message
	}{
		{"index name", func() error {
			_, err := cl.CreateIndex(ctx, &sluicev1.CreateIndexRequest{Name: "Bad*Name"})
			return err
		}, "", "must be lowercase"},
		{"refresh_interval under the floor", func() error {
			return settings(&sluicev1.IndexSettings{RefreshInterval: durationpb.New(time.Nanosecond)})
		}, "refresh_interval", "at least 100ms, or -1"},
		{"translog_sync_interval under the floor", func() error {
			return settings(&sluicev1.IndexSettings{TranslogSyncInterval: durationpb.New(time.Millisecond)})
		}, "translog_sync_interval", "at least 100ms"},
		{"unknown durability", func() error { return settings(&sluicev1.IndexSettings{TranslogDurability: 7}) }, "settings.translog_durability", "unknown enum value 7"},
		{"depth limit too large", func() error { return settings(&sluicev1.IndexSettings{MappingDepthLimit: 101}) }, "mapping_depth_limit", "between 0"},
		{"too many shards", func() error { return settings(&sluicev1.IndexSettings{NumberOfShards: 1025}) }, "", "number_of_shards"},
		{"NaN merge rate", func() error { return settings(&sluicev1.IndexSettings{MergeMaxMbPerSec: math.NaN()}) }, "merge_max_mb_per_sec", "finite"},
		{"unknown field type", func() error {
			_, err := cl.CreateIndex(ctx, &sluicev1.CreateIndexRequest{Name: "x", Mapping: props("f", &sluicev1.FieldMapping{Type: 42})})
			return err
		}, "mapping.properties[f].type", "unknown enum value 42"},
		{"field name too long", func() error {
			_, err := cl.CreateIndex(ctx, &sluicev1.CreateIndexRequest{Name: "x", Mapping: props(strings.Repeat("n", 300), text)})
			return err
		}, strings.Repeat("n", 300), "field name is 300 bytes long"},
		{"settings update under the floor", func() error {
			_, err := cl.UpdateIndexSettings(ctx, &sluicev1.UpdateIndexSettingsRequest{Name: index, Settings: &sluicev1.IndexSettings{RefreshInterval: durationpb.New(time.Millisecond)}})
			return err
		}, "refresh_interval", "at least 100ms"},
		{"mapping past the total fields", func() error {
			m := &sluicev1.Mapping{Properties: map[string]*sluicev1.FieldMapping{}}
			for i := range 120 {
				m.Properties[fmt.Sprintf("p%d", i)] = text
			}
			_, err := cl.PutMapping(ctx, &sluicev1.PutMappingRequest{Name: index, Mapping: m})
			return err
		}, "", "limit of total fields [100]"},
		{"mapping past the depth", func() error {
			_, err := cl.PutMapping(ctx, &sluicev1.PutMappingRequest{Name: index, Mapping: props(strings.Repeat("o.", 20)+"x", text)})
			return err
		}, strings.Repeat("o.", 20) + "x", "limit of mapping depth [20]"},
		{"a mapping type change", func() error {
			_, err := cl.PutMapping(ctx, &sluicev1.PutMappingRequest{Name: index, Mapping: props("n", text)})
			return err
		}, "n", "cannot change type"},
		{"alias actions beyond one transaction", func() error {
			_, err := cl.UpdateAliases(ctx, &sluicev1.UpdateAliasesRequest{Actions: actions})
			return err
		}, "", "smaller parts"},
		{"track_total_hits -5", func() error { return search(&sluicev1.SearchRequest{TrackTotalHits: -5}) }, "track_total_hits", "-1 (count all)"},
		{"negative size", func() error { return search(&sluicev1.SearchRequest{Size: proto.Int32(-1)}) }, "size", ">= 0"},
		{"from + size past the window", func() error { return search(&sluicev1.SearchRequest{From: 5000, Size: proto.Int32(5001)}) }, "size", "<= 10000"},
		{"negative timeout", func() error { return search(&sluicev1.SearchRequest{Timeout: durationpb.New(-time.Second)}) }, "timeout", "negative"},
		{"negative pit keep-alive", func() error {
			return search(&sluicev1.SearchRequest{Pit: &sluicev1.PointInTime{Id: "x", KeepAlive: durationpb.New(-time.Second)}})
		}, "pit.keep_alive", "negative"},
		{"long routing", func() error { return search(&sluicev1.SearchRequest{Routing: long}) }, "routing", "600 bytes"},
		{"unknown sort order", func() error {
			return search(&sluicev1.SearchRequest{Sort: []*sluicev1.SortField{{Field: "n", Order: 5}}})
		}, "sort[0].order", "unknown enum value 5"},
		{"unknown match operator", func() error {
			return search(&sluicev1.SearchRequest{Query: &sluicev1.Query{Kind: &sluicev1.Query_Match{Match: &sluicev1.MatchQuery{Field: "title", Query: "x", Operator: 7}}}})
		}, "query.match.operator", "unknown enum value 7"},
		{"31 levels of bool", func() error { return search(&sluicev1.SearchRequest{Query: nested(31)}) }, "", "deeper than 30"},
		{"5,000 levels of bool", func() error { return search(&sluicev1.SearchRequest{Query: nested(5000)}) }, "", "recursion limit"},
		{"5,000 clauses", func() error {
			b := &sluicev1.BoolQuery{}
			for range 5000 {
				b.Should = append(b.Should, nested(0))
			}
			return search(&sluicev1.SearchRequest{Query: &sluicev1.Query{Kind: &sluicev1.Query_Bool{Bool: b}}})
		}, "", "more than 4096 clauses"},
		{"unknown query field", func() error {
			return search(&sluicev1.SearchRequest{Query: &sluicev1.Query{Kind: &sluicev1.Query_Match{Match: &sluicev1.MatchQuery{Field: "nope", Query: "x"}}}})
		}, "nope", "no such field"},
		{"negative scroll batch", func() error { return scroll(&sluicev1.ScrollRequest{BatchSize: -1}) }, "batch_size", ">= 0"},
		{"scroll batch past the window", func() error { return scroll(&sluicev1.ScrollRequest{BatchSize: 10001}) }, "batch_size", "<= 10000"},
		{"too many slices", func() error { return scroll(&sluicev1.ScrollRequest{Slice: &sluicev1.Slice{Id: 0, Max: 2000}}) }, "slice.max", "between 1 and 1024"},
		{"slice id past max", func() error { return scroll(&sluicev1.ScrollRequest{Slice: &sluicev1.Slice{Id: 5, Max: 2}}) }, "slice.id", "[0, max 2)"},
		{"PIT without keep-alive", func() error {
			_, err := cl.OpenPointInTime(ctx, &sluicev1.OpenPointInTimeRequest{Indices: idx})
			return err
		}, "keep_alive", "required"},
		{"PIT kept too long", func() error {
			_, err := cl.OpenPointInTime(ctx, &sluicev1.OpenPointInTimeRequest{Indices: idx, KeepAlive: durationpb.New(48 * time.Hour)})
			return err
		}, "keep_alive", "above the maximum"},
		{"get without id", func() error { _, err := cl.Get(ctx, &sluicev1.GetRequest{Index: index}); return err }, "id", "required"},
		{"get of a long id", func() error { _, err := cl.Get(ctx, &sluicev1.GetRequest{Index: index, Id: long}); return err }, "id", "600 bytes"},
		{"bulk of nothing", func() error { _, err := cl.Bulk(ctx, &sluicev1.BulkRequest{Index: index}); return err }, "items", "at least one"},
		{"negative bulk timeout", func() error {
			_, err := cl.Bulk(ctx, &sluicev1.BulkRequest{Index: index, Items: docItems(0, 1), Timeout: durationpb.New(-time.Second)})
			return err
		}, "timeout", "negative"},
		{"unknown refresh policy", func() error {
			_, err := cl.Bulk(ctx, &sluicev1.BulkRequest{Index: index, Items: docItems(0, 1), Refresh: 9})
			return err
		}, "refresh", "unknown enum value 9"},
		{"an id that is not UTF-8", func() error {
			return c.Client.Conn().Invoke(ctx, "/sluice.v1.Sluice/Bulk", rawBulk, new(sluicev1.BulkResponse), grpc.ForceCodec(rpctest.RawCodec{}))
		}, "items[0].id", "not valid UTF-8"},
		{"too many reindex slices", func() error {
			_, err := cl.Reindex(ctx, &sluicev1.ReindexRequest{Source: &sluicev1.ReindexSource{Index: index}, Dest: &sluicev1.ReindexDestination{Index: "d"}, Slices: 2000})
			return err
		}, "slices", "between 0 (auto) and 1024"},
		{"NaN requests_per_second", func() error {
			_, err := cl.Reindex(ctx, &sluicev1.ReindexRequest{Source: &sluicev1.ReindexSource{Index: index}, Dest: &sluicev1.ReindexDestination{Index: "d"},
				RequestsPerSecond: float32(math.NaN())})
			return err
		}, "requests_per_second", "finite"},
		{"unknown reindex mode", func() error {
			_, err := cl.Reindex(ctx, &sluicev1.ReindexRequest{Source: &sluicev1.ReindexSource{Index: index}, Dest: &sluicev1.ReindexDestination{Index: "d"}, Mode: 9})
			return err
		}, "mode", "unknown enum value 9"},
		{"reindex query on an unknown field", func() error {
			_, err := cl.Reindex(ctx, &sluicev1.ReindexRequest{Dest: &sluicev1.ReindexDestination{Index: "d"}, Source: &sluicev1.ReindexSource{Index: index,
				Query: &sluicev1.Query{Kind: &sluicev1.Query_Match{Match: &sluicev1.MatchQuery{Field: "nope", Query: "x"}}}}})
			return err
		}, "nope", "source.query"},
		{"bad swap alias", func() error {
			_, err := cl.Reindex(ctx, &sluicev1.ReindexRequest{Source: &sluicev1.ReindexSource{Index: index}, Dest: &sluicev1.ReindexDestination{Index: "d"}, SwapAlias: "Bad*"})
			return err
		}, "", "swap_alias"},
		{"negative rethrottle", func() error {
			_, err := cl.RethrottleTask(ctx, &sluicev1.RethrottleTaskRequest{Id: "x", RequestsPerSecond: -1})
			return err
		}, "requests_per_second", ">= 0"},
		{"negative task wait", func() error {
			_, err := cl.GetTask(ctx, &sluicev1.GetTaskRequest{Id: "x", WaitForCompletion: true, Timeout: durationpb.New(-time.Second)})
			return err
		}, "timeout", "negative"},
		{"unknown task state", func() error {
			_, err := cl.ListTasks(ctx, &sluicev1.ListTasksRequest{States: []sluicev1.TaskState{99}})
			return err
		}, "states[0]", "unknown enum value 99"},
		{"unknown health status", func() error {
			_, err := cl.ClusterHealth(ctx, &sluicev1.ClusterHealthRequest{WaitForStatus: 9})
			return err
		}, "wait_for_status", "unknown enum value 9"},
		{"negative health wait", func() error {
			_, err := cl.ClusterHealth(ctx, &sluicev1.ClusterHealthRequest{WaitForStatus: sluicev1.HealthStatus_HEALTH_STATUS_GREEN, Timeout: durationpb.New(-time.Second)})
			return err
		}, "timeout", "negative"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			st := status.Convert(err)
			if st.Code() != codes.InvalidArgument {
				t.Fatalf("%v, want INVALID_ARGUMENT", err)
			}
			if got := badRequestField(err); got != tt.field {
				t.Errorf("field %q, want %q (%s)", got, tt.field, st.Message())
			}
			if !strings.Contains(st.Message(), tt.text) {
				t.Errorf("message %q, want %q in it", st.Message(), tt.text)
			}
		})
	}

	// Bulk items: each bad one fails alone, INVALID_ARGUMENT naming its
	// field; the good one is applied; the mapping in etcd gains nothing.
	items := []struct {
		it    *sluicev1.BulkItem
		field string
		text  string
	}{
		{&sluicev1.BulkItem{Action: sluicev1.BulkAction_BULK_ACTION_INDEX, Id: "ok", Source: []byte(`{"n": 1, "title": "fine"}`)}, "", ""},
		{&sluicev1.BulkItem{Action: 9, Id: "action", Source: []byte(`{}`)}, "", "action"},
		{&sluicev1.BulkItem{Action: sluicev1.BulkAction_BULK_ACTION_DELETE, Id: long}, "_id", "600 bytes"},
		{&sluicev1.BulkItem{Action: sluicev1.BulkAction_BULK_ACTION_INDEX, Id: "r", Routing: long, Source: []byte(`{}`)}, "routing", "600 bytes"},
		{&sluicev1.BulkItem{Action: sluicev1.BulkAction_BULK_ACTION_INDEX, Id: "utf8-value", Source: []byte("{\"title\": \"a\xffb\"}")}, "title", "not valid UTF-8"},
		{&sluicev1.BulkItem{Action: sluicev1.BulkAction_BULK_ACTION_INDEX, Id: "utf8-key", Source: []byte("{\"o\": {\"k\xff\": 1}}")}, "o", "not valid UTF-8"},
		{&sluicev1.BulkItem{Action: sluicev1.BulkAction_BULK_ACTION_INDEX, Id: "fields", Source: newFields(150)}, "f98", "limit of total fields [100]"},
		{&sluicev1.BulkItem{Action: sluicev1.BulkAction_BULK_ACTION_INDEX, Id: "50k-fields", Source: newFields(50000)}, "f98", "limit of total fields [100]"},
		{&sluicev1.BulkItem{Action: sluicev1.BulkAction_BULK_ACTION_INDEX, Id: "deep", Source: []byte(strings.Repeat(`{"d": `, 22) + "1" + strings.Repeat("}", 22))},
			strings.TrimSuffix(strings.Repeat("d.", 20), "."), "limit of mapping depth [20]"},
		{&sluicev1.BulkItem{Action: sluicev1.BulkAction_BULK_ACTION_INDEX, Id: "name", Source: fmt.Appendf(nil, `{"%s": 1}`, strings.Repeat("k", 257))},
			strings.Repeat("k", 257), "257 bytes long"},
	}
	req := &sluicev1.BulkRequest{Index: index, Refresh: sluicev1.RefreshPolicy_REFRESH_POLICY_WAIT_FOR}
	for _, it := range items {
		req.Items = append(req.Items, it.it)
	}
	resp, err := cl.Bulk(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range items {
		r := resp.Items[i]
		if want.text == "" {
			if r.Status != sluicev1.BulkItemStatus_BULK_ITEM_STATUS_CREATED {
				t.Errorf("item %d: %v", i, r)
			}
			continue
		}
		if codes.Code(r.GetError().GetCode()) != codes.InvalidArgument || r.GetError().GetField() != want.field || !strings.Contains(r.GetError().GetReason(), want.text) {
			t.Errorf("item %d (%s): %v, want INVALID_ARGUMENT on %q with %q", i, r.Id, r.GetError(), want.field, want.text)
		}
	}
	info, err := cl.GetIndex(ctx, &sluicev1.GetIndexRequest{Name: index, IncludeStats: true})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(info.Index.Mapping.Properties); n != 2 || info.Index.DocsCount != 1 {
		t.Fatalf("the refused items touched the index: %d fields, %d docs", n, info.Index.DocsCount)
	}
}

// TestDynamicMappingConflictDecidedOnce: one bulk brings field f as a long
// in some documents and as text in others, over four shards at once. The
// cluster's mapping transaction decides f's type once: every document
// applied is indexed with that type (a query on f by that type finds each
// of them, whichever shard holds it), and every other fails alone,
// INVALID_ARGUMENT naming f — never both types, on different shards.
func TestDynamicMappingConflictDecidedOnce(t *testing.T) {
	c := datapathtest.Start(t, 2, datapath.Options{})
	cl := c.Client
	ctx := context.Background()
	conflicts := 0
	for round := range 4 {
		index := fmt.Sprintf("race-%d", round)
		c.CreateIndex(t, index, 4, nil)
		req := &sluicev1.BulkRequest{Index: index, Refresh: sluicev1.RefreshPolicy_REFRESH_POLICY_WAIT_FOR}
		values := map[string]string{}
		for i := range 40 {
			id, src, v := fmt.Sprintf("d%d", i), fmt.Sprintf(`{"f": %d}`, i), fmt.Sprint(i)
			if i%2 == 1 {
				src, v = fmt.Sprintf(`{"f": "word%d"}`, i), fmt.Sprintf("word%d", i)
			}
			values[id] = v
			req.Items = append(req.Items, &sluicev1.BulkItem{Action: sluicev1.BulkAction_BULK_ACTION_INDEX, Id: id, Source: []byte(src)})
		}
		resp, err := cl.Bulk(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		info, err := cl.GetIndex(ctx, &sluicev1.GetIndexRequest{Name: index})
		if err != nil {
			t.Fatal(err)
		}
		typ := info.Index.Mapping.Properties["f"].GetType()
		applied := 0
		for _, r := range resp.Items {
			if r.Status == sluicev1.BulkItemStatus_BULK_ITEM_STATUS_ERROR {
				conflicts++
				if codes.Code(r.Error.Code) != codes.InvalidArgument || r.Error.Field != "f" {
					t.Fatalf("%s: %v, want INVALID_ARGUMENT naming f", r.Id, r.Error)
				}
				if typ == sluicev1.FieldType_FIELD_TYPE_LONG && !strings.HasPrefix(values[r.Id], "word") {
					t.Fatalf("%s: a long refused although f is long: %v", r.Id, r.Error)
				}
				continue
			}
			applied++
			q := &sluicev1.Query{Kind: &sluicev1.Query_Match{Match: &sluicev1.MatchQuery{Field: "f", Query: values[r.Id]}}}
			sr, err := cl.Search(ctx, &sluicev1.SearchRequest{Indices: []string{index}, Query: q, Size: proto.Int32(50)})
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, h := range sr.Hits {
				found = found || h.Id == r.Id
			}
			if !found {
				t.Fatalf("%s (f=%s) applied but not indexed as %v, the cluster's type of f", r.Id, values[r.Id], typ)
			}
		}
		if applied < 20 {
			t.Fatalf("round %d: only %d documents applied", round, applied)
		}
	}
	if conflicts == 0 {
		t.Fatal("no document lost the race: the conflict was not exercised")
	}
}
