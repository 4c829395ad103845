package replication

import (
	"errors"
	"fmt"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	grpcproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"

	nodev1 "github.com/sluice-search/sluice/proto/sluice/node/v1"
)

// fileChunk is one GetFiles response as the fetcher receives it. Decoded
// by chunkCodec, its Data points into buf — the message's bytes as they
// came off the connection, gathered once — instead of into a copy the
// protobuf decoder allocates for every chunk: a recovery moves the whole
// shard through here, and those copies (a second pass over every byte,
// a fresh chunk-sized allocation to clear and collect) were a fifth of
// the receiving node's CPU. A call that does not go through chunkCodec
// (an in-process connection) fills the embedded message as usual.
type fileChunk struct {
	*nodev1.GetFilesResponse
	buf mem.Buffer // nil when Data is the message's own
}

// release gives buf back once Data has been written.
func (c *fileChunk) release() {
	if c.buf != nil {
		c.buf.Free()
		c.buf = nil
	}
	if c.GetFilesResponse != nil {
		c.Data = nil
	}
}

// chunkCodec is the GetFiles call's codec on the fetching side (forced
// per call: grpc.ForceCodecV2): requests and every other message go
// through the protobuf codec; a *fileChunk is decoded in place.
type chunkCodec struct{}

var protoCodec = encoding.GetCodecV2(grpcproto.Name)

// Name is the protobuf codec's: the content-subtype the server sees.
func (chunkCodec) Name() string { return grpcproto.Name }

func (chunkCodec) Marshal(v any) (mem.BufferSlice, error) { return protoCodec.Marshal(v) }

func (chunkCodec) Unmarshal(data mem.BufferSlice, v any) error {
	c, ok := v.(*fileChunk)
	if !ok {
		return protoCodec.Unmarshal(data, v)
	}
	c.release()
	buf := data.MaterializeToBuffer(chunkPool{})
	if err := c.decode(buf.ReadOnlyData()); err != nil {
		buf.Free()
		c.release()
		return err
	}
	c.buf = buf
	return nil
}

// errChunk: a GetFiles response that is not valid protobuf.
var errChunk = errors.New("malformed GetFiles response")

// decode reads GetFilesResponse's fields from b (skipping fields it does
// not know, as protobuf does), Data aliasing b.
func (c *fileChunk) decode(b []byte) error {
	if c.GetFilesResponse == nil {
		c.GetFilesResponse = new(nodev1.GetFilesResponse)
	}
	m := c.GetFilesResponse
	m.Name, m.Offset, m.Data, m.Last = "", 0, nil, false
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("%w: %w", errChunk, protowire.ParseError(n))
		}
		b = b[n:]
		switch {
		case num == 1 && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return fmt.Errorf("%w: name: %w", errChunk, protowire.ParseError(n))
			}
			m.Name, b = string(v), b[n:]
		case num == 2 && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return fmt.Errorf("%w: offset: %w", errChunk, protowire.ParseError(n))
			}
			m.Offset, b = int64(v), b[n:]
		case num == 3 && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return fmt.Errorf("%w: data: %w", errChunk, protowire.ParseError(n))
			}
			m.Data, b = v, b[n:]
		case num == 4 && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return fmt.Errorf("%w: last: %w", errChunk, protowire.ParseError(n))
			}
			m.Last, b = v != 0, b[n:]
		default:
			n := protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return fmt.Errorf("%w: field %d: %w", errChunk, num, protowire.ParseError(n))
			}
			b = b[n:]
		}
	}
	return nil
}

// chunkPool holds the buffers chunks are gathered into. Unlike gRPC's
// default pool it does not clear them: gathering overwrites every byte.
type chunkPool struct{}

var chunkBufs sync.Pool // of *[]byte

func (chunkPool) Get(n int) *[]byte {
	if p, ok := chunkBufs.Get().(*[]byte); ok && cap(*p) >= n {
		*p = (*p)[:n]
		return p
	}
	b := make([]byte, n)
	return &b
}

func (chunkPool) Put(p *[]byte) { chunkBufs.Put(p) }

// filesCallOptions are GetFiles' call options on the fetching side.
var filesCallOptions = []grpc.CallOption{grpc.ForceCodecV2(chunkCodec{})}
