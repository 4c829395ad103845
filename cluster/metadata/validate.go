package metadata

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/sluice-search/sluice/cluster/routing"
	"github.com/sluice-search/sluice/cluster/state"
	"github.com/sluice-search/sluice/node/engine/analysis"
	"github.com/sluice-search/sluice/node/engine/document"
	"github.com/sluice-search/sluice/node/engine/mapping"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

func invalid(format string, args ...any) error { return state.Invalidf(format, args...) }

// ValidateName checks an index or alias name against Elasticsearch's rules:
// lowercase, at most 255 bytes, not starting with -, _ or +, none of
// \ / * ? " < > | , # : or space, and not "." or "..".
func ValidateName(kind, name string) error {
	bad := func(why string) error { return invalid("invalid %s name [%s]: %s", kind, name, why) }
	switch {
	case name == "":
		return invalid("%s name must not be empty", kind)
	case len(name) > 255:
		return bad("must not be longer than 255 bytes")
	case name == "." || name == "..":
		return bad(`must not be "." or ".."`)
	case strings.ContainsAny(name[:1], "-_+"):
		return bad("must not start with '-', '_' or '+'")
	case strings.ToLower(name) != name:
		return bad("must be lowercase")
	}
	if i := strings.IndexAny(name, "\\/*?\"<>|,#: "); i >= 0 {
		return bad(fmt.Sprintf("must not contain %q", name[i]))
	}
	return nil
}

// NormalizeSettings validates creation settings and fills defaults: one
// shard, routing shards equal to shards. The result is a new message.
func NormalizeSettings(in *sluicev1.IndexSettings) (*sluicev1.IndexSettings, error) {
	s := &sluicev1.IndexSettings{}
	if in != nil {
		s = proto.Clone(in).(*sluicev1.IndexSettings)
	}
	if s.NumberOfShards == 0 {
		s.NumberOfShards = 1
	}
	if s.NumberOfRoutingShards == 0 {
		s.NumberOfRoutingShards = s.NumberOfShards
	}
	p := routing.Params{Shards: int(s.NumberOfShards), RoutingShards: int(s.NumberOfRoutingShards)}
	if err := p.Validate(); err != nil {
		return nil, invalid("%v", err)
	}
	if err := validateDynamic(s); err != nil {
		return nil, err
	}
	return s, nil
}

// MinRefreshInterval is the shortest periodic refresh an index may have.
// Elasticsearch has no floor, but counts the interval in whole
// milliseconds, so "1ns" there turns refresh off; here it made a node burn
// most of a core refreshing a ten-document index. 100 ms is also
// Elasticsearch's floor for the translog sync interval.
const MinRefreshInterval = 100 * time.Millisecond

// MaxIndexingBufferBytes bounds a shard's indexing buffer: Lucene refuses
// a per-thread buffer of 2 GiB or more (IndexWriterConfig).
const MaxIndexingBufferBytes = 2 << 30

// MaxReplicas bounds number_of_replicas: every copy is a node's disk and
// memory, and a replica beyond the data nodes stays unassigned; the bound
// keeps a typo from writing thousands of copies into each routing entry.
const MaxReplicas = 32

