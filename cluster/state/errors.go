package state

import (
	"errors"
	"fmt"
)

// Errors of cluster-state operations. They are wrapped with the names
// involved; test with errors.Is. The gRPC edge maps them to status codes.
var (
	// ErrNotFound: an index, alias or node does not exist.
	ErrNotFound = errors.New("not found")
	// ErrAlreadyExists: an index of that name exists.
	ErrAlreadyExists = errors.New("already exists")
	// ErrInvalid: a request is invalid (bad name, settings, mapping, action).
	ErrInvalid = errors.New("invalid")
	// ErrConflict: a transaction's guards failed because the state changed
	// since it was read. Update retries these; callers rarely see one.
	ErrConflict = errors.New("cluster state changed concurrently")
	// ErrStale: a routing update names an allocation that is no longer the
	// shard's current one.
	ErrStale = errors.New("stale allocation")
	// ErrStaleTerm: a primary's change of its shard's in-sync set names a
	// primary term or allocation that is no longer the shard's primary: a
	// newer primary exists, and the caller must stop acknowledging writes.
	ErrStaleTerm = errors.New("stale primary term")
	// ErrNotInSync: a replica copy was reported STARTED while it is not in
	// its shard's in-sync set.
	ErrNotInSync = errors.New("replica not in the in-sync set")
	// ErrWriteBlocked: the index refuses writes for now, because a node
	// holding a copy of it ran out of disk (its DiskBlock); retry later.
	ErrWriteBlocked = errors.New("index refuses writes")
	// ErrUnavailable: the cluster state store (etcd) did not take a change
	// within the caller's bound — unreachable, or without a leader. The
	// change may or may not have been made; retrying an idempotent one
	// is right.
	ErrUnavailable = errors.New("cluster state unavailable")
)

// kindError is an error of one of the kinds above whose message is just the
// message, so the gRPC edge can pass it through unchanged.
type kindError struct {
	kind  error
	msg   string
	field string
}

func (e *kindError) Error() string { return e.msg }
func (e *kindError) Unwrap() error { return e.kind }

// ErrorField names the request field at fault, if known (rpc.FieldError).
func (e *kindError) ErrorField() string { return e.field }

// Invalidf returns an ErrInvalid error with the formatted message.
func Invalidf(format string, args ...any) error {
	return &kindError{kind: ErrInvalid, msg: fmt.Sprintf(format, args...)}
}

// InvalidFieldf returns an ErrInvalid error about a request field, which
// it names (ErrorField); the message is as formatted.
func InvalidFieldf(field, format string, args ...any) error {
	return &kindError{kind: ErrInvalid, msg: fmt.Sprintf(format, args...), field: field}
}

// NotFoundf returns an ErrNotFound error with the formatted message.
func NotFoundf(format string, args ...any) error {
	return &kindError{kind: ErrNotFound, msg: fmt.Sprintf(format, args...)}
}
