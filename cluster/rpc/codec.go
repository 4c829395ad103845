package rpc

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// ErrMalformed marks a request whose bytes do not decode: not valid
// protobuf, a string field that is not valid UTF-8, nesting beyond
// protobuf's recursion limit. Every table maps it to INVALID_ARGUMENT.
var ErrMalformed = errors.New("malformed request")

// MalformedError is a request that did not decode, naming the field at
// fault when it is known (the path of a string that is not valid UTF-8).
type MalformedError struct {
	Field  string
	Reason string
}

func (e *MalformedError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("%v: %s", ErrMalformed, e.Reason)
	}
	return fmt.Sprintf("%v: %s: %s", ErrMalformed, e.Field, e.Reason)
}

func (e *MalformedError) Unwrap() error      { return ErrMalformed }
func (e *MalformedError) ErrorField() string { return e.Field }

// codec is the protobuf codec of Sluice's servers: gRPC's, except that a
// request that does not decode reaches the server's interceptors as an
// empty message carrying the decoding error, which they answer through
// the error table (INVALID_ARGUMENT). gRPC answers a decoding failure
// INTERNAL, before any interceptor runs; but the client sent those bytes,
// and must learn that the request is at fault, and where.
type codec struct{ encoding.CodecV2 }

// malformedField is the unknown field a malformed message carries its
// decoding error in.
const malformedField = protowire.MaxValidNumber

func (c codec) Unmarshal(data mem.BufferSlice, v any) error {
	err := c.CodecV2.Unmarshal(data, v)
	m, ok := v.(proto.Message)
	if err == nil || !ok {
		return err
	}
	reason := err.Error()
	switch {
	case strings.Contains(reason, "invalid UTF-8"):
		b := data.Materialize()
		if path := invalidUTF8(m.ProtoReflect().Descriptor(), b, "", 0); path != "" {
			reason = path + "\x00" + "string is not valid UTF-8"
		}
	case strings.Contains(reason, "recursion depth"):
		reason = "messages nest deeper than protobuf's recursion limit (queries nest at most 30 levels)"
	}
	proto.Reset(m)
	marker := protowire.AppendTag(nil, malformedField, protowire.BytesType)
	m.ProtoReflect().SetUnknown(protowire.AppendString(marker, reason))
	return nil
}

// malformed returns the decoding error a request carries, or nil.
func malformed(v any) error {
	m, ok := v.(proto.Message)
	if !ok {
		return nil
	}
	var err error
	bytesFields(m.ProtoReflect().GetUnknown(), func(num protowire.Number, v []byte) bool {
		if num != malformedField {
			return true
		}
		field, reason, ok := strings.Cut(string(v), "\x00")
		if !ok {
			field, reason = "", string(v)
		}
		err = &MalformedError{Field: field, Reason: reason}
		return false
	})
	return err
}

// bytesFields calls f with each length-delimited field of message bytes
// b in turn, until f returns false; it skips other fields and stops at
// bytes that do not parse.
func bytesFields(b []byte, f func(num protowire.Number, v []byte) bool) {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return
		}
		b = b[n:]
		if typ != protowire.BytesType {
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return
			}
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 || !f(num, v) {
			return
		}
		b = b[n:]
	}
}

// invalidUTF8 finds the first string field of message bytes b (of type
// md) that is not valid UTF-8, and returns its path ("items[3].id",
// "mapping.properties[title].analyzer"; a bad map key is named by the
// map), or "".
func invalidUTF8(md protoreflect.MessageDescriptor, b []byte, prefix string, depth int) string {
	if depth > 100 {
		return ""
	}
	seen := map[protowire.Number]int{}
	found := ""
	bytesFields(b, func(num protowire.Number, v []byte) bool {
		fd := md.Fields().ByNumber(num)
		if fd == nil {
			return true
		}
		path := prefix + string(fd.Name())
		if fd.IsList() {
			path += "[" + strconv.Itoa(seen[num]) + "]"
			seen[num]++
		}
		switch {
		case fd.IsMap():
			found = invalidUTF8InEntry(fd, v, path, depth)
		case fd.Kind() == protoreflect.StringKind && !utf8.Valid(v):
			found = path
		case fd.Kind() == protoreflect.MessageKind:
			found = invalidUTF8(fd.Message(), v, path+".", depth+1)
		}
		return found == ""
	})
	return found
}

// invalidUTF8InEntry checks one map entry: a bad key names the map; a bad
// value is under map[key].
func invalidUTF8InEntry(fd protoreflect.FieldDescriptor, entry []byte, path string, depth int) string {
	key, val := fd.MapKey(), fd.MapValue()
	var k string
	var value []byte
	badKey := false
	bytesFields(entry, func(num protowire.Number, v []byte) bool {
		switch num {
		case key.Number():
			k, badKey = string(v), key.Kind() == protoreflect.StringKind && !utf8.Valid(v)
		case val.Number():
			value = v
		}
		return true
	})
	switch {
	case badKey:
		return path
	case val.Kind() == protoreflect.StringKind && !utf8.Valid(value):
		return path + "[" + k + "]"
	case val.Kind() == protoreflect.MessageKind:
		return invalidUTF8(val.Message(), value, path+"["+k+"].", depth+1)
	}
	return ""
}

// requestChecks answer a request that did not decode (codec.go) and, with
// enums, one holding an undeclared enum number, before the handler sees it.
func requestChecks(enums *EnumCheck) (grpc.UnaryServerInterceptor, grpc.StreamServerInterceptor) {
	check := func(m any) error {
		if err := malformed(m); err != nil || enums == nil {
			return err
		}
		pm, _ := m.(proto.Message)
		return enums.Check(pm)
	}
	unary := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if err := check(req); err != nil {
			return nil, err
		}
		return h(ctx, req)
	}
	stream := func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		return h(srv, checkedStream{ss, check})
	}
	return unary, stream
}

type checkedStream struct {
	grpc.ServerStream
	check func(any) error
}

func (s checkedStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	return s.check(m)
}
