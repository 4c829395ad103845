package node

import (
	"google.golang.org/grpc/codes"

	"github.com/sluice-search/sluice/cluster/rpc"
	"github.com/sluice-search/sluice/cluster/state"
	"github.com/sluice-search/sluice/node/engine"
	"github.com/sluice-search/sluice/node/engine/dwpt"
	"github.com/sluice-search/sluice/node/engine/index"
	"github.com/sluice-search/sluice/node/engine/mapping"
	"github.com/sluice-search/sluice/node/engine/search"
	"github.com/sluice-search/sluice/node/reindex"
	"github.com/sluice-search/sluice/node/replication"
	"github.com/sluice-search/sluice/node/shard"
	"github.com/sluice-search/sluice/querydsl"
)

// Errors is the data node's one error table: the typed errors of its parts
// and of the engine, as gRPC codes. The node's server applies it to every
// error its handlers return; the Node service and the reindex runner build
// per-item ErrorDetails from it. Read-only.
var Errors = &rpc.Errors{
	Codes: []rpc.Code{
		// Callers refresh their routing on NOT_FOUND: the shard is closed
		// here or was never open, and its readers went with it.
		{Code: codes.NotFound, Errs: []error{shard.ErrNotHere, engine.ErrClosed, shard.ErrReaderGone}},
		// Overload, and an index refusing writes while a node holding a
		// copy is past the flood-stage disk watermark (reindex writes).
		{Code: codes.ResourceExhausted, Errs: []error{shard.ErrTooManyReaders, state.ErrWriteBlocked}},
		{Code: codes.AlreadyExists, Errs: []error{shard.ErrConflict}},
		// A conditional write (if_seq_no) that found another version, or
		// a partial update raced by another write: gRPC's code for a
		// failed test-and-set (re-read, then retry).
		// A reindex or update-by-query slice ended by a conflict under
		// conflicts=abort is the same version conflict (Elasticsearch's
		// 409 version_conflict_engine_exception); its task fails.
		{Code: codes.Aborted, Errs: []error{engine.ErrVersionConflict, reindex.ErrConflictAbort}},
		// Retrying cannot help: the shard's files are corrupt (it failed,
		// and is reported FAILED until its data is deleted).
		// An in-place update of a document that does not exist: per item,
		// not NOT_FOUND, which tells callers the shard moved. A stale
		// primary term is a fenced sender (docs/replication.md): it stops
		// acknowledging, and retrying cannot help it.
		{Code: codes.FailedPrecondition, Errs: []error{index.ErrCorrupt, shard.ErrFailed, engine.ErrDocumentMissing,
			engine.ErrStaleTerm, engine.ErrFileConflict, engine.ErrTranslogTrimmed, replication.ErrNotReplica}},
		// A write that reached a replica, or a primary that cannot
		// acknowledge (a failed copy it could not remove from the in-sync
		// set, a promotion under way): the shard's primary is moving, and
		// a retry on it is right.
		// A mapping update the cluster did not take in time (etcd
		// unreachable from this node): the item is retryable.
		{Code: codes.Unavailable, Errs: []error{reindex.ErrNoDestination, shard.ErrNotPrimary, replication.ErrUnavailable, engine.ErrSealed,
			shard.ErrMappingUnavailable}},
		{Code: codes.InvalidArgument, Errs: []error{shard.ErrInvalid, reindex.ErrInvalid, reindex.ErrBadCursor, replication.ErrInvalid, engine.ErrInvalidCheckpoint,
			querydsl.ErrInvalid, search.ErrInvalidQuery, dwpt.ErrInvalidDocument,
			mapping.ErrDocument, mapping.ErrNotUpdatable, mapping.ErrStrict, mapping.ErrConflict, mapping.ErrInvalidMapping, mapping.ErrLimit}},
	},
	// The field of an error is named by the core's rpc.FieldError types
	// (mapping.FieldError, querydsl.Error, the cluster state's).
}
