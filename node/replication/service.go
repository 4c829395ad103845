package replication

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"google.golang.org/grpc"

	"github.com/sluice-search/sluice/cluster/state"
	"github.com/sluice-search/sluice/cluster/throttle"
	"github.com/sluice-search/sluice/node/engine"
	"github.com/sluice-search/sluice/node/shard"
	nodev1 "github.com/sluice-search/sluice/proto/sluice/node/v1"
	statev1 "github.com/sluice-search/sluice/proto/sluice/state/v1"
)

var (
	// ErrUnavailable: a primary cannot acknowledge writes — a replica
	// failed and could not be removed from the in-sync set (the term moved
	// on, or etcd did not answer), or the primary learnt it may be stale.
	// Retrying (on the shard's current primary) is right.
	ErrUnavailable = errors.New("replication unavailable")
	// ErrNotReplica: a primary's request reached a copy that is not a
	// replica here (it was promoted, or is the primary itself).
	ErrNotReplica = errors.New("not a replica copy")
)

// Role is what the routing table asks of a copy this node holds.
type Role struct {
	AllocationID string
	Primary      bool
	Term         int64
	// PrimaryNode and PrimaryAllocation are the primary's ("" while it is
	// unassigned or its node is gone).
	PrimaryNode, PrimaryAllocation string
}

// Config configures a Service.
type Config struct {
	// NodeID is this node's id.
	NodeID string
	Host   *shard.Host
	// Store writes the in-sync set (RemoveInSync, AddInSync); Cache is
	// the routing the groups follow (Run needs it).
	Store *state.Store
	Cache *state.Cache
	// Dial returns a connection to a live node's services.
	Dial   func(nodeID string) (grpc.ClientConnInterface, error)
	Logger *slog.Logger
	// OpsTimeout bounds one ReplicateOps call: a copy that does not
	// answer within it is failed (default 30s).
	OpsTimeout time.Duration
	// VisibleTimeout bounds how long refresh=wait_for waits for an
	// in-sync copy to show an operation before that copy is failed
	// (default 30s).
	VisibleTimeout time.Duration
	// RecoveryWait: how long a recovering copy waits for its primary to
	// be ready (started, reachable) before its open fails (default 60s).
	RecoveryWait time.Duration
	// RecoveryBytesPerSec caps the segment-file bytes per second this
	// node's replica copies fetch in peer recovery, all recoveries
	// together (Elasticsearch's indices.recovery.max_bytes_per_sec);
	// 0: DefaultRecoveryBytesPerSec, negative: unlimited. Checkpoint and
	// merge pre-copy fetches are not throttled: they keep replicas
	// searchable at the primary's pace.
	RecoveryBytesPerSec int64
	// OutgoingRecoveries caps the recoveries this node's primary copies
	// serve at once; more wait their turn (Elasticsearch's
	// node_concurrent_outgoing_recoveries). 0: DefaultOutgoingRecoveries.
	OutgoingRecoveries int
}

const (
	// DefaultRecoveryBytesPerSec is Elasticsearch's 40mb.
	DefaultRecoveryBytesPerSec = 40 << 20
	// DefaultOutgoingRecoveries is Elasticsearch's 2.
	DefaultOutgoingRecoveries = 2
)

// Service is a node's replication: the primary-side groups of its
// primary copies, the replica side of its replica copies, and the
// Replication gRPC service between them.
type Service struct {
	nodev1.UnimplementedReplicationServer
	cfg Config
	log *slog.Logger

	// recoveryRate paces recovery file fetches (RecoveryBytesPerSec);
	// outgoing holds a token per recovery served (OutgoingRecoveries).
	recoveryRate *throttle.Throttle
	outgoing     chan struct{}

	mu     sync.Mutex
	copies map[state.ShardID]*copyInfo
}

// copyInfo is what the service knows of one copy it holds.
type copyInfo struct {
	role  Role
	group *Group // a primary's
}

