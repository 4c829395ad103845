package shard

import (
	"context"

	"github.com/sluice-search/sluice/node/engine/translog"
)

// Replicator is a primary copy's replication group as its writes see it
// (node/replication implements it; docs/replication.md). A primary
// without one writes alone.
type Replicator interface {
	// Replicate sends operations the primary has applied and logged to
	// every copy of the group, at once, and returns a wait that reports
	// when every in-sync copy holds them durably — a copy that failed has
	// been removed from the in-sync set by then. A wait error means the
	// operations may not be acknowledged (the primary could not remove a
	// failed copy, or is no longer primary).
	Replicate(ctx context.Context, ops []translog.Op) (wait func() error)
	// WaitVisible returns once operation seq is visible to searches on
	// every in-sync copy that serves them (refresh=wait_for).
	WaitVisible(ctx context.Context, seq int64) error
	// SyncSegments runs add — a change of the primary's segments outside
	// its translog (AddIndexes), which no replica could replay — then
	// refreshes and returns once every in-sync copy has installed and
	// committed a checkpoint holding it; a copy that fails to has been removed from
	// the in-sync set by then. No copy joins the in-sync set while add
	// runs without installing its result first. An error means what add
	// did may not be acknowledged.
	SyncSegments(ctx context.Context, add func(context.Context) error) error
}

// replicatorRef boxes a Replicator for an atomic pointer.
type replicatorRef struct{ r Replicator }

// SetReplicator gives a primary copy its replication group (nil: none);
// writes from then on are replicated through it.
func (s *Shard) SetReplicator(r Replicator) {
	if r == nil {
		s.repl.Store(nil)
		return
	}
	s.repl.Store(&replicatorRef{r})
}

func (s *Shard) replicator() Replicator {
	if ref := s.repl.Load(); ref != nil {
		return ref.r
	}
	return nil
}
