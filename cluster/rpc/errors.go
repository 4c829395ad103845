package rpc

import (
	"context"
	"errors"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/types/known/durationpb"

	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// FieldError is implemented by core errors about one field of a request
// or document: ErrorField names it (a dotted path, "" for none). A table
// names the field of any error that wraps one (ErrorDetail.field, and a
// google.rpc.BadRequest field violation on INVALID_ARGUMENT), so the
// core's packages need not know this one.
type FieldError interface {
	error
	ErrorField() string
}

// Errors is a process's one table from the typed errors of its core
// (sentinels, error types) to gRPC codes. The process's server applies it
// to every error a handler returns (Options.Errors), so handlers return
// core errors as they are; parts that report per-item failures build
// their ErrorDetails from it (Detail). Nothing else in a process chooses a
// code.
//
// An error's code is, in order: the first Code rule it matches;
// INVALID_ARGUMENT for a request that did not decode (ErrMalformed); a
// context's cancellation or deadline; the code of a RemoteError it wraps
// (another process's answer, relayed as it came); else INTERNAL. A nil
// *Errors has no rules.
type Errors struct {
	Codes []Code
	// Field names the request field an error is about (ErrorDetail.field),
	// or ""; nil: the field of a FieldError the error wraps.
	Field func(error) string
	// RetryAfter, if set, is the delay a RESOURCE_EXHAUSTED status
	// advertises in a google.rpc.RetryInfo detail.
	RetryAfter time.Duration
}

// Code is a rule of Errors: errors that wrap one of Errs, or that Match
// accepts, have code Code.
type Code struct {
	Code  codes.Code
	Errs  []error
	Match func(error) bool
}

func (c Code) matches(err error) bool {
	for _, e := range c.Errs {
		if errors.Is(err, e) {
			return true
		}
	}
	return c.Match != nil && c.Match(err)
}

// Code classifies err.
func (t *Errors) Code(err error) codes.Code {
	if err == nil {
		return codes.OK
	}
	if t != nil {
		for _, c := range t.Codes {
			if c.matches(err) {
				return c.Code
			}
		}
	}
	var re *RemoteError
	switch {
	case errors.Is(err, ErrMalformed):
		return codes.InvalidArgument
	case errors.Is(err, context.DeadlineExceeded):
		return codes.DeadlineExceeded
	case errors.Is(err, context.Canceled):
		return codes.Canceled
	case errors.As(err, &re):
		return re.s.Code()
	}
	return codes.Internal
}

// Status is err as a status: its code, its text as the message (a relayed
// error's text is the remote message, without a status prefix), the
// details of a RemoteError it wraps, a RetryInfo on RESOURCE_EXHAUSTED
// when the table has a RetryAfter and the error brought none, and a
// BadRequest naming the field of an INVALID_ARGUMENT that has one. Text
// that is not valid UTF-8 (a client's bad bytes quoted back) is repaired,
// so the status can always be sent.
func (t *Errors) Status(err error) *status.Status {
	code := t.Code(err)
	pb := status.New(code, validUTF8(err.Error())).Proto()
	retry, badRequest := false, false
	var re *RemoteError
	if errors.As(err, &re) {
		pb.Details = re.s.Proto().GetDetails()
		for _, d := range re.s.Details() {
			switch d.(type) {
			case *errdetails.RetryInfo:
				retry = true
			case *errdetails.BadRequest:
				badRequest = true
			}
		}
	}
	st := status.FromProto(pb)
	var extra []protoadapt.MessageV1
	if code == codes.ResourceExhausted && !retry && t != nil && t.RetryAfter > 0 {
		extra = append(extra, &errdetails.RetryInfo{RetryDelay: durationpb.New(t.RetryAfter)})
	}
	if f := t.field(err); code == codes.InvalidArgument && !badRequest && f != "" {
		extra = append(extra, &errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{
			{Field: f, Description: pb.GetMessage()}}})
	}
	if len(extra) > 0 {
		if withInfo, derr := st.WithDetails(extra...); derr == nil {
			st = withInfo
		}
	}
	return st
}

