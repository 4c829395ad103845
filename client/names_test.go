package client

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

func TestEnumName(t *testing.T) {
	for _, tc := range []struct {
		v    protoreflect.Enum
		want string
	}{
		{sluicev1.FieldType_FIELD_TYPE_TEXT, "text"},
		{sluicev1.HealthStatus_HEALTH_STATUS_GREEN, "green"},
		{sluicev1.ReindexCopyMethod_REINDEX_COPY_METHOD_SEGMENTS, "segments"},
		{sluicev1.RefreshPolicy_REFRESH_POLICY_WAIT_FOR, "wait_for"},
		{sluicev1.TaskState(99), "99"},
	} {
		if got := EnumName(tc.v); got != tc.want {
			t.Errorf("EnumName(%v) = %q, want %q", tc.v, got, tc.want)
		}
	}
}

// TestEveryEnumHasItsPrefix: EnumName strips the prefix made from the
// type's name; an enum whose values do not carry it would print raw.
func TestEveryEnumHasItsPrefix(t *testing.T) {
	n := 0
	protoregistry.GlobalTypes.RangeEnums(func(et protoreflect.EnumType) bool {
		d := et.Descriptor()
		if d.ParentFile().Package() != "sluice.v1" {
			return true
		}
		n++
		for i := range d.Values().Len() {
			if name := string(d.Values().Get(i).Name()); !strings.HasPrefix(name, enumPrefix(d)) {
				t.Errorf("%s: value %s lacks the prefix %s", d.FullName(), name, enumPrefix(d))
			}
		}
		return true
	})
	if n < 10 {
		t.Errorf("only %d sluice.v1 enums registered", n)
	}
}

func TestParseEnum(t *testing.T) {
	for _, tc := range []struct {
		in      string
		allowed []sluicev1.ReindexMode
		want    sluicev1.ReindexMode
		err     string
	}{
		{in: "local", want: sluicev1.ReindexMode_REINDEX_MODE_LOCAL},
		{in: "Baseline", want: sluicev1.ReindexMode_REINDEX_MODE_BASELINE},
		{in: "fast", err: `--mode must be auto, local, remote or baseline, got "fast"`},
		{in: "unspecified", err: `--mode must be auto, local, remote or baseline, got "unspecified"`},
		{in: "", err: `--mode must be auto, local, remote or baseline, got ""`},
		{in: "remote", allowed: []sluicev1.ReindexMode{sluicev1.ReindexMode_REINDEX_MODE_LOCAL, sluicev1.ReindexMode_REINDEX_MODE_AUTO},
			err: `--mode must be auto or local, got "remote"`},
	} {
		got, err := ParseEnum("--mode", tc.in, tc.allowed...)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("%q: %v, want error %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: %v, %v", tc.in, got, err)
		}
	}
}