// New returns a service; Register it on the node's gRPC server and Run it.
func New(cfg Config) *Service {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.OpsTimeout <= 0 {
		cfg.OpsTimeout = 30 * time.Second
	}
	if cfg.VisibleTimeout <= 0 {
		cfg.VisibleTimeout = 30 * time.Second
	}
	if cfg.RecoveryWait <= 0 {
		cfg.RecoveryWait = time.Minute
	}
	if cfg.RecoveryBytesPerSec == 0 {
		cfg.RecoveryBytesPerSec = DefaultRecoveryBytesPerSec
	}
	if cfg.OutgoingRecoveries <= 0 {
		cfg.OutgoingRecoveries = DefaultOutgoingRecoveries
	}
	return &Service{cfg: cfg, log: cfg.Logger, copies: map[state.ShardID]*copyInfo{},
		recoveryRate: throttle.New(float64(cfg.RecoveryBytesPerSec)), // negative: unlimited
		outgoing:     make(chan struct{}, cfg.OutgoingRecoveries)}
}

// Register adds the Replication service to a gRPC server.
func (s *Service) Register(g grpc.ServiceRegistrar) { nodev1.RegisterReplicationServer(g, s) }

func shardKey(id state.ShardID) shard.ID { return shard.ID{IndexUUID: id.Index, Shard: id.Shard} }

func protoID(id state.ShardID) *nodev1.ShardID {
	return &nodev1.ShardID{IndexUuid: id.Index, Shard: int32(id.Shard)}
}

func stateID(id *nodev1.ShardID) state.ShardID {
	return state.ShardID{Index: id.GetIndexUuid(), Shard: int(id.GetShard())}
}

// client is a Replication client of a node.
func (s *Service) client(nodeID string) (nodev1.ReplicationClient, error) {
	if nodeID == "" {
		return nil, fmt.Errorf("%w: no node to reach", ErrUnavailable)
	}
	cc, err := s.cfg.Dial(nodeID)
	if err != nil {
		return nil, fmt.Errorf("node [%s]: %w", nodeID, err)
	}
	return nodev1.NewReplicationClient(cc), nil
}

// OpenPrimary opens a primary copy with its replication group: the group
// follows the shard's in-sync set from the routing table, the copy's
// writes are replicated through it from the first, and copies already in
// sync are resynced (the primary's history is theirs above the global
// checkpoint) before it returns.
func (s *Service) OpenPrimary(ctx context.Context, meta shard.Meta, id state.ShardID, role Role) error {
	g := newGroup(s, id, role.AllocationID, role.Term)
	meta.PrimaryTerm, meta.Replicator, meta.MergedSegmentPreCopy = role.Term, g, s.preCopier(id)
	sh, err := s.cfg.Host.Open(ctx, meta)
	if err != nil {
		return err
	}
	if sh.Replica() != nil {
		return fmt.Errorf("shard %s: open as a replica here; it must be promoted", id)
	}
	if err := sh.Engine().SetPrimaryTerm(role.Term); err != nil {
		return fmt.Errorf("shard %s: %w", id, err)
	}
	sh.SetReplicator(g)
	return s.startGroup(ctx, id, role, g, sh, -1)
}

// startGroup attaches an open primary to its group, registers it and
// resyncs the copies in sync; gcp is the global checkpoint known (-1:
// none, resync from each copy's local checkpoint).
func (s *Service) startGroup(ctx context.Context, id state.ShardID, role Role, g *Group, sh *shard.Shard, gcp int64) error {
	g.attach(sh, gcp)
	s.mu.Lock()
	if old := s.copies[id]; old != nil && old.group != nil && old.group != g {
		old.group.close()
	}
	s.copies[id] = &copyInfo{role: role, group: g}
	s.mu.Unlock()
	if s.cfg.Cache != nil {
		if st := s.cfg.Cache.State(); st != nil {
			if r := routingOf(st, id); r != nil {
				g.follow(r)
			}
		}
	}
	g.resyncAll(ctx)
	g.start()
	return nil
}