// field names the field err is about, or "".
func (t *Errors) field(err error) string {
	if t != nil && t.Field != nil {
		return validUTF8(t.Field(err))
	}
	var fe FieldError
	if errors.As(err, &fe) {
		return validUTF8(fe.ErrorField())
	}
	return ""
}

// RetryDelay is the delay err advertises: a relayed RetryInfo's, else
// the table's RetryAfter for RESOURCE_EXHAUSTED; 0 for other codes.
func (t *Errors) RetryDelay(err error) time.Duration {
	if t.Code(err) != codes.ResourceExhausted {
		return 0
	}
	var re *RemoteError
	if errors.As(err, &re) {
		for _, d := range re.s.Details() {
			if ri, ok := d.(*errdetails.RetryInfo); ok {
				return ri.GetRetryDelay().AsDuration()
			}
		}
	}
	if t == nil {
		return 0
	}
	return t.RetryAfter
}

// validUTF8 repairs text that is not valid UTF-8: protobuf strings must
// be, and an error may quote a client's bytes.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\ufffd")
}

// Err is err as a status error (nil for nil). An error that is already a
// status of this process's gRPC stack (from a stream's Send, say) passes
// unchanged.
func (t *Errors) Err(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := err.(interface{ GRPCStatus() *status.Status }); ok {
		if _, remote := err.(*RemoteError); !remote {
			return err
		}
	}
	return t.Status(err).Err()
}

// Detail describes a per-item or per-shard failure: code, text, the field
// it is about and, on overload, the retry delay.
func (t *Errors) Detail(err error) *sluicev1.ErrorDetail {
	d := &sluicev1.ErrorDetail{Code: int32(t.Code(err)), Reason: validUTF8(err.Error()), Field: t.field(err)}
	if delay := t.RetryDelay(err); delay > 0 {
		d.RetryDelay = durationpb.New(delay)
	}
	return d
}

// unary and stream apply the table to a handler's error.
func (t *Errors) unary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	resp, err := h(ctx, req)
	return resp, t.Err(err)
}

func (t *Errors) stream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	return t.Err(h(srv, ss))
}

// RemoteError is the status another Sluice process answered a call with,
// kept as it came: its code and details travel on when this process
// relays the error (Errors), and its text is the remote message alone, so
// an error wrapped on its way through several processes reads "[books][0]
// on node n1: reader 9 of shard …", never "rpc error: code = … desc =
// rpc error: …". It is a gRPC status error (status.Code and FromError see
// it).
type RemoteError struct{ s *status.Status }

func (e *RemoteError) Error() string { return e.s.Message() }

// GRPCStatus is the remote status.
func (e *RemoteError) GRPCStatus() *status.Status { return e.s }

// Relay returns a client of cc whose call errors are RemoteErrors: the
// connection other processes are reached through (nodeconn).
func Relay(cc grpc.ClientConnInterface) grpc.ClientConnInterface { return relayConn{cc} }

// remote turns a call's status error into a *RemoteError; io.EOF (a
// stream's end) and nil pass unchanged.
func remote(err error) error {
	if err == nil || errors.Is(err, io.EOF) {
		return err
	}
	if _, ok := err.(*RemoteError); ok {
		return err
	}
	s, ok := status.FromError(err)
	if !ok {
		return err
	}
	return &RemoteError{s}
}

type relayConn struct{ cc grpc.ClientConnInterface }

func (c relayConn) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	return remote(c.cc.Invoke(ctx, method, args, reply, opts...))
}

func (c relayConn) NewStream(ctx context.Context, desc *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	s, err := c.cc.NewStream(ctx, desc, method, opts...)
	if err != nil {
		return nil, remote(err)
	}
	return relayStream{s}, nil
}

type relayStream struct{ grpc.ClientStream }

func (s relayStream) SendMsg(m any) error { return remote(s.ClientStream.SendMsg(m)) }
func (s relayStream) RecvMsg(m any) error { return remote(s.ClientStream.RecvMsg(m)) }
func (s relayStream) CloseSend() error    { return remote(s.ClientStream.CloseSend()) }
