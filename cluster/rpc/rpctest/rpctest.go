// Package rpctest helps tests of Sluice's gRPC servers.
package rpctest

import "google.golang.org/protobuf/proto"

// RawCodec is a client codec that sends []byte as they are, and
// messages as protobuf: a client in another language that does not check
// UTF-8, or sends bytes that do not decode. Use it with
// grpc.ForceCodec(rpctest.RawCodec{}).
type RawCodec struct{}

// Marshal passes []byte through and encodes messages.
func (RawCodec) Marshal(v any) ([]byte, error) {
	if b, ok := v.([]byte); ok {
		return b, nil
	}
	return proto.Marshal(v.(proto.Message))
}

// Unmarshal decodes a message.
func (RawCodec) Unmarshal(b []byte, v any) error { return proto.Unmarshal(b, v.(proto.Message)) }

// Name is the protobuf codec's.
func (RawCodec) Name() string { return "proto" }
