package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sluice-search/sluice/client"
	"github.com/sluice-search/sluice/esjson"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// printJSON writes m as indented JSON for people and for jq, not
// protobuf JSON: field names as in the .proto (snake_case, like
// Elasticsearch's), enum values by their short names ("text", "green";
// client.EnumName), 64-bit integers as numbers (protobuf JSON quotes
// them), documents (_source) as the JSON they are, durations as
// Elasticsearch time values ("30s", "0.26ms"), timestamps in RFC 3339 and
// mappings as Elasticsearch mapping JSON. Numbers and booleans are written when
// zero ("shard": 0, "timed_out": false); empty strings, lists and unset
// messages are left out.
func printJSON(w io.Writer, m proto.Message) error {
	var buf bytes.Buffer
	if err := writeMessage(&buf, m.ProtoReflect()); err != nil {
		return err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, buf.Bytes(), "", "  "); err != nil {
		return err
	}
	out.WriteByte('\n')
	_, err := w.Write(out.Bytes())
	return err
}

func writeMessage(buf *bytes.Buffer, m protoreflect.Message) error {
	switch v := m.Interface().(type) {
	case *timestamppb.Timestamp:
		return writeString(buf, v.AsTime().UTC().Format(time.RFC3339Nano))
	case *durationpb.Duration:
		return writeString(buf, timeValue(v.AsDuration()))
	case *sluicev1.Mapping:
		b, err := esjson.MarshalMapping(readableMapping(v))
		buf.Write(b)
		return err
	}
	if m.Descriptor().FullName().Parent() == "google.protobuf" {
		// Other well-known types (Struct, wrappers) have a JSON form already.
		b, err := protojson.Marshal(m.Interface())
		buf.Write(b)
		return err
	}
	buf.WriteByte('{')
	first := true
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if !shown(m, fd) {
			continue
		}
		if !first {
			buf.WriteByte(',')
		}
		first = false
		if err := writeString(buf, string(fd.Name())); err != nil {
			return err
		}
		buf.WriteByte(':')
		if err := writeField(buf, fd, m.Get(fd)); err != nil {
			return err
		}
	}
	buf.WriteByte('}')
	return nil
}

// shown says whether a field is written: set ones, and numbers and
// booleans outside oneofs even at zero.
func shown(m protoreflect.Message, fd protoreflect.FieldDescriptor) bool {
	if m.Has(fd) {
		return true
	}
	if fd.IsList() || fd.IsMap() || fd.ContainingOneof() != nil || fd.HasPresence() {
		return false
	}
	switch fd.Kind() {
	case protoreflect.StringKind, protoreflect.BytesKind, protoreflect.EnumKind, protoreflect.MessageKind, protoreflect.GroupKind:
		return false
	}
	return true
}

func writeField(buf *bytes.Buffer, fd protoreflect.FieldDescriptor, v protoreflect.Value) error {
	switch {
	case fd.IsList():
		l := v.List()
		buf.WriteByte('[')
		for i := range l.Len() {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeScalar(buf, fd, l.Get(i)); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
		return nil
	case fd.IsMap():
		mp := v.Map()
		keys := map[string]protoreflect.MapKey{}
		mp.Range(func(k protoreflect.MapKey, _ protoreflect.Value) bool {
			keys[k.String()] = k
			return true
		})
		buf.WriteByte('{')
		for i, k := range slices.Sorted(maps.Keys(keys)) {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeString(buf, k); err != nil {
				return err
			}
			buf.WriteByte(':')
			if err := writeScalar(buf, fd.MapValue(), mp.Get(keys[k])); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
		return nil
	}
	return writeScalar(buf, fd, v)
}

func writeScalar(buf *bytes.Buffer, fd protoreflect.FieldDescriptor, v protoreflect.Value) error {
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return writeMessage(buf, v.Message())
	case protoreflect.EnumKind:
		et, err := protoregistry.GlobalTypes.FindEnumByName(fd.Enum().FullName())
		if err != nil {
			return err
		}
		return writeString(buf, client.EnumName(et.New(v.Enum())))
	case protoreflect.StringKind:
		return writeString(buf, v.String())
	case protoreflect.BytesKind:
		if b := v.Bytes(); json.Valid(b) {
			return json.Compact(buf, b) // a document: the JSON it is
		}
		return writeString(buf, base64.StdEncoding.EncodeToString(v.Bytes()))
	case protoreflect.BoolKind:
		buf.WriteString(strconv.FormatBool(v.Bool()))
	case protoreflect.FloatKind:
		writeFloat(buf, v.Float(), 32)
	case protoreflect.DoubleKind:
		writeFloat(buf, v.Float(), 64)
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		buf.WriteString(strconv.FormatUint(v.Uint(), 10))
	default: // the signed integer kinds
		buf.WriteString(strconv.FormatInt(v.Int(), 10))
	}
	return nil
}

// writeFloat writes the shortest decimal that reads back as f; NaN and
// the infinities, which JSON lacks, as strings.
func writeFloat(buf *bytes.Buffer, f float64, bits int) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		_ = writeString(buf, strconv.FormatFloat(f, 'g', -1, bits))
		return
	}
	buf.WriteString(strconv.FormatFloat(f, 'g', -1, bits))
}

// timeValue writes a setting ("30s") as the Elasticsearch time value it
// was given in, and a measured duration that is no whole number of
// milliseconds in fractional ones ("0.26ms"), not in nanoseconds.
func timeValue(d time.Duration) string {
	if d < 0 || d%time.Millisecond == 0 {
		return esjson.FormatTimeValue(d)
	}
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', -1, 64) + "ms"
}

func writeString(buf *bytes.Buffer, s string) error {
	b, err := json.Marshal(s)
	buf.Write(b)
	return err
}
