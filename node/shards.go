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
	"github.com/sluice-search/sluice/node/replication"
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
	// creates the shard's copy in the role the routing gives it, telling
	// rec how far it is; a replica recovers from its primary and returns
	// once its primary has added it to the in-sync set. An error is
	// reported in the routing entry as FAILED with the error as reason;
	// nil reports STARTED.
	openShard(ctx context.Context, index *statev1.Index, id state.ShardID, role copyRole, rec *engine.Recovery) error
	// setRole gives an open copy its new role: promoted to primary,
	// demoted, a new primary term, a primary on another node, a new
	// allocation id. An error closes the copy and opens it again in the
	// new role.
	setRole(ctx context.Context, id state.ShardID, role copyRole) error
	// updateIndex passes changed index metadata (mapping, dynamic
	// settings) to the open shards of that index.
	updateIndex(ctx context.Context, index *statev1.Index) error
	// closeShard commits and closes an open shard (it moved away, failed,
	// or the node is shutting down).
	closeShard(ctx context.Context, id state.ShardID) error
	// deleteShard removes a shard's data: its index was deleted, or the
	// copy left this node and the shard is fully active elsewhere. The
	// shard has been closed first (if it was open).
	deleteShard(ctx context.Context, id state.ShardID) error
	// stored lists the shards with data on this node, open or not.
	stored() ([]state.ShardID, error)
	// failure says why an open shard failed (a damaged file found by a
	// scrub, a merge or a verification), or nil: the reconciler closes it
	// and opens it again, and the refusal is reported FAILED with its
	// reason, as a failed open is.
	failure(id state.ShardID) error
	// failures receives a value after a shard fails.
	failures() <-chan struct{}
}

// copyRole is what the routing table asks of the copy of a shard this node
// holds (state.ShardRouting; docs/replication.md): a primary takes writes
// at its term, a replica follows the primary on PrimaryNode. The
// reconciler compares roles to find the copies whose role changed.
type copyRole struct {
	// AllocationID names this allocation of the copy: the in-sync set
	// and the copy's reports use it.
	AllocationID string
	Primary      bool
	// Term is the shard's primary term: a primary stamps its operations
	// with it, and every copy refuses operations of an older one.
	Term int64
	// PrimaryNode and PrimaryAllocation are the primary's node ("" while
	// it is unassigned or gone) and allocation id.
	PrimaryNode       string
	PrimaryAllocation string
	// InSync: the copy is in the shard's in-sync set.
	InSync bool
}

// roleOf is the role routing r gives copy c.
func roleOf(st *state.Snapshot, r *statev1.ShardRouting, c *statev1.ShardCopy) copyRole {
	role := copyRole{AllocationID: c.GetAllocationId(), Primary: c.GetPrimary(), Term: r.GetPrimaryTerm(),
		InSync: state.InSync(r, c.GetAllocationId())}
	if p := state.Primary(r); p != nil && st.Live(p.GetNodeId()) {
		role.PrimaryNode, role.PrimaryAllocation = p.GetNodeId(), p.GetAllocationId()
	}
	return role
}

// hostedShards is the shardSet of the node's shard.Host: it reads what a
// shard needs from the index metadata, and opens copies through the
// node's replication service (node/replication): a primary with its
// replication group, a replica recovered from its primary. Without one
// (narrow tests) it opens primaries alone and refuses replicas.
type hostedShards struct {
	h    *shard.Host
	repl *replication.Service
}

// errNoReplication: a shardSet without a replication service holds no
// replica copy.
var errNoReplication = errors.New("this shard set has no replication service: no replica copies")

// replicationRole is a copyRole as the replication service takes it.
func replicationRole(r copyRole) replication.Role {
	return replication.Role{AllocationID: r.AllocationID, Primary: r.Primary, Term: r.Term,
		PrimaryNode: r.PrimaryNode, PrimaryAllocation: r.PrimaryAllocation}
}

func shardID(id state.ShardID) shard.ID { return shard.ID{IndexUUID: id.Index, Shard: id.Shard} }

// indexMapping is an index's mapping with the limits of its settings.
func indexMapping(info *statev1.Index) (*mapping.Mapping, error) {
	m, err := querydsl.MappingFromProto(info.GetMapping())
	if err != nil {
		return nil, fmt.Errorf("index [%s]: %w", info.GetName(), err)
	}
	return m.WithLimits(querydsl.MappingLimits(info.GetSettings())), nil
}

func (s hostedShards) openShard(ctx context.Context, info *statev1.Index, id state.ShardID, role copyRole, rec *engine.Recovery) error {
	m, err := indexMapping(info)
	if err != nil {
		return err
	}
	d, iv := durability(info.GetSettings())
	meta := shard.Meta{ID: shardID(id), Index: info.GetName(), Mapping: m,
		RefreshInterval: refreshInterval(info.GetSettings()), RAMBufferBytes: info.GetSettings().GetIndexingBufferBytes(),
		Durability: d, SyncInterval: iv, Recovery: rec}
	switch {
	case s.repl == nil && !role.Primary:
		return errNoReplication
	case s.repl == nil:
		_, err = s.h.Open(ctx, meta)
		return err
	case role.Primary:
		return s.repl.OpenPrimary(ctx, meta, id, replicationRole(role))
	}
	return s.repl.OpenReplica(ctx, meta, id, replicationRole(role))
}

// setRole gives an open copy its new role through the replication
// service: a promotion, a new term or primary; what it cannot take in
// place (a demoted primary, a replica out of the in-sync set) is an
// error, and the copy is reopened.
func (s hostedShards) setRole(ctx context.Context, id state.ShardID, role copyRole) error {
	if s.repl == nil {
		if !role.Primary {
			return errNoReplication
		}
		return nil
	}
	return s.repl.SetRole(ctx, id, replicationRole(role), role.InSync)
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
	if s.repl != nil {
		s.repl.Closed(id)
	}
	return s.h.Close(ctx, shardID(id))
}

func (s hostedShards) deleteShard(ctx context.Context, id state.ShardID) error {
	if s.repl != nil {
		s.repl.Closed(id)
	}
	return s.h.Delete(ctx, shardID(id))
}

func (s hostedShards) stored() ([]state.ShardID, error) {
	ids, err := s.h.Stored()
	out := make([]state.ShardID, len(ids))
	for i, id := range ids {
		out[i] = state.ShardID{Index: id.IndexUUID, Shard: id.Shard}
	}
	return out, err
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

// DefaultMappingUpdateTimeout bounds a dynamic mapping update's wait for
// etcd (metadata.DefaultMappingUpdateTimeout).
const DefaultMappingUpdateTimeout = metadata.DefaultMappingUpdateTimeout

// mappingUpdater publishes a shard's dynamic mapping updates through the
// cluster metadata: one guarded etcd transaction, where a racing update of
// the same field with another type loses. It waits at most timeout
// (metadata.Service.PutMappingWithin): a bulk without a deadline would
// otherwise hang on an unreachable etcd.
type mappingUpdater struct {
	md      *metadata.Service
	timeout time.Duration
}

func (u mappingUpdater) UpdateMapping(ctx context.Context, index, indexUUID string, update *mapping.Mapping) (*mapping.Mapping, error) {
	info, err := u.md.PutMappingWithin(ctx, u.timeout, index, querydsl.MappingToProto(update))
	switch {
	case errors.Is(err, state.ErrInvalid):
		// The cluster has the field with another type.
		return nil, clusterConflict{err}
	case errors.Is(err, state.ErrUnavailable):
		return nil, fmt.Errorf("%w: %w", shard.ErrMappingUnavailable, err)
	case err != nil:
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