// validateDynamic checks the dynamic settings an update sets (all of them
// at creation). Only what is set is checked, so an index created before a
// rule (a 1ns refresh) can still change its other settings.
func validateDynamic(s *sluicev1.IndexSettings) error {
	if n := s.GetNumberOfReplicas(); n < 0 || n > MaxReplicas {
		return state.InvalidFieldf("number_of_replicas", "number_of_replicas: must be between 0 and %d, got %d", MaxReplicas, n)
	}
	if d := s.GetNodeLeftDelayedTimeout(); d != nil && (!d.IsValid() || d.AsDuration() < 0) {
		return state.InvalidFieldf("node_left_delayed_timeout", "node_left_delayed_timeout: must be >= 0, got %v", d.AsDuration())
	}
	if d := s.GetRefreshInterval(); d != nil {
		if iv := d.AsDuration(); iv > 0 && iv < MinRefreshInterval {
			return state.InvalidFieldf("refresh_interval", "refresh_interval: must be at least %v, or -1 to refresh only when asked; got %v", MinRefreshInterval, iv)
		}
	}
	if d := s.GetTranslogSyncInterval(); d != nil && d.AsDuration() < MinRefreshInterval {
		return state.InvalidFieldf("translog_sync_interval", "translog_sync_interval: must be at least %v, got %v", MinRefreshInterval, d.AsDuration())
	}
	if n := s.GetIndexingBufferBytes(); n < 0 || n > MaxIndexingBufferBytes {
		return state.InvalidFieldf("indexing_buffer_bytes", "indexing_buffer_bytes: must be between 0 (the node's default) and %d, got %d", int64(MaxIndexingBufferBytes), n)
	}
	if _, ok := sluicev1.TranslogDurability_name[int32(s.GetTranslogDurability())]; !ok {
		return state.InvalidFieldf("translog_durability", "translog_durability: unknown value %d", s.GetTranslogDurability())
	}
	if f := s.GetMergeMaxMbPerSec(); math.IsNaN(f) || math.IsInf(f, 0) {
		return state.InvalidFieldf("merge_max_mb_per_sec", "merge_max_mb_per_sec: must be a finite number, got %v", f)
	}
	for _, l := range []struct {
		field    string
		n, limit int32
	}{
		{"mapping_total_fields_limit", s.GetMappingTotalFieldsLimit(), math.MaxInt32},
		{"mapping_depth_limit", s.GetMappingDepthLimit(), mapping.MaxDepthLimit},
		{"mapping_field_name_length_limit", s.GetMappingFieldNameLengthLimit(), math.MaxInt32},
	} {
		if l.n < 0 || l.n > l.limit {
			return state.InvalidFieldf(l.field, "%s: must be between 0 (the default) and %d, got %d", l.field, l.limit, l.n)
		}
	}
	return nil
}

// MergeSettings applies an update of dynamic settings to current. With an
// empty mask, the fields set in update change (a zero value means "leave
// it"); with a mask, exactly the fields it names (by .proto name) take
// update's values, zero included — the only way to set 0 replicas or go
// back to a default. Static settings (shard counts) must be left out, or
// equal current's. Only the changed fields are validated (validateDynamic).
func MergeSettings(current, update *sluicev1.IndexSettings, mask []string) (*sluicev1.IndexSettings, error) {
	out := proto.Clone(current).(*sluicev1.IndexSettings)
	changed := &sluicev1.IndexSettings{}
	cur, upd, dst, chg := current.ProtoReflect(), update.ProtoReflect(), out.ProtoReflect(), changed.ProtoReflect()
	fields := cur.Descriptor().Fields()
	if len(mask) == 0 {
		for i := range fields.Len() {
			if fd := fields.Get(i); upd.Has(fd) {
				mask = append(mask, string(fd.Name()))
			}
		}
	}
	for _, path := range mask {
		fd := fields.ByName(protoreflect.Name(path))
		if fd == nil {
			return nil, state.InvalidFieldf("update_mask", "update_mask: [%s] is not an index setting (settings have %s)", path, settingNames(fields))
		}
		if staticSettings[path] {
			if !proto.Equal(wrap(cur, fd), wrap(upd, fd)) {
				return nil, state.InvalidFieldf(path, "%s: is a static setting and cannot be changed on an existing index (from %v to %v)", path, cur.Get(fd), upd.Get(fd))
			}
			continue
		}
		if upd.Has(fd) {
			dst.Set(fd, upd.Get(fd))
			chg.Set(fd, upd.Get(fd))
		} else {
			dst.Clear(fd)
		}
	}
	if err := validateDynamic(changed); err != nil {
		return nil, err
	}
	return out, nil
}

// staticSettings are fixed at creation.
var staticSettings = map[string]bool{"number_of_shards": true, "number_of_routing_shards": true}

