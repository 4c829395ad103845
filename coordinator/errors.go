package coordinator

import (
	"errors"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluice-search/sluice/cluster/rpc"
	"github.com/sluice-search/sluice/cluster/state"
	"github.com/sluice-search/sluice/coordinator/datapath"
	"github.com/sluice-search/sluice/coordinator/reindex"
	"github.com/sluice-search/sluice/querydsl"
)

// errorTable is the coordinator's one error table: the typed errors of the
// cluster state, the data path and the task manager, as gRPC codes. A data
// node's error is relayed with the node's code and details (rpc.Relay).
// The coordinator's server applies it to every error its handlers return;
// the data path and the task manager describe per-item failures and
// failed tasks with it. Overload (RESOURCE_EXHAUSTED) advertises
// retryAfter in a RetryInfo (and ErrorDetail.retry_delay); the field of an
// invalid request is named by the core's rpc.FieldError types.
func errorTable(retryAfter time.Duration) *rpc.Errors {
	return &rpc.Errors{
		Codes: []rpc.Code{
			{Code: codes.InvalidArgument, Errs: []error{state.ErrInvalid, datapath.ErrInvalid, datapath.ErrTooLarge, querydsl.ErrInvalid}},
			{Code: codes.NotFound, Errs: []error{state.ErrNotFound, datapath.ErrPITGone}},
			{Code: codes.AlreadyExists, Errs: []error{state.ErrAlreadyExists}},
			// A reindex slice ended by a conflict under conflicts=abort:
			// the API's version-conflict code, as a node reports its own.
			{Code: codes.Aborted, Errs: []error{state.ErrConflict, reindex.ErrConflictAbort}},
			{Code: codes.ResourceExhausted, Errs: []error{datapath.ErrOverloaded, state.ErrWriteBlocked}},
			{Code: codes.Unavailable, Errs: []error{datapath.ErrUnavailable, state.ErrUnavailable}, Match: etcdUnavailable},
		},
		RetryAfter: retryAfter,
	}
}

// etcdUnavailable: the etcd client's own statuses (not a node's relayed
// one) saying etcd is unreachable or has no leader make the cluster state
// unavailable.
func etcdUnavailable(err error) bool {
	var re *rpc.RemoteError
	if errors.As(err, &re) {
		return false
	}
	s, ok := status.FromError(err)
	return ok && (s.Code() == codes.Unavailable || s.Code() == codes.DeadlineExceeded)
}