// OpenReplica opens a replica copy and recovers it from its primary
// (StartRecovery): it returns once the copy holds the primary's files and
// every operation, and its primary has added it to the in-sync set.
func (s *Service) OpenReplica(ctx context.Context, meta shard.Meta, id state.ShardID, role Role) error {
	// The engine a promotion opens keeps the replica's options: its
	// merges pre-copy through whatever group the shard has then.
	meta.PrimaryTerm, meta.MergedSegmentPreCopy = role.Term, s.preCopier(id)
	sh, err := s.cfg.Host.OpenReplica(ctx, meta)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.copies[id] = &copyInfo{role: role}
	s.mu.Unlock()
	err = s.recover(ctx, id, sh, role)
	if !errors.Is(err, engine.ErrFileConflict) {
		return err
	}
	// The copy's last commit holds a file the primary has with other
	// bytes (a primary reopened in the same term reused a name, as
	// before a reopen raised the term): its files cannot be kept.
	// Recover it from nothing.
	s.log.Warn("replica's files conflict with its primary's; recovering from scratch", "shard", id, "err", err)
	if err := s.cfg.Host.Delete(ctx, shardKey(id)); err != nil {
		return err
	}
	if sh, err = s.cfg.Host.OpenReplica(ctx, meta); err != nil {
		return err
	}
	return s.recover(ctx, id, sh, role)
}

// SetRole gives an open copy its new role: a replica promoted to primary
// (Host.Promote, a resync of the other copies), a new term or primary. A
// role the copy cannot take in place (a primary demoted, a replica out of
// the in-sync set, a new allocation) is an error: the caller closes the
// copy and opens it again.
func (s *Service) SetRole(ctx context.Context, id state.ShardID, role Role, inSync bool) error {
	sh, err := s.cfg.Host.Get(shardKey(id))
	if err != nil {
		return err
	}
	info, held := s.lookup(id)
	if info == nil || held.AllocationID != role.AllocationID {
		return fmt.Errorf("shard %s: a new allocation (%s): reopen the copy", id, role.AllocationID)
	}
	switch {
	case role.Primary && sh.Replica() != nil:
		return s.promote(ctx, id, role, sh)
	case role.Primary:
		if err := sh.Engine().SetPrimaryTerm(role.Term); err != nil {
			return err
		}
		info.group.setTerm(role.Term)
	case sh.Replica() == nil:
		return fmt.Errorf("shard %s: a primary copy cannot become a replica in place", id)
	case !inSync:
		return fmt.Errorf("shard %s: replica %s is out of the in-sync set: it recovers again", id, role.AllocationID)
	default:
		if err := sh.Replica().SetPrimaryTerm(role.Term); err != nil {
			return err
		}
	}
	s.mu.Lock()
	info.role = role
	s.mu.Unlock()
	return nil
}

// promote turns an open replica into the primary of role.Term.
func (s *Service) promote(ctx context.Context, id state.ShardID, role Role, sh *shard.Shard) error {
	gcp := sh.Replica().State().GlobalCheckpoint
	g := newGroup(s, id, role.AllocationID, role.Term)
	psh, err := s.cfg.Host.Promote(ctx, shardKey(id), role.Term, g)
	if err != nil {
		s.forget(id)
		return err
	}
	s.log.Warn("replica promoted to primary", "shard", id, "term", role.Term, "global_checkpoint", gcp)
	return s.startGroup(ctx, id, role, g, psh, gcp)
}

// preCopier is the merged-segment pre-copy hook of a shard's engine
// (engine.Options.MergedSegmentPreCopy): it pre-copies through the
// shard's current group, if the copy is a primary.
func (s *Service) preCopier(id state.ShardID) func(context.Context, []engine.FileMeta) error {
	return func(ctx context.Context, files []engine.FileMeta) error {
		g, err := s.group(id)
		if err != nil {
			return nil
		}
		return g.preCopy(ctx, files)
	}
}

