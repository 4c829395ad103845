package replication

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/sluice-search/sluice/cluster/state"
	"github.com/sluice-search/sluice/node/engine/index"
	"github.com/sluice-search/sluice/node/engine/mapping"
	"github.com/sluice-search/sluice/node/shard"
	nodev1 "github.com/sluice-search/sluice/proto/sluice/node/v1"
)

// TestChunkCodecDecodes: a GetFiles response decodes in place as the
// protobuf decoder would decode it — from a message gathered from many
// transport buffers, with a field it does not know skipped — and one cut
// short is an error, not a short chunk.
func TestChunkCodecDecodes(t *testing.T) {
	data := make([]byte, 70_000)
	for i := range data {
		data[i] = byte(i * 31)
	}
	want := &nodev1.GetFilesResponse{Name: "_3.fdt", Offset: 1 << 40, Data: data, Last: true}
	b, err := proto.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	b = protowire.AppendVarint(protowire.AppendTag(b, 9, protowire.VarintType), 7) // a field from a newer primary
	for _, tc := range []struct {
		name    string
		b       []byte
		wantErr bool
	}{
		{"whole", b, false},
		{"cut in the data", b[:len(b)/2], true},
		{"cut in a tag", append(b[:len(b):len(b)], 0x80), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// 16 KiB pieces, as HTTP/2 frames bring them.
			var slice mem.BufferSlice
			for rest := tc.b; len(rest) > 0; {
				n := min(len(rest), 16<<10)
				slice = append(slice, mem.SliceBuffer(rest[:n]))
				rest = rest[n:]
			}
			msg := &fileChunk{}
			err := chunkCodec{}.Unmarshal(slice, msg)
			defer msg.release()
			if tc.wantErr {
				if !errors.Is(err, errChunk) {
					t.Fatalf("decoded %d bytes of a cut message: err %v", len(tc.b), err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := &nodev1.GetFilesResponse{Name: msg.Name, Offset: msg.Offset, Data: msg.Data, Last: msg.Last}
			if !proto.Equal(got, want) {
				t.Fatalf("decoded %s at %d, %d bytes, last %v; want %s at %d, %d bytes, last %v",
					got.Name, got.Offset, len(got.Data), got.Last, want.Name, want.Offset, len(want.Data), want.Last)
			}
		})
	}
}

// TestFetchOverGRPC: a replica copy installs a primary's checkpoint with
// its files fetched over gRPC on loopback (the fetcher, chunkCodec),
// files of several chunks among them, and can search it; when the
// primary's answer is damaged on the way — a bit flipped in a chunk, a
// chunk missing — the install fails naming the file (the flip as
// corruption) and the copy keeps what it had.
func TestFetchOverGRPC(t *testing.T) {
	ctx := context.Background()
	id := state.ShardID{Index: "u1"}
	// Nothing indexed (the body stays in _source): stored fields of
	// several MiB, written fast.
	m, err := mapping.New(mapping.DynamicFalse, nil)
	if err != nil {
		t.Fatal(err)
	}
	meta := shard.Meta{ID: shardKey(id), Index: "x", Mapping: m}
	h1, err := shard.NewHost(shard.HostOptions{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h1.CloseAll(ctx) })
	sh, err := h1.Open(ctx, meta)
	if err != nil {
		t.Fatal(err)
	}
	// Sources of random words: a stored-fields file of several chunks.
	rng := rand.New(rand.NewPCG(1, 2))
	const docs = 60
	ops := make([]shard.Op, docs)
	for i := range ops {
		var body strings.Builder
		for body.Len() < 150_000 {
			fmt.Fprintf(&body, "w%x ", rng.Uint64())
		}
		ops[i] = shard.Op{Kind: shard.OpIndex, ID: fmt.Appendf(nil, "doc-%03d", i), Source: fmt.Appendf(nil, `{"body":%q}`, body.String())}
	}
	mustBulk(t, sh, ops)
	cp, err := refreshedCheckpoint(ctx, sh.Engine())
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Release()
	var largest int64
	for _, f := range cp.Files {
		largest = max(largest, f.Length)
	}
	if largest <= 2*fileChunkBytes {
		t.Fatalf("largest file %d bytes: too small for several chunks", largest)
	}
	primary := New(Config{NodeID: "n1", Host: h1, Logger: slog.New(slog.DiscardHandler)})

	for _, tc := range []struct {
		name   string
		tamper func(msg *nodev1.GetFilesResponse) bool // false: drop the message
		want   error                                   // nil: installs
		say    string
	}{
		{name: "intact"},
		{name: "bit flipped", tamper: func(msg *nodev1.GetFilesResponse) bool {
			if msg.Offset == fileChunkBytes { // the second chunk of a file
				msg.Data = append([]byte(nil), msg.Data...)
				msg.Data[len(msg.Data)/2] ^= 0x10
			}
			return true
		}, want: index.ErrCorrupt},
		{name: "chunk missing", tamper: func(msg *nodev1.GetFilesResponse) bool { return msg.Offset != fileChunkBytes || msg.Last },
			say: "want offset"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lis, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			srv := grpc.NewServer()
			nodev1.RegisterReplicationServer(srv, &tampering{Service: primary, tamper: tc.tamper})
			go srv.Serve(lis)
			defer srv.Stop()
			conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			h2, err := shard.NewHost(shard.HostOptions{DataDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			defer h2.CloseAll(ctx)
			rsh, err := h2.OpenReplica(ctx, meta)
			if err != nil {
				t.Fatal(err)
			}
			target := New(Config{NodeID: "n2", Host: h2, Logger: slog.New(slog.DiscardHandler),
				Dial: func(string) (grpc.ClientConnInterface, error) { return conn, nil }})
			rep := rsh.Replica()
			before := rep.State().Visible
			got, err := rep.InstallCheckpoint(ctx, cp, target.fetcher(id, "n1"))
			if tc.want == nil && tc.say == "" {
				if err != nil {
					t.Fatal(err)
				}
				if got.Fetched != len(cp.Files) || rep.State().Visible != cp.SeqNo {
					t.Fatalf("installed %+v, visible %d; want %d files fetched, visible %d", got, rep.State().Visible, len(cp.Files), cp.SeqNo)
				}
				rd := rsh.Acquire()
				defer rd.Release()
				if n := rd.NumDocs(); n != docs {
					t.Fatalf("%d docs searchable on the copy, want %d", n, docs)
				}
				return
			}
			if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) || !strings.Contains(err.Error(), tc.say) || !strings.Contains(err.Error(), "fetch _") {
				t.Fatalf("install from a primary whose answer is damaged (%s): %v", tc.name, err)
			}
			if v := rep.State().Visible; v != before {
				t.Fatalf("visible %d after a failed install, was %d", v, before)
			}
		})
	}
}

// tampering serves GetFiles through Service, changing (or dropping) what
// it sends.
type tampering struct {
	*Service
	tamper func(*nodev1.GetFilesResponse) bool
}

func (t *tampering) GetFiles(req *nodev1.GetFilesRequest, stream grpc.ServerStreamingServer[nodev1.GetFilesResponse]) error {
	if t.tamper == nil {
		return t.Service.GetFiles(req, stream)
	}
	return t.Service.GetFiles(req, tamperedStream{stream, t.tamper})
}

type tamperedStream struct {
	grpc.ServerStreamingServer[nodev1.GetFilesResponse]
	tamper func(*nodev1.GetFilesResponse) bool
}

func (s tamperedStream) Send(msg *nodev1.GetFilesResponse) error {
	if !s.tamper(msg) {
		return nil
	}
	return s.ServerStreamingServer.Send(msg)
}

// mustBulk applies ops to sh; every one must succeed.
func mustBulk(t *testing.T, sh *shard.Shard, ops []shard.Op) {
	t.Helper()
	res, err := sh.Bulk(context.Background(), ops, shard.RefreshNone)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r.Err != nil {
			t.Fatalf("op %d: %v", i, r.Err)
		}
	}
}

// FuzzChunkDecode: the in-place decoder reads every message the protobuf
// decoder reads, to the same fields, and never panics on one it refuses
// (a damaged answer from a primary fails the install, not the node).
func FuzzChunkDecode(f *testing.F) {
	for _, m := range []*nodev1.GetFilesResponse{
		{}, {Name: "_0.si", Offset: 3, Data: []byte("abc"), Last: true}, {Data: make([]byte, 300)},
	} {
		b, err := proto.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var c fileChunk
		err := c.decode(b)
		var want nodev1.GetFilesResponse
		if proto.Unmarshal(b, &want) != nil {
			return // refused by protobuf: ours may refuse too, or read it leniently
		}
		if err != nil {
			t.Fatalf("protobuf reads %x, the chunk decoder refuses it: %v", b, err)
		}
		got := &nodev1.GetFilesResponse{Name: c.Name, Offset: c.Offset, Data: c.Data, Last: c.Last}
		want.ProtoReflect().SetUnknown(nil)
		if !proto.Equal(got, &want) {
			t.Fatalf("%x: decoded %v, protobuf %v", b, got, &want)
		}
	})
}
