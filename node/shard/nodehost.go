package shard

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sluice-search/sluice/cluster/metadata"
	"github.com/sluice-search/sluice/cluster/state"
	"github.com/sluice-search/sluice/node"
	"github.com/sluice-search/sluice/node/engine/mapping"
	"github.com/sluice-search/sluice/node/engine/translog"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
	"github.com/sluice-search/sluice/querydsl"
)

// NodeHost adapts a Host to the node's routing watch (node.ShardHost).
type NodeHost struct{ *Host }

var (
	_ node.ShardHost       = NodeHost{}
	_ node.FailureReporter = NodeHost{}
)

// metaOf reads what a shard needs from index metadata.
func metaOf(info *sluicev1.IndexInfo, id ID) (Meta, error) {
	m, err := querydsl.MappingFromProto(info.GetMapping())
	if err != nil {
		return Meta{}, fmt.Errorf("index [%s]: %w", info.GetName(), err)
	}
	d, iv := durability(info.GetSettings())
	return Meta{ID: id, Index: info.GetName(), Mapping: m, RefreshInterval: refreshInterval(info.GetSettings()),
		RAMBufferBytes: info.GetSettings().GetIndexingBufferBytes(), Durability: d, SyncInterval: iv}, nil
}

// durability: the translog durability and sync interval (0: the default).
func durability(s *sluicev1.IndexSettings) (translog.Durability, time.Duration) {
	d := translog.Request
	if s.GetTranslogDurability() == sluicev1.TranslogDurability_TRANSLOG_DURABILITY_ASYNC {
		d = translog.Async
	}
	return d, s.GetTranslogSyncInterval().AsDuration()
}

// refreshInterval: unset is the default, negative is off.
func refreshInterval(s *sluicev1.IndexSettings) time.Duration {
	if s.GetRefreshInterval() == nil {
		return 0
	}
	if d := s.GetRefreshInterval().AsDuration(); d != 0 {
		return d
	}
	return -1 // an explicit 0s: off, rather than the default
}

// OpenShard opens the shard assigned to this node.
func (h NodeHost) OpenShard(ctx context.Context, info *sluicev1.IndexInfo, s node.Shard) error {
	m, err := metaOf(info, ID{IndexUUID: s.ID.Index, Shard: s.ID.Shard})
	if err != nil {
		return err
	}
	_, err = h.Open(ctx, m)
	return err
}

// UpdateIndex passes a changed mapping, refresh interval and translog
// durability to the index's open shards.
func (h NodeHost) UpdateIndex(_ context.Context, info *sluicev1.IndexInfo) error {
	m, err := querydsl.MappingFromProto(info.GetMapping())
	if err != nil {
		return fmt.Errorf("index [%s]: %w", info.GetName(), err)
	}
	h.SetRefreshInterval(info.GetUuid(), refreshInterval(info.GetSettings()))
	d, iv := durability(info.GetSettings())
	h.SetDurability(info.GetUuid(), d, iv)
	return h.UpdateMapping(info.GetUuid(), m)
}

// CloseShard commits and closes a shard.
func (h NodeHost) CloseShard(ctx context.Context, id state.ShardID) error {
	return h.Close(ctx, ID{IndexUUID: id.Index, Shard: id.Shard})
}

// ShardFailure reports why an open shard failed (a damaged file), or nil
// (node.FailureReporter).
func (h NodeHost) ShardFailure(id state.ShardID) error {
	return h.Failure(ID{IndexUUID: id.Index, Shard: id.Shard})
}

// ShardFailures receives a value after a shard fails.
func (h NodeHost) ShardFailures() <-chan struct{} { return h.FailureNotify() }

// DeleteShard removes a shard's data.
func (h NodeHost) DeleteShard(ctx context.Context, id state.ShardID) error {
	return h.Delete(ctx, ID{IndexUUID: id.Index, Shard: id.Shard})
}

// MetadataUpdater publishes dynamic mapping updates through the cluster
// metadata service: one guarded etcd transaction, where a racing update of
// the same field with another type loses.
type MetadataUpdater struct{ Service *metadata.Service }

// UpdateMapping implements MappingUpdater.
func (u MetadataUpdater) UpdateMapping(ctx context.Context, index, indexUUID string, update *mapping.Mapping) (*mapping.Mapping, error) {
	info, err := u.Service.PutMapping(ctx, index, querydsl.MappingToProto(update))
	if err != nil {
		if errors.Is(err, state.ErrInvalid) {
			// The cluster has the field with another type.
			return nil, clusterConflict{err}
		}
		return nil, err
	}
	if info.GetUuid() != indexUUID {
		return nil, fmt.Errorf("index [%s] was deleted and created again (uuid %s, shard of %s): %w", index, info.GetUuid(), indexUUID, state.ErrNotFound)
	}
	return querydsl.MappingFromProto(info.GetMapping())
}

// clusterConflict is a cluster's rejection of a mapping update: a
// mapping.ErrConflict with the cluster's message.
type clusterConflict struct{ err error }

func (e clusterConflict) Error() string   { return e.err.Error() }
func (e clusterConflict) Unwrap() []error { return []error{mapping.ErrConflict, e.err} }