// wrap holds one field of m alone, to compare it.
func wrap(m protoreflect.Message, fd protoreflect.FieldDescriptor) proto.Message {
	out := m.New()
	if m.Has(fd) {
		out.Set(fd, m.Get(fd))
	}
	return out.Interface()
}

func settingNames(fields protoreflect.FieldDescriptors) string {
	names := make([]string, fields.Len())
	for i := range names {
		names[i] = string(fields.Get(i).Name())
	}
	return strings.Join(names, ", ")
}

// metadataFields are the names a mapping must not define.
var metadataFields = []string{"_id", "_source", "_routing", "_index", "_seq_no", "_version"}

// ValidateMapping checks a mapping: field names, types, analyzers, that no
// field is both a leaf and an object ("a" and "a.b"), and the index's
// mapping limits.
func ValidateMapping(m *sluicev1.Mapping, limits mapping.Limits) error {
	if m == nil {
		return nil
	}
	if _, ok := sluicev1.DynamicMapping_name[int32(m.GetDynamic())]; !ok {
		return state.InvalidFieldf("dynamic", "mapping: dynamic: unknown value %d", m.GetDynamic())
	}
	names := slices.Sorted(maps.Keys(m.GetProperties()))
	for _, name := range names {
		if err := validateField(name, m.GetProperties()[name], limits); err != nil {
			return err
		}
	}
	if err := checkTotal(names, len(names), limits); err != nil {
		return err
	}
	// Sorted, "a" comes right before "a.b..." if both exist ("a-b" sorts
	// between them, so check every later name with the prefix).
	for i, name := range names {
		for _, later := range names[i+1:] {
			if !strings.HasPrefix(later, name) {
				break
			}
			if strings.HasPrefix(later, name+".") {
				return state.InvalidFieldf(name, "mapping: field [%s]: cannot be both a field and an object (field [%s])", name, later)
			}
		}
	}
	return nil
}

// checkTotal checks the fields of a mapping (sorted) and the objects their
// paths imply against the total fields limit, added of them being new.
func checkTotal(names []string, added int, limits mapping.Limits) error {
	objects := map[string]bool{}
	for _, name := range names {
		for i := range len(name) {
			if name[i] == '.' {
				objects[name[:i]] = true
			}
		}
	}
	if err := limits.CheckTotal(len(names)+len(objects), added, ""); err != nil {
		return state.InvalidFieldf("", "mapping: %s", err.(*mapping.FieldError).Reason)
	}
	return nil
}

func validateField(name string, f *sluicev1.FieldMapping, limits mapping.Limits) error {
	bad := func(format string, args ...any) error {
		return state.InvalidFieldf(name, "mapping: field [%s]: %s", name, fmt.Sprintf(format, args...))
	}
	switch {
	case strings.TrimSpace(name) == "":
		return bad("field name must not be empty")
	case slices.Contains(metadataFields, name):
		return bad("is a metadata field and cannot be mapped")
	case name[0] == '.' || name[len(name)-1] == '.' || strings.Contains(name, ".."):
		return bad("field name must not contain an empty path segment")
	}
	if err := limits.CheckName(name, false); err != nil {
		return bad("%s", err.(*mapping.FieldError).Reason)
	}
	if f.GetType() == sluicev1.FieldType_FIELD_TYPE_UNSPECIFIED {
		return bad("type is required")
	}
	t, ok := fieldType(f.GetType())
	if !ok {
		return bad("unknown type %d", f.GetType())
	}
	if t == document.Text {
		if a := analyzerName(f); !analysis.Known(a) {
			return bad("analyzer [%s] is not known (known: %s)", a, strings.Join(analysis.Names(), ", "))
		}
		if f.DocValues != nil && f.GetDocValues() {
			return bad("[doc_values] is not supported for [text] fields")
		}
	} else if f.GetAnalyzer() != "" {
		return bad("[analyzer] is only allowed on [text] fields, not [%s]", t)
	}
	return nil
}

