package node

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sluice-search/sluice/cluster/metadata"
	"github.com/sluice-search/sluice/cluster/state"
	"github.com/sluice-search/sluice/node/engine"
	"github.com/sluice-search/sluice/node/engine/mapping"
	"github.com/sluice-search/sluice/node/engine/translog"
	"github.com/sluice-search/sluice/node/shard"
	statev1 "github.com/sluice-search/sluice/proto/sluice/state/v1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
	"github.com/sluice-search/sluice/querydsl"
)

// shardSet is what the routing reconciler drives: it opens, updates,
// closes and deletes the shard copies assigned to this node (hostedShards
// over the node's shard.Host; tests wrap it to make opens fail).
//
// Calls for one shard never overlap; calls for different shards may run
// concurrently.
type shardSet interface {
	// openShard opens (recovering from its last commit and translog) or
	// creates the shard, telling rec how far it is. An error is reported
	// in the routing entry as FAILED with the error as reason; nil reports
	// STARTED.
	openShard(ctx context.Context, index *statev1.Index, id state.ShardID, rec *engine.Recovery) error
	// updateIndex passes changed index metadata (mapping, dynamic
	// settings) to the open shards of that index.
	updateIndex(ctx context.Context, index *statev1.Index) error
	// closeShard commits and closes an open shard (it moved away, failed,
	// or the node is shutting down).
	closeShard(ctx context.Context, id state.ShardID) error
	// deleteShard removes a shard's data: its index was deleted. The shard
	// has been closed first (if it was open).
	deleteShard(ctx context.Context, id state.ShardID) error
	// failure says why an open shard failed (a damaged file found by a
	// scrub, a merge or a verification), or nil: the reconciler closes it
	// and opens it again, and the refusal is reported FAILED with its
	// reason, as a failed open is.
	failure(id state.ShardID) error
	// failures receives a value after a shard fails.
	failures() <-chan struct{}
}

// hostedShards is the shardSet of the node's shard.Host: it reads what a
// shard needs from the index metadata.
type hostedShards struct{ h *shard.Host }

func shardID(id state.ShardID) shard.ID { return shard.ID{IndexUUID: id.Index, Shard: id.Shard} }

// indexMapping is an index's mapping with the limits of its settings.
func indexMapping(info *statev1.Index) (*mapping.Mapping, error) {
	m, err := querydsl.MappingFromProto(info.GetMapping())
	if err != nil {
		return nil, fmt.Errorf("index [%s]: %w", info.GetName(), err)
	}
	return m.WithLimits(querydsl.MappingLimits(info.GetSettings())), nil
}

func (s hostedShards) openShard(ctx context.Context, info *statev1.Index, id state.ShardID, rec *engine.Recovery) error {
	m, err := indexMapping(info)
	if err != nil {
		return err
	}
	d, iv := durability(info.GetSettings())
	_, err = s.h.Open(ctx, shard.Meta{ID: shardID(id), Index: info.GetName(), Mapping: m,
		RefreshInterval: refreshInterval(info.GetSettings()), RAMBufferBytes: info.GetSettings().GetIndexingBufferBytes(),
		Durability: d, SyncInterval: iv, Recovery: rec})
	return err
}

func (s hostedShards) updateIndex(_ context.Context, info *statev1.Index) error {
	m, err := indexMapping(info)
	if err != nil {
		return err
	}
	s.h.SetRefreshInterval(info.GetUuid(), refreshInterval(info.GetSettings()))
	d, iv := durability(info.GetSettings())
	s.h.SetDurability(info.GetUuid(), d, iv)
	return s.h.UpdateMapping(info.GetUuid(), m)
}

func (s hostedShards) closeShard(ctx context.Context, id state.ShardID) error {
	return s.h.Close(ctx, shardID(id))
}

func (s hostedShards) deleteShard(ctx context.Context, id state.ShardID) error {
	return s.h.Delete(ctx, shardID(id))
}

func (s hostedShards) failure(id state.ShardID) error { return s.h.Failure(shardID(id)) }

func (s hostedShards) failures() <-chan struct{} { return s.h.FailureNotify() }

// durability: the translog durability and sync interval (0: the default).
func durability(s *sluicev1.IndexSettings) (translog.Durability, time.Duration) {
	d := translog.Request
	if s.GetTranslogDurability() == sluicev1.TranslogDurability_TRANSLOG_DURABILITY_ASYNC {
		d = translog.Async
	}
	return d, s.GetTranslogSyncInterval().AsDuration()
}

// refreshInterval: unset is the default (0), an explicit 0s is off.
func refreshInterval(s *sluicev1.IndexSettings) time.Duration {
	if s.GetRefreshInterval() == nil {
		return 0
	}
	if d := s.GetRefreshInterval().AsDuration(); d != 0 {
		return d
	}
	return -1
}

// mappingUpdater publishes a shard's dynamic mapping updates through the
// cluster metadata: one guarded etcd transaction, where a racing update of
// the same field with another type loses.
type mappingUpdater struct{ md *metadata.Service }

func (u mappingUpdater) UpdateMapping(ctx context.Context, index, indexUUID string, update *mapping.Mapping) (*mapping.Mapping, error) {
	info, err := u.md.PutMapping(ctx, index, querydsl.MappingToProto(update))
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