// Closed forgets a copy the node closed (or deleted): its group stops.
func (s *Service) Closed(id state.ShardID) { s.forget(id) }

func (s *Service) forget(id state.ShardID) {
	s.mu.Lock()
	info := s.copies[id]
	delete(s.copies, id)
	s.mu.Unlock()
	if info != nil && info.group != nil {
		info.group.close()
	}
}

// lookup returns the copy held here and its role, read under the lock:
// SetRole changes a copy's role while handlers run.
func (s *Service) lookup(id state.ShardID) (*copyInfo, Role) {
	s.mu.Lock()
	defer s.mu.Unlock()
	info := s.copies[id]
	if info == nil {
		return nil, Role{}
	}
	return info, info.role
}

// group returns the group of a primary copy held here.
func (s *Service) group(id state.ShardID) (*Group, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	info := s.copies[id]
	if info == nil || info.group == nil {
		return nil, fmt.Errorf("shard %s: no primary copy here: %w", id, shard.ErrNotPrimary)
	}
	return info.group, nil
}

// replica returns a replica copy held here under allocation alloc.
func (s *Service) replica(id state.ShardID, alloc string) (*engine.Replica, error) {
	info, held := s.lookup(id)
	if info == nil || held.AllocationID != alloc {
		return nil, fmt.Errorf("shard %s: allocation %s: %w", id, alloc, shard.ErrNotHere)
	}
	sh, err := s.cfg.Host.Get(shardKey(id))
	if err != nil {
		return nil, err
	}
	if sh.Replica() == nil {
		return nil, fmt.Errorf("shard %s: allocation %s is the primary here: %w", id, alloc, ErrNotReplica)
	}
	return sh.Replica(), nil
}

// Run follows the routing table until ctx ends: each primary's group
// tracks the shard's in-sync copies, a primary that was held for stale
// acknowledges again once its term is current, and replicas adopt a newer
// term at once (fencing an old primary before its requests arrive).
func (s *Service) Run(ctx context.Context) {
	for {
		changed := s.cfg.Cache.Changed()
		if st := s.cfg.Cache.State(); st != nil {
			s.follow(st)
		}
		select {
		case <-ctx.Done():
			s.mu.Lock()
			ids := make([]state.ShardID, 0, len(s.copies))
			for id := range s.copies {
				ids = append(ids, id)
			}
			s.mu.Unlock()
			for _, id := range ids {
				s.forget(id)
			}
			return
		case <-changed:
		}
	}
}

func (s *Service) follow(st *state.Snapshot) {
	s.mu.Lock()
	type item struct {
		id   state.ShardID
		info *copyInfo
	}
	items := make([]item, 0, len(s.copies))
	for id, info := range s.copies {
		items = append(items, item{id, info})
	}
	s.mu.Unlock()
	for _, it := range items {
		r := routingOf(st, it.id)
		if r == nil {
			continue
		}
		if it.info.group != nil {
			it.info.group.follow(r)
			continue
		}
		if sh, err := s.cfg.Host.Get(shardKey(it.id)); err == nil && sh.Replica() != nil && r.GetPrimaryTerm() > sh.Replica().PrimaryTerm() {
			if err := sh.Replica().SetPrimaryTerm(r.GetPrimaryTerm()); err != nil {
				s.log.Warn("replica: adopt term", "shard", it.id, "err", err)
			}
		}
	}
}

// routingOf is a shard's routing entry in st, or nil.
func routingOf(st *state.Snapshot, id state.ShardID) *statev1.ShardRouting {
	x := st.ByUUID[id.Index]
	if x == nil || id.Shard >= len(x.Shards) || x.Shards[id.Shard] == nil {
		return nil
	}
	return x.Shards[id.Shard].Routing
}
