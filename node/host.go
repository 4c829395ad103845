package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/sluice-search/sluice/cluster/state"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// ShardHost is what the node's routing watch drives: it opens, updates,
// closes and deletes the shard copies assigned to this node. The data path
// implements it over its shard engines; DirHost is a stand-in that only
// manages the directories.
//
// Calls for one shard never overlap; calls for different shards may run
// concurrently.
type ShardHost interface {
	// OpenShard opens (recovering from its last commit and translog) or
	// creates the shard. An error is reported in the routing entry as
	// FAILED with the error as reason; nil reports STARTED.
	OpenShard(ctx context.Context, index *sluicev1.IndexInfo, shard Shard) error
	// UpdateIndex passes changed index metadata (mapping, dynamic
	// settings) to the open shards of that index.
	UpdateIndex(ctx context.Context, index *sluicev1.IndexInfo) error
	// CloseShard commits and closes an open shard (it moved away, failed,
	// or the node is shutting down).
	CloseShard(ctx context.Context, id state.ShardID) error
	// DeleteShard removes a shard's data: its index was deleted. The shard
	// has been closed first (if it was open).
	DeleteShard(ctx context.Context, id state.ShardID) error
}

// FailureReporter is implemented by a ShardHost whose open shards can fail
// (a damaged file found by a scrub, a merge or a verification): the
// routing watch closes a failed shard and opens it again, and the host's
// refusal is reported FAILED with its reason, as a failed open is.
type FailureReporter interface {
	// ShardFailure returns why an open shard failed, or nil.
	ShardFailure(id state.ShardID) error
	// ShardFailures receives a value after a shard fails.
	ShardFailures() <-chan struct{}
}

// Shard is one shard copy assigned to this node.
type Shard struct {
	ID           state.ShardID
	AllocationID string
	// Path is the shard's directory: <data-dir>/<index-uuid>/<shard>.
	Path string
}

// ShardPath is where a node keeps a shard's data.
func ShardPath(dataDir string, id state.ShardID) string {
	return filepath.Join(dataDir, id.Index, strconv.Itoa(id.Shard))
}

// DirHost creates and deletes shard directories and nothing else: the
// control plane's stand-in until a data path hosts engines. Shards it
// "opens" are reported STARTED but serve nothing.
type DirHost struct {
	DataDir string
}

// OpenShard creates the shard's directory.
func (h DirHost) OpenShard(_ context.Context, _ *sluicev1.IndexInfo, s Shard) error {
	if err := os.MkdirAll(s.Path, 0o755); err != nil {
		return fmt.Errorf("open shard %s: %w", s.ID, err)
	}
	return nil
}

// UpdateIndex has nothing to update.
func (DirHost) UpdateIndex(context.Context, *sluicev1.IndexInfo) error { return nil }

// CloseShard has nothing to close.
func (DirHost) CloseShard(context.Context, state.ShardID) error { return nil }

// DeleteShard removes the shard's directory, and the index's once empty.
func (h DirHost) DeleteShard(_ context.Context, id state.ShardID) error {
	if err := os.RemoveAll(ShardPath(h.DataDir, id)); err != nil {
		return fmt.Errorf("delete shard %s: %w", id, err)
	}
	// Fails while other shards of the index remain; that is fine.
	if err := os.Remove(filepath.Join(h.DataDir, id.Index)); err != nil && !errors.Is(err, os.ErrNotExist) && !errors.Is(err, syscall.ENOTEMPTY) && !errors.Is(err, syscall.EEXIST) {
		return fmt.Errorf("delete index dir %s: %w", id.Index, err)
	}
	return nil
}