// fieldType maps the API's field type to the engine's, by name, so the two
// enumerations cannot drift apart silently.
func fieldType(t sluicev1.FieldType) (document.FieldType, bool) {
	name, ok := sluicev1.FieldType_name[int32(t)]
	if !ok {
		return 0, false
	}
	return document.ParseFieldType(strings.ToLower(strings.TrimPrefix(name, "FIELD_TYPE_")))
}

func analyzerName(f *sluicev1.FieldMapping) string {
	if f.GetAnalyzer() == "" {
		return "standard"
	}
	return f.GetAnalyzer()
}

// effective is a field's mapping with defaults applied, for comparison.
type effective struct {
	typ       sluicev1.FieldType
	analyzer  string
	index     bool
	docValues bool
}

func effectiveField(f *sluicev1.FieldMapping) effective {
	e := effective{typ: f.GetType(), index: true, docValues: f.GetType() != sluicev1.FieldType_FIELD_TYPE_TEXT}
	if f.GetType() == sluicev1.FieldType_FIELD_TYPE_TEXT {
		e.analyzer = analyzerName(f)
	}
	if f.Index != nil {
		e.index = f.GetIndex()
	}
	if f.DocValues != nil {
		e.docValues = f.GetDocValues()
	}
	return e
}

// MergeMapping adds update's fields to current, as Elasticsearch's
// put-mapping does: new fields are added, identical ones kept, a changed
// field is a conflict naming it; a dynamic setting in update replaces
// current's. New fields are held to the index's limits (a mapping already
// past a lowered limit only refuses additions). Neither argument is
// changed.
func MergeMapping(current, update *sluicev1.Mapping, limits mapping.Limits) (*sluicev1.Mapping, error) {
	if err := ValidateMapping(update, mapping.Limits{TotalFields: math.MaxInt32, Depth: limits.Depth, FieldNameLength: limits.FieldNameLength}); err != nil {
		return nil, err
	}
	out := &sluicev1.Mapping{Properties: map[string]*sluicev1.FieldMapping{}, Dynamic: current.GetDynamic()}
	added := 0
	for name, f := range current.GetProperties() {
		out.Properties[name] = proto.Clone(f).(*sluicev1.FieldMapping)
	}
	for _, name := range slices.Sorted(maps.Keys(update.GetProperties())) {
		uf := update.GetProperties()[name]
		if old, ok := out.Properties[name]; ok {
			o, n := effectiveField(old), effectiveField(uf)
			if o != n {
				return nil, state.InvalidFieldf(name, "mapping conflict: field [%s]: %s", name, describeConflict(o, n))
			}
			continue
		}
		out.Properties[name] = proto.Clone(uf).(*sluicev1.FieldMapping)
		added++
	}
	if update.GetDynamic() != sluicev1.DynamicMapping_DYNAMIC_MAPPING_UNSPECIFIED {
		out.Dynamic = update.GetDynamic()
	}
	if err := ValidateMapping(out, mapping.Limits{TotalFields: math.MaxInt32, Depth: math.MaxInt32, FieldNameLength: math.MaxInt32}); err != nil {
		return nil, fmt.Errorf("mapping conflict: %w", err)
	}
	if added > 0 {
		if err := checkTotal(slices.Sorted(maps.Keys(out.Properties)), added, limits); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func describeConflict(o, n effective) string {
	typeName := func(t sluicev1.FieldType) string {
		return strings.ToLower(strings.TrimPrefix(t.String(), "FIELD_TYPE_"))
	}
	switch {
	case o.typ != n.typ:
		return fmt.Sprintf("cannot change type from [%s] to [%s]", typeName(o.typ), typeName(n.typ))
	case o.analyzer != n.analyzer:
		return fmt.Sprintf("cannot change [analyzer] from [%s] to [%s]", o.analyzer, n.analyzer)
	case o.index != n.index:
		return fmt.Sprintf("cannot change [index] from [%t] to [%t]", o.index, n.index)
	default:
		return fmt.Sprintf("cannot change [doc_values] from [%t] to [%t]", o.docValues, n.docValues)
	}
}
