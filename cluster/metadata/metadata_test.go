package metadata

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/sluice-search/sluice/cluster/etcdtest"
	"github.com/sluice-search/sluice/cluster/state"
	"github.com/sluice-search/sluice/node/engine/mapping"
	statev1 "github.com/sluice-search/sluice/proto/sluice/state/v1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

func TestValidateName(t *testing.T) {
	tests := []struct {
		name string
		want string // substring of the error; "" for valid
	}{
		{"logs-2026.01", ""},
		{"a", ""},
		{"", "empty"},
		{"Logs", "lowercase"},
		{"_x", "start"},
		{"-x", "start"},
		{"+x", "start"},
		{".", `"."`},
		{"..", `"."`},
		{"a b", `' '`},
		{"a,b", `','`},
		{"a*", `'*'`},
		{"a/b", `'/'`},
		{"a:b", `':'`},
		{strings.Repeat("x", 256), "255"},
	}
	for _, tt := range tests {
		err := ValidateName("index", tt.name)
		if tt.want == "" {
			if err != nil {
				t.Errorf("ValidateName(%q) = %v", tt.name, err)
			}
			continue
		}
		if !errors.Is(err, state.ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ValidateName(%q) = %v, want error containing %q", tt.name, err, tt.want)
		}
	}
}

func TestNormalizeSettings(t *testing.T) {
	tests := []struct {
		name       string
		in         *sluicev1.IndexSettings
		shards, rs int32
		want       string
	}{
		{"defaults", nil, 1, 1, ""},
		{"routing defaults to shards", &sluicev1.IndexSettings{NumberOfShards: 4}, 4, 4, ""},
		{"routing multiple", &sluicev1.IndexSettings{NumberOfShards: 4, NumberOfRoutingShards: 16}, 4, 16, ""},
		{"max shards", &sluicev1.IndexSettings{NumberOfShards: 1024}, 1024, 1024, ""},
		{"too many shards", &sluicev1.IndexSettings{NumberOfShards: 1025}, 0, 0, "number_of_shards"},
		{"negative shards", &sluicev1.IndexSettings{NumberOfShards: -1}, 0, 0, "number_of_shards"},
		{"routing not multiple", &sluicev1.IndexSettings{NumberOfShards: 4, NumberOfRoutingShards: 6}, 0, 0, "multiple"},
		{"replicas", &sluicev1.IndexSettings{NumberOfReplicas: 2}, 1, 1, ""},
		{"max replicas", &sluicev1.IndexSettings{NumberOfReplicas: MaxReplicas}, 1, 1, ""},
		{"too many replicas", &sluicev1.IndexSettings{NumberOfReplicas: MaxReplicas + 1}, 0, 0, "number_of_replicas: must be between 0 and 32, got 33"},
		{"negative replicas", &sluicev1.IndexSettings{NumberOfReplicas: -1}, 0, 0, "number_of_replicas: must be between 0 and 32, got -1"},
		{"negative delayed timeout", &sluicev1.IndexSettings{NodeLeftDelayedTimeout: durationpb.New(-time.Second)}, 0, 0, "node_left_delayed_timeout"},
		{"bad sync interval", &sluicev1.IndexSettings{TranslogSyncInterval: durationpb.New(0)}, 0, 0, "translog_sync_interval"},
		{"sync interval below the floor", &sluicev1.IndexSettings{TranslogSyncInterval: durationpb.New(time.Millisecond)}, 0, 0, "translog_sync_interval: must be at least 100ms"},
		{"refresh below the floor", &sluicev1.IndexSettings{RefreshInterval: durationpb.New(time.Nanosecond)}, 0, 0, "refresh_interval: must be at least 100ms, or -1"},
		{"refresh at the floor", &sluicev1.IndexSettings{RefreshInterval: durationpb.New(100 * time.Millisecond)}, 1, 1, ""},
		{"refresh off", &sluicev1.IndexSettings{RefreshInterval: durationpb.New(-time.Millisecond)}, 1, 1, ""},
		{"refresh off with 0", &sluicev1.IndexSettings{RefreshInterval: durationpb.New(0)}, 1, 1, ""},
		{"negative buffer", &sluicev1.IndexSettings{IndexingBufferBytes: -1}, 0, 0, "indexing_buffer_bytes"},
		{"huge buffer", &sluicev1.IndexSettings{IndexingBufferBytes: 1 << 40}, 0, 0, "indexing_buffer_bytes"},
		{"NaN merge rate", &sluicev1.IndexSettings{MergeMaxMbPerSec: math.NaN()}, 0, 0, "merge_max_mb_per_sec"},
		{"unknown durability", &sluicev1.IndexSettings{TranslogDurability: 7}, 0, 0, "translog_durability: unknown value 7"},
		{"negative fields limit", &sluicev1.IndexSettings{MappingTotalFieldsLimit: -1}, 0, 0, "mapping_total_fields_limit"},
		{"depth limit too large", &sluicev1.IndexSettings{MappingDepthLimit: 101}, 0, 0, "mapping_depth_limit"},
		{"limits", &sluicev1.IndexSettings{MappingTotalFieldsLimit: 5000, MappingDepthLimit: 50, MappingFieldNameLengthLimit: 1000}, 1, 1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NormalizeSettings(tt.in)
			if tt.want != "" {
				if !errors.Is(err, state.ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("err = %v, want %q", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.NumberOfShards != tt.shards || got.NumberOfRoutingShards != tt.rs {
				t.Errorf("got %d/%d, want %d/%d", got.NumberOfShards, got.NumberOfRoutingShards, tt.shards, tt.rs)
			}
		})
	}
}

func TestMergeSettings(t *testing.T) {
	cur := &sluicev1.IndexSettings{NumberOfShards: 2, NumberOfRoutingShards: 4, NumberOfReplicas: 1,
		RefreshInterval: durationpb.New(30 * time.Second), MergeMaxMbPerSec: 20}
	tests := []struct {
		name   string
		update *sluicev1.IndexSettings
		mask   []string
		want   *sluicev1.IndexSettings // nil: an error containing err
		err    string
	}{
		{"set fields change", &sluicev1.IndexSettings{NumberOfReplicas: 3}, nil,
			&sluicev1.IndexSettings{NumberOfShards: 2, NumberOfRoutingShards: 4, NumberOfReplicas: 3, RefreshInterval: durationpb.New(30 * time.Second), MergeMaxMbPerSec: 20}, ""},
		{"zero without mask leaves it", &sluicev1.IndexSettings{}, nil, cur, ""},
		{"mask sets zero", &sluicev1.IndexSettings{}, []string{"number_of_replicas", "merge_max_mb_per_sec"},
			&sluicev1.IndexSettings{NumberOfShards: 2, NumberOfRoutingShards: 4, RefreshInterval: durationpb.New(30 * time.Second)}, ""},
		{"mask clears a duration back to its default", &sluicev1.IndexSettings{NumberOfReplicas: 5}, []string{"refresh_interval"},
			&sluicev1.IndexSettings{NumberOfShards: 2, NumberOfRoutingShards: 4, NumberOfReplicas: 1, MergeMaxMbPerSec: 20}, ""},
		{"static equal is fine", &sluicev1.IndexSettings{NumberOfShards: 2}, nil, cur, ""},
		{"static change", &sluicev1.IndexSettings{NumberOfShards: 3}, nil, nil, "number_of_shards: is a static setting"},
		{"static in mask, unset", &sluicev1.IndexSettings{}, []string{"number_of_routing_shards"}, nil, "number_of_routing_shards: is a static setting"},
		{"unknown mask field", &sluicev1.IndexSettings{}, []string{"replicas"}, nil, "update_mask: [replicas] is not an index setting"},
		{"bounded replicas", &sluicev1.IndexSettings{NumberOfReplicas: 40}, nil, nil, "number_of_replicas: must be between 0 and 32"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := MergeSettings(cur, tt.update, tt.mask)
			if tt.want == nil {
				if !errors.Is(err, state.ErrInvalid) || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func field(t sluicev1.FieldType) *sluicev1.FieldMapping { return &sluicev1.FieldMapping{Type: t} }

var (
	text    = sluicev1.FieldType_FIELD_TYPE_TEXT
	keyword = sluicev1.FieldType_FIELD_TYPE_KEYWORD
	long    = sluicev1.FieldType_FIELD_TYPE_LONG
)

func TestValidateMapping(t *testing.T) {
	yes := true
	tests := []struct {
		name  string
		props map[string]*sluicev1.FieldMapping
		want  string
	}{
		{"ok", map[string]*sluicev1.FieldMapping{"title": field(text), "user.id": field(keyword), "n": field(long)}, ""},
		{"cjk analyzer", map[string]*sluicev1.FieldMapping{"t": {Type: text, Analyzer: "cjk"}}, ""},
		{"no type", map[string]*sluicev1.FieldMapping{"t": {}}, "field [t]: type is required"},
		{"unknown type", map[string]*sluicev1.FieldMapping{"t": {Type: 99}}, "field [t]: unknown type"},
		{"unknown analyzer", map[string]*sluicev1.FieldMapping{"t": {Type: text, Analyzer: "klingon"}}, "field [t]: analyzer [klingon]"},
		{"analyzer on keyword", map[string]*sluicev1.FieldMapping{"k": {Type: keyword, Analyzer: "standard"}}, "field [k]: [analyzer]"},
		{"doc values on text", map[string]*sluicev1.FieldMapping{"t": {Type: text, DocValues: &yes}}, "[doc_values]"},
		{"metadata field", map[string]*sluicev1.FieldMapping{"_id": field(keyword)}, "field [_id]"},
		{"empty segment", map[string]*sluicev1.FieldMapping{"a..b": field(keyword)}, "field [a..b]"},
		{"leaf and object", map[string]*sluicev1.FieldMapping{"a": field(keyword), "a-z": field(keyword), "a.b": field(long)}, "field [a]: cannot be both"},
		{"depth at the limit", map[string]*sluicev1.FieldMapping{"a.b.c": field(long)}, ""},
		{"past the depth limit", map[string]*sluicev1.FieldMapping{"a.b.c.d": field(long)}, "field [a.b.c.d]: limit of mapping depth [3]"},
		{"name past the length limit", map[string]*sluicev1.FieldMapping{"abcdefghijk": field(long)}, "field [abcdefghijk]: field name is 11 bytes long"},
		{"fields and objects past the total", map[string]*sluicev1.FieldMapping{"a.x": field(long), "a.y": field(long), "b.x": field(long)}, "limit of total fields [4]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateMapping(&sluicev1.Mapping{Properties: tt.props}, mapping.Limits{TotalFields: 4, Depth: 3, FieldNameLength: 10})
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, state.ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestMergeMapping(t *testing.T) {
	no := false
	cur := &sluicev1.Mapping{Properties: map[string]*sluicev1.FieldMapping{"title": field(text), "n": field(long)}}
	tests := []struct {
		name   string
		update map[string]*sluicev1.FieldMapping
		fields int
		want   string
	}{
		{"adds", map[string]*sluicev1.FieldMapping{"tag": field(keyword)}, 3, ""},
		{"same field with explicit defaults", map[string]*sluicev1.FieldMapping{"title": {Type: text, Analyzer: "standard", DocValues: &no}}, 2, ""},
		{"type change", map[string]*sluicev1.FieldMapping{"n": field(keyword)}, 0, "field [n]: cannot change type from [long] to [keyword]"},
		{"analyzer change", map[string]*sluicev1.FieldMapping{"title": {Type: text, Analyzer: "cjk"}}, 0, "field [title]: cannot change [analyzer]"},
		{"index change", map[string]*sluicev1.FieldMapping{"n": {Type: long, Index: &no}}, 0, "field [n]: cannot change [index]"},
		{"object over leaf", map[string]*sluicev1.FieldMapping{"n.x": field(long)}, 0, "field [n]"},
		{"up to the total", map[string]*sluicev1.FieldMapping{"a": field(long), "b": field(long)}, 4, ""},
		{"past the total", map[string]*sluicev1.FieldMapping{"a": field(long), "b": field(long), "c": field(long)}, 0, "limit of total fields [4] has been exceeded while adding 3 new fields"},
		{"past the depth", map[string]*sluicev1.FieldMapping{"a.b.c": field(long)}, 0, "field [a.b.c]: limit of mapping depth [2]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := MergeMapping(cur, &sluicev1.Mapping{Properties: tt.update}, mapping.Limits{TotalFields: 4, Depth: 2})
			if tt.want != "" {
				if !errors.Is(err, state.ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("err = %v, want %q", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Properties) != tt.fields {
				t.Errorf("%d fields, want %d", len(got.Properties), tt.fields)
			}
		})
	}
	if len(cur.Properties) != 2 {
		t.Error("MergeMapping changed its input")
	}
	// A mapping past a lowered limit takes updates that add nothing.
	if _, err := MergeMapping(cur, &sluicev1.Mapping{Properties: map[string]*sluicev1.FieldMapping{"n": field(long)}}, mapping.Limits{TotalFields: 1}); err != nil {
		t.Fatal(err)
	}
	// The conflict names its field.
	_, err := MergeMapping(cur, &sluicev1.Mapping{Properties: map[string]*sluicev1.FieldMapping{"n": field(text)}}, mapping.Limits{})
	var fe interface{ ErrorField() string }
	if !errors.As(err, &fe) || fe.ErrorField() != "n" {
		t.Fatalf("conflict does not name its field: %v", err)
	}
}

func newService(t *testing.T) *Service {
	return New(state.NewStore(etcdtest.New(t), ""))
}

func create(t *testing.T, s *Service, name string, shards int32, aliases ...string) *sluicev1.IndexInfo {
	t.Helper()
	info, err := s.CreateIndex(context.Background(), &sluicev1.CreateIndexRequest{Name: name,
		Settings: &sluicev1.IndexSettings{NumberOfShards: shards}, Aliases: aliases}, CreateOptions{})
	if err != nil {
		t.Fatalf("CreateIndex(%s): %v", name, err)
	}
	return info
}

func TestCreateGetDelete(t *testing.T) {
	s := newService(t)
	ctx := context.Background()
	info := create(t, s, "logs", 3, "all", "current")
	if info.Uuid == "" || len(info.Shards) != 3 || info.State != sluicev1.IndexState_INDEX_STATE_OPEN {
		t.Fatalf("created %v", info)
	}
	for _, sh := range info.Shards {
		if sh.State != sluicev1.ShardState_SHARD_STATE_UNASSIGNED || !sh.Primary {
			t.Errorf("new shard %v", sh)
		}
	}
	if info.Health != sluicev1.HealthStatus_HEALTH_STATUS_RED {
		t.Errorf("health %v with unassigned shards", info.Health)
	}
	if _, err := s.CreateIndex(ctx, &sluicev1.CreateIndexRequest{Name: "logs"}, CreateOptions{}); !errors.Is(err, state.ErrAlreadyExists) {
		t.Errorf("second create: %v", err)
	}
	if _, err := s.CreateIndex(ctx, &sluicev1.CreateIndexRequest{Name: "all"}, CreateOptions{}); !errors.Is(err, state.ErrInvalid) {
		t.Errorf("create with an alias's name: %v", err)
	}
	got, err := s.GetIndex(ctx, "current")
	if err != nil || got.Name != "logs" || strings.Join(got.Aliases, ",") != "all,current" {
		t.Fatalf("GetIndex(alias) = %v, %v", got, err)
	}
	create(t, s, "other", 1, "all")
	if _, err := s.GetIndex(ctx, "all"); !errors.Is(err, state.ErrInvalid) {
		t.Errorf("GetIndex(alias of two) = %v", err)
	}

	uuid, err := s.DeleteIndex(ctx, "logs")
	if err != nil || uuid != info.Uuid {
		t.Fatalf("DeleteIndex = %q, %v", uuid, err)
	}
	st, _ := s.Store.Load(ctx)
	if _, ok := st.Aliases["current"]; ok {
		t.Error("alias left pointing nowhere was kept")
	}
	if a := st.Aliases["all"]; a == nil || strings.Join(a.Info.Indices, ",") != "other" {
		t.Errorf("alias all = %v", a)
	}
	resp, _ := s.Store.Client.Get(ctx, s.Store.Keys.IndexRouting(uuid), clientv3.WithPrefix())
	if len(resp.Kvs) != 0 {
		t.Errorf("%d routing keys left", len(resp.Kvs))
	}
	if _, err := s.DeleteIndex(ctx, "logs"); !errors.Is(err, state.ErrNotFound) {
		t.Errorf("second delete: %v", err)
	}
}

func TestCreateManyShardsInBatches(t *testing.T) {
	s := newService(t)
	s.MaxTxnOps = 16
	info := create(t, s, "big", 100)
	if len(info.Shards) != 100 || info.State != sluicev1.IndexState_INDEX_STATE_OPEN {
		t.Fatalf("shards %d state %v", len(info.Shards), info.State)
	}
	for i, sh := range info.Shards {
		if sh.Reason == "routing entry missing" || int(sh.Shard) != i {
			t.Fatalf("shard %d: %v", i, sh)
		}
	}
}

func TestConcurrentCreateOneWins(t *testing.T) {
	s := newService(t)
	var wg sync.WaitGroup
	errs := make(chan error, 5)
	for range 5 {
		wg.Go(func() {
			_, err := s.CreateIndex(context.Background(), &sluicev1.CreateIndexRequest{Name: "x"}, CreateOptions{})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	var ok, exists int
	for err := range errs {
		switch {
		case err == nil:
			ok++
		case errors.Is(err, state.ErrAlreadyExists):
			exists++
		default:
			t.Errorf("unexpected: %v", err)
		}
	}
	if ok != 1 || exists != 4 {
		t.Errorf("%d created, %d already existed", ok, exists)
	}
}

func TestUpdateAliases(t *testing.T) {
	s := newService(t)
	ctx := context.Background()
	create(t, s, "v1", 1, "live")
	create(t, s, "v2", 1)
	add := sluicev1.AliasActionType_ALIAS_ACTION_TYPE_ADD
	remove := sluicev1.AliasActionType_ALIAS_ACTION_TYPE_REMOVE

	// The swap: both actions or neither.
	if err := s.UpdateAliases(ctx, []*sluicev1.AliasAction{
		{Type: remove, Alias: "live", Index: "v1"},
		{Type: add, Alias: "live", Index: "v2", IsWriteIndex: true},
	}); err != nil {
		t.Fatal(err)
	}
	as, _ := s.ListAliases(ctx, "")
	if len(as) != 1 || strings.Join(as[0].Indices, ",") != "v2" || as[0].WriteIndex != "v2" {
		t.Fatalf("aliases = %v", as)
	}
	tests := []struct {
		name    string
		actions []*sluicev1.AliasAction
		err     error
		msg     string
	}{
		{"missing index", []*sluicev1.AliasAction{{Type: add, Alias: "x", Index: "nope"}}, state.ErrNotFound, "nope"},
		{"alias equals an index", []*sluicev1.AliasAction{{Type: add, Alias: "v1", Index: "v2"}}, state.ErrInvalid, "index with the same name"},
		{"bad alias name", []*sluicev1.AliasAction{{Type: add, Alias: "Bad", Index: "v2"}}, state.ErrInvalid, "lowercase"},
		{"remove absent", []*sluicev1.AliasAction{{Type: remove, Alias: "live", Index: "v1"}}, state.ErrNotFound, "live"},
		{"no type", []*sluicev1.AliasAction{{Alias: "x", Index: "v1"}}, state.ErrInvalid, "type"},
		{"atomic: second fails, first not applied", []*sluicev1.AliasAction{
			{Type: add, Alias: "extra", Index: "v1"},
			{Type: add, Alias: "extra", Index: "nope"}}, state.ErrNotFound, "nope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.UpdateAliases(ctx, tt.actions)
			if !errors.Is(err, tt.err) || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("err = %v, want %v containing %q", err, tt.err, tt.msg)
			}
		})
	}
	if as, _ := s.ListAliases(ctx, ""); len(as) != 1 {
		t.Errorf("a failed update changed aliases: %v", as)
	}
}

func TestSettingsAndMapping(t *testing.T) {
	s := newService(t)
	ctx := context.Background()
	create(t, s, "x", 2, "ax")
	info, err := s.UpdateSettings(ctx, "ax", &sluicev1.IndexSettings{RefreshInterval: durationpb.New(-1), NumberOfShards: 2}, nil)
	if err != nil || info.Settings.RefreshInterval.AsDuration() != -1 || info.Settings.NumberOfShards != 2 {
		t.Fatalf("UpdateSettings = %v, %v", info.GetSettings(), err)
	}
	if _, err := s.UpdateSettings(ctx, "x", &sluicev1.IndexSettings{NumberOfShards: 4}, nil); !errors.Is(err, state.ErrInvalid) || !strings.Contains(err.Error(), "static") {
		t.Errorf("static change: %v", err)
	}
	// Replicas are dynamic; 0 needs the mask.
	if info, err := s.UpdateSettings(ctx, "x", &sluicev1.IndexSettings{NumberOfReplicas: 2}, nil); err != nil || info.Settings.NumberOfReplicas != 2 {
		t.Fatalf("set replicas 2 = %v, %v", info.GetSettings(), err)
	}
	if info, err := s.UpdateSettings(ctx, "x", &sluicev1.IndexSettings{}, nil); err != nil || info.Settings.NumberOfReplicas != 2 {
		t.Fatalf("no change = %v, %v", info.GetSettings(), err)
	}
	if info, err := s.UpdateSettings(ctx, "x", &sluicev1.IndexSettings{}, []string{"number_of_replicas"}); err != nil || info.Settings.NumberOfReplicas != 0 {
		t.Fatalf("set replicas 0 = %v, %v", info.GetSettings(), err)
	}
	m := &sluicev1.Mapping{Properties: map[string]*sluicev1.FieldMapping{"n": field(long)}}
	if _, err := s.PutMapping(ctx, "x", m); err != nil {
		t.Fatal(err)
	}
	m2 := &sluicev1.Mapping{Properties: map[string]*sluicev1.FieldMapping{"n": field(keyword)}}
	if _, err := s.PutMapping(ctx, "x", m2); !errors.Is(err, state.ErrInvalid) || !strings.Contains(err.Error(), "field [n]") {
		t.Errorf("conflict: %v", err)
	}
	if _, err := s.PutMapping(ctx, "nope", m); !errors.Is(err, state.ErrNotFound) {
		t.Errorf("missing index: %v", err)
	}
}

func TestCreateColocated(t *testing.T) {
	s := newService(t)
	ctx := context.Background()
	src := create(t, s, "src", 2)
	// Two live nodes, the source's shards on them (as the allocator would).
	var tx state.Txn
	k := s.Store.Keys
	for i, n := range []string{"n1", "n2"} {
		tx.Put(k.Node(n), &statev1.Node{Address: "x"})
		tx.Put(k.Shard(src.Uuid, i), &statev1.ShardRouting{Shard: int32(i), PrimaryTerm: 1, InSync: []string{"a"}, Copies: []*statev1.ShardCopy{
			{Primary: true, NodeId: n, AllocationId: "a", State: sluicev1.ShardState_SHARD_STATE_STARTED}}})
	}
	if err := s.Store.Commit(ctx, &tx); err != nil {
		t.Fatal(err)
	}
	dst, err := s.CreateIndex(ctx, &sluicev1.CreateIndexRequest{Name: "dst",
		Settings: &sluicev1.IndexSettings{NumberOfShards: 4, NumberOfRoutingShards: 2}}, CreateOptions{ColocateWith: "src"})
	if !errors.Is(err, state.ErrInvalid) {
		t.Fatalf("routing shards must match: %v %v", dst, err)
	}
	// Source routing shards are 2; the destination needs the same.
	// Pinned with the source in the creating transaction (a local
	// reindex's task, stored next, keeps the pin).
	_, err = s.CreateIndex(ctx, &sluicev1.CreateIndexRequest{Name: "dst",
		Settings: &sluicev1.IndexSettings{NumberOfShards: 2}}, CreateOptions{ColocateWith: "src",
		Pin: &statev1.ShardPins{Holder: "task [t]", Indices: []*statev1.PinnedShards{{IndexUuid: src.Uuid}}}, PinKey: k.Pin("t")})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := s.GetIndex(ctx, "dst")
	st, err := s.Store.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if p := st.Pins["t"]; len(p.GetIndices()) != 2 || p.Indices[1].IndexUuid != got.Uuid || st.PinnedBy(state.ShardID{Index: got.Uuid, Shard: 1}) != "task [t]" {
		t.Errorf("pins = %v, want the source and the new index", p)
	}
	for i, sh := range got.Shards {
		want := []string{"n1", "n2"}[i]
		if sh.NodeId != want || sh.State != sluicev1.ShardState_SHARD_STATE_INITIALIZING || sh.AllocationId == "" || sh.PrimaryTerm != 1 {
			t.Errorf("dest shard %d: %v, want on %s", i, sh, want)
		}
	}
	// With a replica: the primaries placed next to their sources, the
	// replicas left to the allocator (they recover from started primaries).
	if _, err = s.CreateIndex(ctx, &sluicev1.CreateIndexRequest{Name: "dst2",
		Settings: &sluicev1.IndexSettings{NumberOfShards: 2, NumberOfReplicas: 1}}, CreateOptions{ColocateWith: "src"}); err != nil {
		t.Fatal(err)
	}
	got, _ = s.GetIndex(ctx, "dst2")
	if len(got.Shards) != 4 {
		t.Fatalf("dst2 copies %v, want 4", got.Shards)
	}
	for i, sh := range got.Shards {
		if want := i%2 == 0; sh.Primary != want || sh.Shard != int32(i/2) {
			t.Errorf("copy %d: %v, want shard %d, primary %v", i, sh, i/2, want)
		}
		if !sh.Primary && (sh.NodeId != "" || sh.State != sluicev1.ShardState_SHARD_STATE_UNASSIGNED) {
			t.Errorf("replica %d: %v, want unassigned", i, sh)
		}
	}
}

// TestMergeSettingsChecksWhatChanges: an index stored before a rule (a
// 1ns refresh) can still change its other settings; the rule holds for
// what an update sets.
func TestMergeSettingsChecksWhatChanges(t *testing.T) {
	old := &sluicev1.IndexSettings{NumberOfShards: 1, RefreshInterval: durationpb.New(time.Nanosecond)}
	got, err := MergeSettings(old, &sluicev1.IndexSettings{TranslogDurability: sluicev1.TranslogDurability_TRANSLOG_DURABILITY_ASYNC,
		MappingTotalFieldsLimit: 2000}, nil)
	if err != nil || got.MappingTotalFieldsLimit != 2000 || got.TranslogDurability != sluicev1.TranslogDurability_TRANSLOG_DURABILITY_ASYNC {
		t.Fatalf("%v %v", got, err)
	}
	_, err = MergeSettings(old, &sluicev1.IndexSettings{RefreshInterval: durationpb.New(time.Millisecond)}, nil)
	var fe interface{ ErrorField() string }
	if !errors.As(err, &fe) || fe.ErrorField() != "refresh_interval" || !errors.Is(err, state.ErrInvalid) {
		t.Fatalf("1ms refresh: %v", err)
	}
}

// TestTooLargeForOneTransaction: changes beyond what etcd takes in one
// transaction are refused as invalid requests, not sent to fail there:
// too many alias actions, a mapping record too large.
func TestTooLargeForOneTransaction(t *testing.T) {
	s := newService(t)
	ctx := context.Background()
	create(t, s, "v1", 1)
	var actions []*sluicev1.AliasAction
	for i := range 100 {
		actions = append(actions, &sluicev1.AliasAction{Type: sluicev1.AliasActionType_ALIAS_ACTION_TYPE_ADD,
			Alias: fmt.Sprintf("a%d", i), Index: "v1"})
	}
	if err := s.UpdateAliases(ctx, actions); !errors.Is(err, state.ErrInvalid) || !strings.Contains(err.Error(), "smaller parts") {
		t.Fatalf("100 alias actions: %v", err)
	}
	if err := s.UpdateAliases(ctx, actions[:40]); err != nil {
		t.Fatalf("40 alias actions: %v", err)
	}
	_, err := s.UpdateSettings(ctx, "v1", &sluicev1.IndexSettings{MappingTotalFieldsLimit: 100000, MappingFieldNameLengthLimit: 10000}, nil)
	if err != nil {
		t.Fatal(err)
	}
	props := map[string]*sluicev1.FieldMapping{}
	for i := range 5000 {
		props[fmt.Sprintf("%s%d", strings.Repeat("f", 200), i)] = field(long)
	}
	if _, err := s.PutMapping(ctx, "v1", &sluicev1.Mapping{Properties: props}); !errors.Is(err, state.ErrInvalid) || !strings.Contains(err.Error(), "bytes of cluster state") {
		t.Fatalf("a 1.3 MB mapping: %v", err)
	}
}
