package esjson

import (
	"errors"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// ErrInvalidSettings is the Kind of every settings error.
var ErrInvalidSettings = errors.New("invalid settings")

var settingsDoc = doc{ErrInvalidSettings}

// settingSetters read each index setting Sluice has, by its flat name.
// Elasticsearch's own names where it has the setting; Sluice's others keep
// their protobuf names.
var settingSetters = map[string]func(s *sluicev1.IndexSettings, path, name string, v *value) error{
	"index.number_of_shards":         intSetting(func(s *sluicev1.IndexSettings, n int32) { s.NumberOfShards = n }),
	"index.number_of_routing_shards": intSetting(func(s *sluicev1.IndexSettings, n int32) { s.NumberOfRoutingShards = n }),
	"index.number_of_replicas":       intSetting(func(s *sluicev1.IndexSettings, n int32) { s.NumberOfReplicas = n }),
	"index.refresh_interval":         timeSetting(func(s *sluicev1.IndexSettings, d *durationpb.Duration) { s.RefreshInterval = d }),
	"index.translog.sync_interval":   timeSetting(func(s *sluicev1.IndexSettings, d *durationpb.Duration) { s.TranslogSyncInterval = d }),
	"index.translog.durability": func(s *sluicev1.IndexSettings, path, name string, v *value) error {
		switch v.lowerOneOf("request", "async") {
		case "request":
			s.TranslogDurability = sluicev1.TranslogDurability_TRANSLOG_DURABILITY_REQUEST
		case "async":
			s.TranslogDurability = sluicev1.TranslogDurability_TRANSLOG_DURABILITY_ASYNC
		default:
			return settingsDoc.errorf(path, "[%s] must be request or async, got %s", name, describe(v))
		}
		return nil
	},
	"index.merge_max_mb_per_sec": func(s *sluicev1.IndexSettings, path, name string, v *value) error {
		f, ok := v.float(64)
		if !ok || math.IsInf(f, 0) || math.IsNaN(f) {
			return settingsDoc.errorf(path, "failed to parse value %s for setting [%s]: a number of MB/s", describe(v), name)
		}
		s.MergeMaxMbPerSec = f
		return nil
	},
	"index.mapping.total_fields.limit":      intSetting(func(s *sluicev1.IndexSettings, n int32) { s.MappingTotalFieldsLimit = n }),
	"index.mapping.depth.limit":             intSetting(func(s *sluicev1.IndexSettings, n int32) { s.MappingDepthLimit = n }),
	"index.mapping.field_name_length.limit": intSetting(func(s *sluicev1.IndexSettings, n int32) { s.MappingFieldNameLengthLimit = n }),
	"index.indexing_buffer_bytes": func(s *sluicev1.IndexSettings, path, name string, v *value) error {
		n, ok := v.int(64)
		if !ok {
			return settingsDoc.errorf(path, "failed to parse value %s for setting [%s]: a number of bytes", describe(v), name)
		}
		s.IndexingBufferBytes = n
		return nil
	},
}

// ParseSettings reads index settings as Elasticsearch takes them, nested
// ({"index": {"number_of_shards": 3, "translog": {"durability": "async"}}}),
// flat ({"index.number_of_shards": 3}) or without the "index." prefix, and
// numbers as numbers or strings:
//
//	index.number_of_shards, index.number_of_routing_shards,
//	index.number_of_replicas  integers
//	index.refresh_interval    a time value ("1s", "500ms", "-1": off)
//	index.translog.durability request or async
//	index.translog.sync_interval  a time value
//	index.merge_max_mb_per_sec    merge IO limit (Sluice's; 0 adaptive)
//	index.indexing_buffer_bytes   per-shard indexing buffer (Sluice's)
//	index.mapping.total_fields.limit, index.mapping.depth.limit,
//	index.mapping.field_name_length.limit  integers
//
// Any other setting is an error. Empty input is nil settings.
func ParseSettings(data []byte) (*sluicev1.IndexSettings, error) {
	v, err := settingsDoc.decodeObject(data, "settings")
	if v == nil {
		return nil, err
	}
	s := &sluicev1.IndexSettings{}
	seen := map[string]string{} // flat name to the path that set it
	var read func(path, prefix string, v *value) error
	read = func(path, prefix string, v *value) error {
		for _, m := range v.members {
			mpath, name := join(path, m.key), prefix+m.key
			if m.val.kind == kObject {
				if err := read(mpath, name+".", m.val); err != nil {
					return err
				}
				continue
			}
			if !strings.HasPrefix(name, "index.") {
				name = "index." + name
			}
			set, ok := settingSetters[name]
			if !ok {
				return settingsDoc.errorf(mpath, "unknown setting [%s] (Sluice has %s)", name, settingNames())
			}
			if m.val.kind == kNull {
				return settingsDoc.errorf(mpath, "[%s] is null: resetting a setting to its default is not supported; leave it out", name)
			}
			if first, dup := seen[name]; dup {
				return settingsDoc.errorf(mpath, "setting [%s] is given twice (also at %s)", name, first)
			}
			seen[name] = mpath
			if err := set(s, mpath, name, m.val); err != nil {
				return err
			}
		}
		return nil
	}
	if err := read("", "", v); err != nil {
		return nil, err
	}
	return s, nil
}

func settingNames() string {
	return strings.Join(slices.Sorted(maps.Keys(settingSetters)), ", ")
}

func intSetting(set func(*sluicev1.IndexSettings, int32)) func(*sluicev1.IndexSettings, string, string, *value) error {
	return func(s *sluicev1.IndexSettings, path, name string, v *value) error {
		n, ok := v.int(32)
		if !ok {
			return settingsDoc.errorf(path, "failed to parse value %s for setting [%s]: an integer", describe(v), name)
		}
		set(s, int32(n))
		return nil
	}
}

func timeSetting(set func(*sluicev1.IndexSettings, *durationpb.Duration)) func(*sluicev1.IndexSettings, string, string, *value) error {
	return func(s *sluicev1.IndexSettings, path, name string, v *value) error {
		text, ok := v.scalarText()
		if !ok || v.kind == kBool {
			return settingsDoc.errorf(path, "failed to parse setting [%s] with value %s as a time value", name, describe(v))
		}
		d, err := ParseTimeValue(text)
		if err != nil {
			return settingsDoc.errorf(path, "failed to parse setting [%s] with value [%s] as a time value: %v", name, text, err)
		}
		set(s, durationpb.New(d))
		return nil
	}
}

// timeUnits are Elasticsearch's time units, longest suffix first.
var timeUnits = []struct {
	suffix string
	unit   time.Duration
}{
	{"nanos", time.Nanosecond}, {"micros", time.Microsecond}, {"ms", time.Millisecond},
	{"s", time.Second}, {"m", time.Minute}, {"h", time.Hour}, {"d", 24 * time.Hour},
}

// FormatTimeValue writes d as the Elasticsearch time value ParseTimeValue
// reads back: in the largest unit that holds it exactly ("30s", "1500ms",
// "2h"); any negative duration is "-1" (off, as refresh_interval uses it).
func FormatTimeValue(d time.Duration) string {
	switch {
	case d < 0:
		return "-1"
	case d == 0:
		return "0"
	}
	i := len(timeUnits) - 1
	for d%timeUnits[i].unit != 0 { // ends at nanos (index 0), which divides all
		i--
	}
	return strconv.FormatInt(int64(d/timeUnits[i].unit), 10) + timeUnits[i].suffix
}

// ParseTimeValue reads an Elasticsearch time value: an integer and a unit
// (nanos, micros, ms, s, m, h, d), such as "30s"; "0" and "-1" need no unit.
func ParseTimeValue(s string) (time.Duration, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	if t == "0" || t == "-1" {
		n, _ := strconv.Atoi(t)
		return time.Duration(n) * time.Millisecond, nil
	}
	for _, u := range timeUnits {
		num, ok := strings.CutSuffix(t, u.suffix)
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(num), 10, 64)
		if err != nil {
			return 0, errors.New("the number must be an integer")
		}
		if n > math.MaxInt64/int64(u.unit) || n < math.MinInt64/int64(u.unit) {
			return 0, errors.New("out of range")
		}
		return time.Duration(n) * u.unit, nil
	}
	return 0, errors.New("unit is missing or unrecognized (nanos, micros, ms, s, m, h or d)")
}

