package esjson

import (
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

func TestParseSettings(t *testing.T) {
	async := sluicev1.TranslogDurability_TRANSLOG_DURABILITY_ASYNC
	testParse(t, []jsonCase[*sluicev1.IndexSettings]{
		{"empty", ``, nil, ""},
		{"empty object", `{}`, &sluicev1.IndexSettings{}, ""},
		{"nested", `{"index":{"number_of_shards":3,"number_of_routing_shards":12,"number_of_replicas":0,"refresh_interval":"30s","translog":{"durability":"async","sync_interval":"5s"}}}`,
			&sluicev1.IndexSettings{NumberOfShards: 3, NumberOfRoutingShards: 12, RefreshInterval: durationpb.New(30 * time.Second),
				TranslogDurability: async, TranslogSyncInterval: durationpb.New(5 * time.Second)}, ""},
		{"flat", `{"index.number_of_shards":"3","index.translog.durability":"ASYNC","index.refresh_interval":"-1"}`,
			&sluicev1.IndexSettings{NumberOfShards: 3, TranslogDurability: async, RefreshInterval: durationpb.New(-time.Millisecond)}, ""},
		{"without the index prefix", `{"number_of_shards":2,"translog.sync_interval":"250ms"}`,
			&sluicev1.IndexSettings{NumberOfShards: 2, TranslogSyncInterval: durationpb.New(250 * time.Millisecond)}, ""},
		{"mixed", `{"index":{"translog.durability":"request"},"index.merge_max_mb_per_sec":40.5,"indexing_buffer_bytes":"1048576"}`,
			&sluicev1.IndexSettings{TranslogDurability: sluicev1.TranslogDurability_TRANSLOG_DURABILITY_REQUEST, MergeMaxMbPerSec: 40.5,
				IndexingBufferBytes: 1 << 20}, ""},
		{"mapping limits", `{"index":{"mapping":{"total_fields":{"limit":2000},"depth.limit":"30"}},"index.mapping.field_name_length.limit":100}`,
			&sluicev1.IndexSettings{MappingTotalFieldsLimit: 2000, MappingDepthLimit: 30, MappingFieldNameLengthLimit: 100}, ""},
	}, ParseSettings)
}

func TestParseSettingsErrors(t *testing.T) {
	testErrors(t, []errorCase{
		{"not an object", `[]`, "", "settings must be an object"},
		{"unknown setting", `{"index":{"codec":"best_compression"}}`, "index.codec", "unknown setting [index.codec] (Sluice has index.indexing_buffer_bytes,"},
		{"analysis", `{"analysis":{"analyzer":{"a":{"type":"custom"}}}}`, "analysis.analyzer.a.type", "unknown setting [index.analysis.analyzer.a.type]"},
		{"given twice", `{"index":{"number_of_shards":1},"index.number_of_shards":2}`, "index.number_of_shards", "setting [index.number_of_shards] is given twice (also at index.number_of_shards)"},
		{"not an integer", `{"number_of_shards":"three"}`, "number_of_shards", `failed to parse value "three" for setting [index.number_of_shards]`},
		{"fraction", `{"number_of_shards":1.5}`, "number_of_shards", "an integer"},
		{"no unit", `{"refresh_interval":"30"}`, "refresh_interval", "unit is missing or unrecognized"},
		{"fractional time", `{"refresh_interval":"1.5s"}`, "refresh_interval", "must be an integer"},
		{"time as a number", `{"refresh_interval":30}`, "refresh_interval", "unit is missing"},
		{"time overflow", `{"refresh_interval":"9999999999d"}`, "refresh_interval", "out of range"},
		{"durability", `{"translog":{"durability":"never"}}`, "translog.durability", `[index.translog.durability] must be request or async, got "never"`},
		{"null", `{"refresh_interval":null}`, "refresh_interval", "resetting a setting to its default is not supported"},
		{"merge throttle", `{"merge_max_mb_per_sec":"fast"}`, "merge_max_mb_per_sec", "a number of MB/s"},
	}, ParseSettings, ErrInvalidSettings)
}

func TestParseTimeValue(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"0": 0, "-1": -time.Millisecond, "30s": 30 * time.Second, "500ms": 500 * time.Millisecond, "2m": 2 * time.Minute,
		"1h": time.Hour, "2d": 48 * time.Hour, "10micros": 10 * time.Microsecond, "7nanos": 7, " 5S ": 5 * time.Second,
	} {
		if got, err := ParseTimeValue(in); err != nil || got != want {
			t.Errorf("ParseTimeValue(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "s", "1", "1.5s", "1 fortnight", "1m30s"} {
		if _, err := ParseTimeValue(bad); err == nil {
			t.Errorf("ParseTimeValue(%q) accepted", bad)
		}
	}
}

func TestFormatTimeValue(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0", -time.Second: "-1", -time.Millisecond: "-1", 30 * time.Second: "30s", 1500 * time.Millisecond: "1500ms",
		90 * time.Minute: "90m", 2 * time.Hour: "2h", 48 * time.Hour: "2d", 25 * time.Hour: "25h", 7: "7nanos", 3 * time.Microsecond: "3micros",
	} {
		got := FormatTimeValue(d)
		if got != want {
			t.Errorf("FormatTimeValue(%v) = %q, want %q", d, got, want)
		}
		// It reads back as the same duration (every negative one is off).
		if back, err := ParseTimeValue(got); err != nil || back != d && !(d < 0 && back < 0) {
			t.Errorf("ParseTimeValue(%q) = %v, %v; want %v", got, back, err, d)
		}
	}
}
