package indexspec

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/durationpb"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/sluice-search/sluice/operator/api/v1alpha1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

func ptr[T any](v T) *T { return &v }

func TestSettings(t *testing.T) {
	tests := []struct {
		name string
		in   v1alpha1.IndexParameters
		want *sluicev1.IndexSettings
	}{
		{"zero is one shard", v1alpha1.IndexParameters{}, &sluicev1.IndexSettings{NumberOfShards: 1}},
		{"everything", v1alpha1.IndexParameters{Shards: 2, RoutingShards: ptr[int32](16), Settings: v1alpha1.IndexSettings{
			RefreshInterval: "1m30s", MergeThrottleMBPerSec: ptr[int32](40),
			Translog: v1alpha1.TranslogSettings{Durability: v1alpha1.TranslogDurabilityAsync, SyncInterval: "5s"}}},
			&sluicev1.IndexSettings{NumberOfShards: 2, NumberOfRoutingShards: 16, RefreshInterval: durationpb.New(90 * time.Second),
				MergeMaxMbPerSec: 40, TranslogDurability: sluicev1.TranslogDurability_TRANSLOG_DURABILITY_ASYNC,
				TranslogSyncInterval: durationpb.New(5 * time.Second)}},
		{"refresh off", v1alpha1.IndexParameters{Shards: 1, Settings: v1alpha1.IndexSettings{RefreshInterval: "-1"}},
			&sluicev1.IndexSettings{NumberOfShards: 1, RefreshInterval: durationpb.New(-time.Second)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Settings(&tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, protocmp.Transform()); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
	// Worded as the CLI words a wrong enum word (client.ParseEnum).
	_, err := Settings(&v1alpha1.IndexParameters{Settings: v1alpha1.IndexSettings{Translog: v1alpha1.TranslogSettings{Durability: "never"}}})
	if want := `settings.translog.durability must be request or async, got "never"`; err == nil || err.Error() != want {
		t.Errorf("unknown durability: %v, want %q", err, want)
	}
}

func TestSettingsUpdate(t *testing.T) {
	dur := durationpb.New
	tests := []struct {
		name             string
		desired, current *sluicev1.IndexSettings
		want             *sluicev1.IndexSettings
		mask             []string // every changed field, a zero replica count too
	}{
		{"unset current is the default", &sluicev1.IndexSettings{RefreshInterval: dur(time.Second),
			TranslogDurability: sluicev1.TranslogDurability_TRANSLOG_DURABILITY_REQUEST}, &sluicev1.IndexSettings{}, nil, nil},
		{"refresh changed", &sluicev1.IndexSettings{RefreshInterval: dur(5 * time.Second)}, &sluicev1.IndexSettings{},
			&sluicev1.IndexSettings{RefreshInterval: dur(5 * time.Second)}, []string{"refresh_interval"}},
		{"every negative refresh is off", &sluicev1.IndexSettings{RefreshInterval: dur(-time.Second)},
			&sluicev1.IndexSettings{RefreshInterval: dur(-time.Millisecond)}, nil, nil},
		{"unset desired is don't care", &sluicev1.IndexSettings{},
			&sluicev1.IndexSettings{MergeMaxMbPerSec: 40, TranslogSyncInterval: dur(time.Second)}, nil, nil},
		{"only what differs", &sluicev1.IndexSettings{NumberOfShards: 2, MergeMaxMbPerSec: 20, RefreshInterval: dur(time.Second),
			TranslogDurability: sluicev1.TranslogDurability_TRANSLOG_DURABILITY_ASYNC},
			&sluicev1.IndexSettings{NumberOfShards: 2, MergeMaxMbPerSec: 40},
			&sluicev1.IndexSettings{MergeMaxMbPerSec: 20, TranslogDurability: sluicev1.TranslogDurability_TRANSLOG_DURABILITY_ASYNC},
			[]string{"translog_durability", "merge_max_mb_per_sec"}},
		{"replicas added", &sluicev1.IndexSettings{NumberOfReplicas: 2}, &sluicev1.IndexSettings{NumberOfReplicas: 1},
			&sluicev1.IndexSettings{NumberOfReplicas: 2}, []string{"number_of_replicas"}},
		{"replicas back to 0", &sluicev1.IndexSettings{}, &sluicev1.IndexSettings{NumberOfReplicas: 1},
			&sluicev1.IndexSettings{}, []string{"number_of_replicas"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, mask := SettingsUpdate(tt.desired, tt.current)
			if diff := cmp.Diff(tt.want, got, protocmp.Transform()); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
			if !slices.Equal(mask, tt.mask) {
				t.Errorf("mask %v, want %v", mask, tt.mask)
			}
		})
	}
}

func TestMappingUpdate(t *testing.T) {
	field := func(t sluicev1.FieldType) *sluicev1.FieldMapping { return &sluicev1.FieldMapping{Type: t} }
	text, kw, long := sluicev1.FieldType_FIELD_TYPE_TEXT, sluicev1.FieldType_FIELD_TYPE_KEYWORD, sluicev1.FieldType_FIELD_TYPE_LONG
	current := &sluicev1.Mapping{Properties: map[string]*sluicev1.FieldMapping{"title": field(text), "n": field(long), "extra": field(kw)}}
	tests := []struct {
		name      string
		desired   *sluicev1.Mapping
		want      *sluicev1.Mapping
		conflicts []string
	}{
		{"nil desired", nil, nil, nil},
		{"same fields, and fields only in the cluster, change nothing",
			&sluicev1.Mapping{Properties: map[string]*sluicev1.FieldMapping{"title": field(text)}}, nil, nil},
		{"new field", &sluicev1.Mapping{Properties: map[string]*sluicev1.FieldMapping{"title": field(text), "tags": field(kw)}},
			&sluicev1.Mapping{Properties: map[string]*sluicev1.FieldMapping{"tags": field(kw)}}, nil},
		{"type change is a conflict", &sluicev1.Mapping{Properties: map[string]*sluicev1.FieldMapping{"n": field(kw)}},
			nil, []string{"n (long in the cluster, keyword in the spec)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, conflicts := MappingUpdate(tt.desired, current)
			if diff := cmp.Diff(tt.want, got, protocmp.Transform()); diff != "" {
				t.Errorf("update (-want +got)\n%s", diff)
			}
			if diff := cmp.Diff(tt.conflicts, conflicts); diff != "" {
				t.Errorf("conflicts (-want +got)\n%s", diff)
			}
		})
	}
}

func TestMapping(t *testing.T) {
	raw := func(s string) *v1alpha1.IndexParameters {
		return &v1alpha1.IndexParameters{Mapping: &runtime.RawExtension{Raw: []byte(s)}}
	}
	got, err := Mapping(raw(`{"dynamic": "strict", "properties": {"title": {"type": "text"}, "user": {"properties": {"id": {"type": "keyword"}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := &sluicev1.Mapping{Dynamic: sluicev1.DynamicMapping_DYNAMIC_MAPPING_STRICT, Properties: map[string]*sluicev1.FieldMapping{
		"title": {Type: sluicev1.FieldType_FIELD_TYPE_TEXT}, "user.id": {Type: sluicev1.FieldType_FIELD_TYPE_KEYWORD}}}
	if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	if m, err := Mapping(&v1alpha1.IndexParameters{}); m != nil || err != nil {
		t.Errorf("no mapping: %v, %v", m, err)
	}
	_, err = Mapping(raw(`{"properties": {"loc": {"type": "geo_point"}}}`))
	if want := "mapping: invalid mapping: properties.loc.type: No handler for type [geo_point] declared on field [loc]"; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("err = %v, want prefix %q", err, want)
	}
}