// MarshalSettings writes the settings that are set as Elasticsearch shows
// them (GET /{index}/_settings): nested under "index" ("translog":
// {"durability": ...}), every value a string ("3", "30s", "async").
// ParseSettings reads it back to equal settings.
func MarshalSettings(s *sluicev1.IndexSettings) []byte {
	var index, translog obj
	str := func(o obj, key, val string) obj { return append(o, kv{key, val}) }
	if n := s.GetNumberOfShards(); n != 0 {
		index = str(index, "number_of_shards", strconv.Itoa(int(n)))
	}
	if n := s.GetNumberOfRoutingShards(); n != 0 {
		index = str(index, "number_of_routing_shards", strconv.Itoa(int(n)))
	}
	if s != nil {
		index = str(index, "number_of_replicas", strconv.Itoa(int(s.GetNumberOfReplicas())))
	}
	if d := s.GetRefreshInterval(); d != nil {
		index = str(index, "refresh_interval", FormatTimeValue(d.AsDuration()))
	}
	switch s.GetTranslogDurability() {
	case sluicev1.TranslogDurability_TRANSLOG_DURABILITY_REQUEST:
		translog = str(translog, "durability", "request")
	case sluicev1.TranslogDurability_TRANSLOG_DURABILITY_ASYNC:
		translog = str(translog, "durability", "async")
	}
	if d := s.GetTranslogSyncInterval(); d != nil {
		translog = str(translog, "sync_interval", FormatTimeValue(d.AsDuration()))
	}
	if translog != nil {
		index = append(index, kv{"translog", translog})
	}
	if f := s.GetMergeMaxMbPerSec(); f != 0 {
		index = str(index, "merge_max_mb_per_sec", strconv.FormatFloat(f, 'g', -1, 64))
	}
	if n := s.GetIndexingBufferBytes(); n != 0 {
		index = str(index, "indexing_buffer_bytes", strconv.FormatInt(n, 10))
	}
	if index == nil {
		index = obj{}
	}
	return marshal(obj{{"index", index}})
}
