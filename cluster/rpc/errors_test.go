package rpc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"testing"
	"time"
	"unicode/utf8"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	nodev1 "github.com/sluice-search/sluice/proto/sluice/node/v1"
)

var (
	errBusy = errors.New("busy")
	errBad  = errors.New("bad request")
)

// backServer fails ShardGet with a typed error named by the id.
type backServer struct{ nodev1.UnimplementedNodeServer }

func (backServer) ShardGet(_ context.Context, r *nodev1.ShardGetRequest) (*nodev1.ShardGetResponse, error) {
	switch r.Id {
	case "busy":
		return nil, fmt.Errorf("shard x: %w", errBusy)
	case "bad":
		return nil, fmt.Errorf("shard x: %w", errBad)
	}
	return nil, errors.New("disk on fire")
}

// frontServer relays ShardGet to next, adding where it went.
type frontServer struct {
	nodev1.UnimplementedNodeServer
	next nodev1.NodeClient
	hop  string
}

func (f frontServer) ShardGet(ctx context.Context, r *nodev1.ShardGetRequest) (*nodev1.ShardGetResponse, error) {
	resp, err := f.next.ShardGet(ctx, r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.hop, err)
	}
	return resp, nil
}

func serve(t *testing.T, errs *Errors, srv nodev1.NodeServer) (*Server, string) {
	t.Helper()
	s := NewServer(Options{Logger: slog.New(slog.DiscardHandler), Errors: errs})
	nodev1.RegisterNodeServer(s, srv)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.Serve(lis) }()
	t.Cleanup(func() { s.Stop(time.Second) })
	return s, lis.Addr().String()
}

