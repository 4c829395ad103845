package server

import (
	"context"
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluice-search/sluice/cluster/state"
)

// ToStatus maps a core error to a gRPC status: the one place where typed
// errors become codes.
func ToStatus(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok && !isWrapped(err) {
		return err // already a status (from a collaborator that is an edge)
	}
	code := codes.Internal
	switch {
	case errors.Is(err, state.ErrInvalid):
		code = codes.InvalidArgument
	case errors.Is(err, state.ErrNotFound):
		code = codes.NotFound
	case errors.Is(err, state.ErrAlreadyExists):
		code = codes.AlreadyExists
	case errors.Is(err, state.ErrConflict):
		code = codes.Aborted
	case errors.Is(err, context.DeadlineExceeded):
		code = codes.DeadlineExceeded
	case errors.Is(err, context.Canceled):
		code = codes.Canceled
	default:
		// etcd client errors are gRPC statuses from etcd: unreachable
		// or leaderless etcd makes the cluster state unavailable.
		if s, ok := status.FromError(err); ok {
			switch s.Code() {
			case codes.Unavailable, codes.DeadlineExceeded:
				code = codes.Unavailable
			}
		}
	}
	return status.Error(code, err.Error())
}

// isWrapped reports whether err is a plain status error (not one wrapped in
// a core error, whose code would be etcd's, not ours).
func isWrapped(err error) bool { return errors.Unwrap(err) != nil }
