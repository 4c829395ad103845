package rpc

import (
	"context"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/sluice-search/sluice/cluster/rpc/rpctest"
	nodev1 "github.com/sluice-search/sluice/proto/sluice/node/v1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// okServer answers every call it gets, so a refusal can only come from
// the decoding.
type okServer struct{ nodev1.UnimplementedNodeServer }

func (okServer) ShardGet(context.Context, *nodev1.ShardGetRequest) (*nodev1.ShardGetResponse, error) {
	return &nodev1.ShardGetResponse{}, nil
}
func (okServer) ShardBulk(context.Context, *nodev1.ShardBulkRequest) (*nodev1.ShardBulkResponse, error) {
	return &nodev1.ShardBulkResponse{}, nil
}
func (okServer) ShardSearch(context.Context, *nodev1.ShardSearchRequest) (*nodev1.ShardSearchResponse, error) {
	return &nodev1.ShardSearchResponse{}, nil
}
func (okServer) ShardScan(*nodev1.ShardScanRequest, grpc.ServerStreamingServer[nodev1.ShardScanResponse]) error {
	return nil
}

func field(num protowire.Number, b []byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), b)
}

// TestMalformedRequestsAreInvalidArgument: bytes that do not decode are
// the client's fault: INVALID_ARGUMENT naming the field where it can, not
// the INTERNAL gRPC answers by itself.
func TestMalformedRequestsAreInvalidArgument(t *testing.T) {
	_, addr := serve(t, &Errors{}, okServer{})
	cc := dial(t, addr)
	ctx := context.Background()
	bad := []byte("ab\xffc")
	okItem := field(3, []byte("fine"))
	// A bool query nested 6,000 deep: beyond protobuf's recursion limit.
	deep := []byte{}
	for range 6000 {
		deep = field(5, field(1, deep))
	}
	for _, tt := range []struct {
		name, method string
		req          []byte
		field        string
	}{
		{"invalid UTF-8 in a string", "/sluice.node.v1.Node/ShardGet", field(2, bad), "id"},
		{"invalid UTF-8 in a repeated message", "/sluice.node.v1.Node/ShardBulk", append(field(3, okItem), field(3, field(3, bad))...), "items[1].id"},
		{"invalid UTF-8 in a stream's request", "/sluice.node.v1.Node/ShardScan", field(3, field(5, field(1, field(2, field(1, bad))))), "query.bool.must[0].match.field"},
		{"not protobuf", "/sluice.node.v1.Node/ShardGet", []byte{0xff, 0xff, 0xff}, ""},
		{"nested beyond the recursion limit", "/sluice.node.v1.Node/ShardSearch", field(2, deep), ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			out := new(nodev1.ShardGetResponse)
			if tt.method == "/sluice.node.v1.Node/ShardScan" {
				var s grpc.ClientStream
				s, err = cc.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true}, tt.method, grpc.ForceCodec(rpctest.RawCodec{}))
				if err == nil {
					if err = s.SendMsg(tt.req); err == nil {
						_ = s.CloseSend()
						err = s.RecvMsg(new(nodev1.ShardScanResponse))
					}
				}
			} else {
				err = cc.Invoke(ctx, tt.method, tt.req, out, grpc.ForceCodec(rpctest.RawCodec{}))
			}
			st := status.Convert(err)
			if st.Code() != codes.InvalidArgument {
				t.Fatalf("%v, want INVALID_ARGUMENT", err)
			}
			var got string
			for _, d := range st.Details() {
				if br, ok := d.(*errdetails.BadRequest); ok {
					got = br.GetFieldViolations()[0].GetField()
				}
			}
			if got != tt.field {
				t.Errorf("field %q, want %q (%v)", got, tt.field, st.Message())
			}
		})
	}
}

func TestInvalidUTF8Path(t *testing.T) {
	bad := []byte("ab\xffc")
	md := (&sluicev1.Mapping{}).ProtoReflect().Descriptor()
	for _, tt := range []struct {
		b    []byte
		want string
	}{
		{field(1, append(field(1, []byte("title")), field(2, field(2, bad))...)), "properties[title].analyzer"},
		{field(1, append(field(1, bad), field(2, field(2, []byte("standard")))...)), "properties"},
		{field(1, append(field(1, []byte("title")), field(2, field(2, []byte("standard")))...)), ""},
	} {
		if got := invalidUTF8(md, tt.b, "", 0); got != tt.want {
			t.Errorf("invalidUTF8 = %q, want %q", got, tt.want)
		}
	}
}

// FuzzInvalidUTF8: the walk that names a bad string never panics on any
// bytes, and names nothing in bytes that decode.
func FuzzInvalidUTF8(f *testing.F) {
	bad := []byte("ab\xffc")
	for _, b := range [][]byte{
		append(field(3, field(3, []byte("ok"))), field(3, field(3, bad))...),
		field(1, append(field(1, []byte("title")), field(2, field(2, bad))...)),
		{0xff, 0xff}, field(2, field(2, field(1, bad))),
	} {
		f.Add(b)
	}
	mds := []protoreflect.MessageDescriptor{(&nodev1.ShardBulkRequest{}).ProtoReflect().Descriptor(),
		(&sluicev1.CreateIndexRequest{}).ProtoReflect().Descriptor(), (&sluicev1.SearchRequest{}).ProtoReflect().Descriptor()}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, md := range mds {
			path := invalidUTF8(md, b, "", 0)
			if path == "" {
				continue
			}
			if proto.Unmarshal(b, dynamicpb.NewMessage(md)) == nil {
				t.Fatalf("named %s in bytes that decode", path)
			}
		}
	})
}
