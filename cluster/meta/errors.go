package meta

import "errors"

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
)
