package datapath

import (
	"context"
	"errors"
	"regexp"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/sluice-search/sluice/cluster/state"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
	"github.com/sluice-search/sluice/querydsl"
)

// code classifies a core error; node errors keep the node's code.
func code(err error) codes.Code {
	switch {
	case err == nil:
		return codes.OK
	case errors.Is(err, ErrInvalid), errors.Is(err, querydsl.ErrInvalid), errors.Is(err, state.ErrInvalid):
		return codes.InvalidArgument
	case errors.Is(err, state.ErrNotFound), errors.Is(err, ErrPITGone):
		return codes.NotFound
	case errors.Is(err, ErrOverloaded):
		return codes.ResourceExhausted
	case errors.Is(err, ErrUnavailable):
		return codes.Unavailable
	case errors.Is(err, context.DeadlineExceeded):
		return codes.DeadlineExceeded
	case errors.Is(err, context.Canceled):
		return codes.Canceled
	}
	if s, ok := status.FromError(err); ok {
		return s.Code()
	}
	return codes.Internal
}

// toStatus is the edge: a core error becomes a status; overload carries a
// RetryInfo with the delay to wait.
func (d *DataPath) toStatus(err error) error {
	if err == nil {
		return nil
	}
	c := code(err)
	st := status.New(c, reason(err))
	if c == codes.ResourceExhausted {
		if withInfo, derr := st.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(d.opts.RetryAfter)}); derr == nil {
			st = withInfo
		}
	}
	return st.Err()
}

// statusPrefix is how a gRPC status error prints itself.
var statusPrefix = regexp.MustCompile(`rpc error: code = \w+ desc = `)

// reason is err's text for users: a node's status error relayed by the
// coordinator (and maybe by a node before it) is its message, not "rpc
// error: code = NotFound desc = rpc error: code = NotFound desc = ...".
func reason(err error) string { return statusPrefix.ReplaceAllString(err.Error(), "") }

// errorDetail describes a per-item or per-shard failure.
func errorDetail(err error) *sluicev1.ErrorDetail {
	ed := &sluicev1.ErrorDetail{Code: int32(code(err)), Reason: reason(err)}
	var qe *querydsl.Error
	if errors.As(err, &qe) {
		ed.Field = qe.Field
	}
	return ed
}