func dial(t *testing.T, addr string) *grpc.ClientConn {
	t.Helper()
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

// TestRelayKeepsCodeDetailsAndText: an error relayed through two
// processes (over the network, then in-process) keeps the code and the
// RetryInfo its origin gave it, and its text is each hop's context on the
// origin's message — no status prefix, however many relays.
func TestRelayKeepsCodeDetailsAndText(t *testing.T) {
	back := &Errors{Codes: []Code{{Code: codes.ResourceExhausted, Errs: []error{errBusy}}, {Code: codes.InvalidArgument, Errs: []error{errBad}}},
		RetryAfter: 2 * time.Second}
	front := &Errors{RetryAfter: 500 * time.Millisecond} // knows neither sentinel
	_, backAddr := serve(t, back, backServer{})
	mid, _ := serve(t, front, frontServer{next: nodev1.NewNodeClient(Relay(dial(t, backAddr))), hop: "on node n1"})
	_, frontAddr := serve(t, front, frontServer{next: nodev1.NewNodeClient(Relay(mid.Local())), hop: "[books][0]"})
	c := nodev1.NewNodeClient(dial(t, frontAddr))

	for _, tt := range []struct {
		id    string
		code  codes.Code
		msg   string
		retry time.Duration
	}{
		{"busy", codes.ResourceExhausted, "[books][0]: on node n1: shard x: busy", 2 * time.Second},
		{"bad", codes.InvalidArgument, "[books][0]: on node n1: shard x: bad request", 0},
		{"other", codes.Internal, "[books][0]: on node n1: disk on fire", 0},
	} {
		_, err := c.ShardGet(context.Background(), &nodev1.ShardGetRequest{Id: tt.id})
		st := status.Convert(err)
		if st.Code() != tt.code || st.Message() != tt.msg {
			t.Errorf("%s: %v %q, want %v %q", tt.id, st.Code(), st.Message(), tt.code, tt.msg)
		}
		var retry time.Duration
		for _, d := range st.Details() {
			if ri, ok := d.(*errdetails.RetryInfo); ok {
				retry = ri.GetRetryDelay().AsDuration()
			}
		}
		if retry != tt.retry {
			t.Errorf("%s: retry after %v, want %v", tt.id, retry, tt.retry)
		}
	}
}

func TestErrorsCode(t *testing.T) {
	field := errors.New("field")
	tbl := &Errors{Codes: []Code{{Code: codes.NotFound, Errs: []error{errBad}}, {Code: codes.Aborted, Match: func(err error) bool { return errors.Is(err, field) }}},
		Field: func(err error) string {
			if errors.Is(err, field) {
				return "title"
			}
			return ""
		}}
	remote := &RemoteError{status.New(codes.Unavailable, "node gone")}
	for _, tt := range []struct {
		err  error
		want codes.Code
	}{
		{nil, codes.OK},
		{fmt.Errorf("x: %w", errBad), codes.NotFound},
		{fmt.Errorf("x: %w", field), codes.Aborted},
		{fmt.Errorf("x: %w", context.DeadlineExceeded), codes.DeadlineExceeded},
		{fmt.Errorf("x: %w", remote), codes.Unavailable},
		{errors.Join(remote, errBad), codes.NotFound}, // a rule wins over the relayed code
		{errors.New("x"), codes.Internal},
	} {
		if got := tbl.Code(tt.err); got != tt.want {
			t.Errorf("Code(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
	if d := tbl.Detail(fmt.Errorf("doc 1: %w", field)); d.GetCode() != int32(codes.Aborted) || d.GetField() != "title" || d.GetReason() != "doc 1: field" {
		t.Errorf("Detail: %v", d)
	}
	var none *Errors
	if got := none.Code(errBad); got != codes.Internal {
		t.Errorf("nil table: %v", got)
	}
}

// fieldErr is a core error naming a field (FieldError).
type fieldErr struct{ field string }

func (e fieldErr) Error() string      { return "bad " + e.field }
func (e fieldErr) ErrorField() string { return e.field }

// TestErrorsDetailsNameFieldsAndRetryDelays: an item's detail carries the
// retry delay of an overload (the table's, or a relayed RetryInfo's), an
// invalid request's status names its field in a BadRequest, and text that
// is not UTF-8 is repaired so the status can be sent.
func TestErrorsDetailsNameFieldsAndRetryDelays(t *testing.T) {
	tbl := &Errors{Codes: []Code{{Code: codes.ResourceExhausted, Errs: []error{errBusy}}, {Code: codes.InvalidArgument, Errs: []error{errBad}}},
		RetryAfter: 300 * time.Millisecond}
	if d := tbl.Detail(fmt.Errorf("shard 1: %w", errBusy)); d.GetRetryDelay().AsDuration() != 300*time.Millisecond {
		t.Errorf("overloaded item: %v", d)
	}
	remote := &RemoteError{status.New(codes.ResourceExhausted, "node busy")}
	remote.s, _ = remote.s.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(2 * time.Second)})
	if d := tbl.Detail(fmt.Errorf("shard 1: %w", remote)); d.GetRetryDelay().AsDuration() != 2*time.Second {
		t.Errorf("relayed overload: %v", d)
	}
	if d := tbl.Detail(fmt.Errorf("x: %w", errBad)); d.GetRetryDelay() != nil {
		t.Errorf("invalid item has a retry delay: %v", d)
	}
	err := fmt.Errorf("%w: %w", errBad, fieldErr{"items[2].id\xff"})
	if d := tbl.Detail(err); d.GetField() != "items[2].id\uFFFD" || !utf8.ValidString(d.GetReason()) {
		t.Errorf("field detail: %q %q", d.GetField(), d.GetReason())
	}
	st := tbl.Status(err)
	var br *errdetails.BadRequest
	for _, d := range st.Details() {
		br, _ = d.(*errdetails.BadRequest)
	}
	if st.Code() != codes.InvalidArgument || br == nil || br.FieldViolations[0].Field != "items[2].id\uFFFD" || !utf8.ValidString(st.Message()) {
		t.Fatalf("status %v %q details %v", st.Code(), st.Message(), st.Details())
	}
	if _, err := proto.Marshal(st.Proto()); err != nil {
		t.Fatalf("status cannot be sent: %v", err)
	}
}
