package client

import (
	"fmt"
	"slices"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// EnumName is the name people write for an API enum value: lowercase,
// without the type's prefix (FIELD_TYPE_TEXT is "text",
// REINDEX_COPY_METHOD_SEGMENTS is "segments"). The CLI prints these, and
// the operator's resources use the same words.
func EnumName(v protoreflect.Enum) string {
	d := v.Descriptor()
	ev := d.Values().ByNumber(v.Number())
	if ev == nil {
		return fmt.Sprint(v.Number()) // a value newer than this build
	}
	return strings.ToLower(strings.TrimPrefix(string(ev.Name()), enumPrefix(d)))
}

// enumPrefix is the prefix every value of d shares, "HEALTH_STATUS_" for
// HealthStatus (buf's lint makes every enum's values carry one).
func enumPrefix(d protoreflect.EnumDescriptor) string {
	var b strings.Builder
	for i, r := range string(d.Name()) {
		if i > 0 && r >= 'A' && r <= 'Z' {
			b.WriteByte('_')
		}
		b.WriteRune(r)
	}
	return strings.ToUpper(b.String()) + "_"
}

// ParseEnum reads the name EnumName writes, in any case, for field (a
// flag or a resource field, named in the error). The zero (UNSPECIFIED)
// value is not a name; allowed, when given, narrows the values taken.
// Both the CLI and the operator read enum words with it, so a wrong one
// is worded the same by both: `--mode must be auto, local, remote or
// baseline, got "fast"`.
func ParseEnum[E interface {
	protoreflect.Enum
	~int32
}](field, name string, allowed ...E) (E, error) {
	var zero E
	values := zero.Descriptor().Values()
	var names []string
	for i := range values.Len() {
		v := E(values.Get(i).Number())
		if v == 0 || len(allowed) > 0 && !slices.Contains(allowed, v) {
			continue
		}
		if strings.EqualFold(name, EnumName(v)) {
			return v, nil
		}
		names = append(names, EnumName(v))
	}
	return zero, fmt.Errorf("%s must be %s, got %q", field, orList(names), name)
}

// orList writes "a, b or c".
func orList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
