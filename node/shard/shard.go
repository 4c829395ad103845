package shard

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-search/sluice/node/engine"
	"github.com/sluice-search/sluice/node/engine/document"
	"github.com/sluice-search/sluice/node/engine/mapping"
)

// ErrConflict is returned by a create-only Index of an id that exists.
var ErrConflict = errors.New("document already exists")

// ErrMappingUpdate is wrapped by a *MappingUpdateError.
var ErrMappingUpdate = errors.New("document needs a mapping update")

// ErrMappingUnavailable: the cluster did not take a document's dynamic
// mapping update in time (MappingUpdater; etcd unreachable). Nothing of
// the document was indexed; retrying it is right.
var ErrMappingUnavailable = errors.New("mapping update not acknowledged by the cluster")

// MappingUpdateError rejects a document whose unmapped fields need a
// mapping update first; Update holds just the new fields.
type MappingUpdateError struct {
	Update *mapping.Mapping
}

func (e *MappingUpdateError) Error() string {
	return fmt.Sprintf("%v: new fields %v", ErrMappingUpdate, e.Update.Names())
}

func (e *MappingUpdateError) Unwrap() error { return ErrMappingUpdate }

// MappingUpdater publishes a shard's dynamic mapping update to the cluster.
type MappingUpdater interface {
	// UpdateMapping merges update into the cluster's mapping of the index
	// and returns the merged mapping once it is durable. A field that
	// clashes with the cluster's mapping fails with an error wrapping
	// mapping.ErrConflict.
	// A cluster that does not take it in time fails with an error
	// wrapping ErrMappingUnavailable.
	UpdateMapping(ctx context.Context, index, indexUUID string, update *mapping.Mapping) (*mapping.Mapping, error)
}

// maxMappingRetries bounds how often one document waits for a mapping
// update before it is rejected; each round adds at least one field, so a
// document needs more only while others keep racing it.
const maxMappingRetries = 8

// ErrNotPrimary refuses a write (or a realtime get) on a replica copy:
// only the primary indexes (docs/replication.md). The caller routes it to
// the primary, which may be moving: retrying is right.
var ErrNotPrimary = errors.New("shard copy is a replica: writes go to the primary")

// Shard is one open shard copy: a primary's engine, or a replica (kept
// current by its primary, it indexes nothing), and its mapping. A copy's
// role is fixed for the Shard's life: Host.Promote replaces a replica's
// Shard with a primary's.
type Shard struct {
	id      ID
	index   string
	path    string
	eng     *engine.Engine  // a primary's; nil on a replica
	rep     *engine.Replica // a replica's; nil on a primary
	repl    atomic.Pointer[replicatorRef]
	updater MappingUpdater
	logger  *slog.Logger
	pinned  *pinned // the node's pinned readers

	bulkParallelism int
	bulkSeed        maphash.Seed
	updateLocks     [updateStripes]sync.Mutex // partial updates, by id (update.go)

	// docs is the mapping and its parsers; a promoted replica's primary
	// shares its replica's (its engine parses with them).
	docs   *docMapping
	closed atomic.Bool

	refreshMu sync.Mutex
	// refreshInterval is the index's setting (0: the default, negative:
	// off); refreshPauses counts the copies that turned refresh off.
	refreshInterval time.Duration
	refreshPauses   int
}

// ID returns the shard's id.
func (s *Shard) ID() ID { return s.id }

// Index returns the name of the index the shard belongs to.
func (s *Shard) Index() string { return s.index }

// Primary reports whether the copy is its shard's primary (it indexes).
func (s *Shard) Primary() bool { return s.rep == nil }

// Engine is a primary's engine, nil on a replica.
func (s *Shard) Engine() *engine.Engine { return s.eng }

// Replica is a replica's engine, nil on a primary.
func (s *Shard) Replica() *engine.Replica { return s.rep }

// notPrimary is the error of a write on a replica copy.
func (s *Shard) notPrimary() error { return fmt.Errorf("shard %v: %w", s.id, ErrNotPrimary) }

// Mapping returns the shard's current mapping.
func (s *Shard) Mapping() *mapping.Mapping { return s.docs.mapping.Load() }

// docMapping is a shard's mapping and the parsers of its documents.
type docMapping struct {
	mapping  atomic.Pointer[mapping.Mapping]
	parsers  sync.Pool // *mapping.Parser
	updateMu sync.Mutex
	// unavailable: when the cluster last failed to take an update in
	// time, after how long a wait, and the error (guarded by updateMu).
	unavailable struct {
		at     time.Time
		waited time.Duration
		err    error
	}
}

func newDocMapping(m *mapping.Mapping) *docMapping {
	d := &docMapping{}
	d.mapping.Store(m)
	return d
}

// ops is where a shard's writes go: the engine itself (each one durable
// before it returns) or an engine.Bulk (durable at its Sync).
type ops interface {
	IndexIf(ctx context.Context, id, routing, source []byte, cond *engine.DocVersion) (engine.Result, error)
	CreateRouted(ctx context.Context, id, routing, source []byte) (engine.Result, error)
	Delete(ctx context.Context, id []byte) (engine.Result, error)
}

// IndexDoc indexes source under id, durably before it returns, replacing
// any document with the id unless createOnly, when an existing id fails
// with ErrConflict. New fields are published to the cluster first (see the
// package doc). Errors from the document itself wrap mapping.ErrDocument,
// mapping.ErrStrict or mapping.ErrConflict in a *mapping.FieldError.
func (s *Shard) IndexDoc(ctx context.Context, id, source []byte, createOnly bool) (engine.Result, error) {
	if s.rep != nil {
		return engine.Result{}, s.notPrimary()
	}
	if s.replicator() != nil {
		return s.syncOne(ctx, func(b *Batch) (engine.Result, error) { return b.Index(ctx, id, nil, source, createOnly) })
	}
	return s.indexVia(ctx, s.eng, id, nil, source, createOnly, nil)
}

// indexVia indexes a document with a custom routing value (nil: routed by
// id), which the engine stores with it, through ops; conditional on the
// id's version when cond is set (engine.IndexIf).
func (s *Shard) indexVia(ctx context.Context, ops ops, id, routing, source []byte, createOnly bool, cond *engine.DocVersion) (engine.Result, error) {
	for range maxMappingRetries {
		var res engine.Result
		var err error
		if createOnly {
			res, err = ops.CreateRouted(ctx, id, routing, source)
		} else {
			res, err = ops.IndexIf(ctx, id, routing, source, cond)
		}
		if errors.Is(err, engine.ErrDocumentExists) {
			return res, fmt.Errorf("[%s]: %w", id, ErrConflict)
		}
		var mu *MappingUpdateError
		if !errors.As(err, &mu) {
			return res, err
		}
		if err := s.applyUpdate(ctx, mu.Update); err != nil {
			return engine.Result{}, err
		}
	}
	return engine.Result{}, fmt.Errorf("shard %v: document %q: mapping kept changing under it", s.id, id)
}

// DeleteDoc deletes the document with id, durably before it returns.
func (s *Shard) DeleteDoc(ctx context.Context, id []byte) (engine.Result, error) {
	if s.rep != nil {
		return engine.Result{}, s.notPrimary()
	}
	if s.replicator() != nil {
		return s.syncOne(ctx, func(b *Batch) (engine.Result, error) { return b.Delete(ctx, id, nil) })
	}
	return s.eng.Delete(ctx, id)
}

// syncOne is one write through a Batch: durable on the primary and its
// in-sync replicas when it returns.
func (s *Shard) syncOne(ctx context.Context, write func(*Batch) (engine.Result, error)) (engine.Result, error) {
	b := s.NewBatch()
	res, err := write(b)
	if err != nil {
		return res, err
	}
	if err := b.Sync(ctx); err != nil {
		return engine.Result{}, err
	}
	return res, nil
}

// applyUpdate merges a parser's dynamic update into the shard's mapping,
// through the cluster when there is an updater.
func (s *Shard) applyUpdate(ctx context.Context, update *mapping.Mapping) error {
	s.docs.updateMu.Lock()
	defer s.docs.updateMu.Unlock()
	cur := s.docs.mapping.Load()
	merged, err := cur.Merge(update)
	if err != nil {
		return err // a clash with a known field: the document's problem
	}
	if merged.Len() == cur.Len() {
		return nil // another document's update already covered it
	}
	if s.updater != nil {
		if u := &s.docs.unavailable; u.err != nil && time.Since(u.at) < u.waited {
			// The cluster failed to take an update after a wait of
			// u.waited, that long ago at most: fail now, as this one
			// would after as long a wait (a bulk adding fields then costs
			// one timeout, not one per item).
			return u.err
		}
		began := time.Now()
		if merged, err = s.updater.UpdateMapping(ctx, s.index, s.id.IndexUUID, update); err != nil {
			err = fmt.Errorf("shard %v: publish mapping update: %w", s.id, err)
			if errors.Is(err, ErrMappingUnavailable) {
				now := time.Now()
				s.docs.unavailable.at, s.docs.unavailable.waited, s.docs.unavailable.err = now, now.Sub(began), err
			}
			return err
		}
		// The cluster's mapping may have gained other fields meanwhile;
		// keep everything this shard knew too.
		if merged, err = cur.Merge(merged); err != nil {
			return fmt.Errorf("shard %v: cluster mapping: %w", s.id, err)
		}
	}
	s.docs.mapping.Store(merged)
	return nil
}

// setMapping merges a cluster mapping into the shard's.
func (s *Shard) setMapping(m *mapping.Mapping) error {
	s.docs.updateMu.Lock()
	defer s.docs.updateMu.Unlock()
	merged, err := s.docs.mapping.Load().Merge(m)
	if err != nil {
		return err
	}
	s.docs.mapping.Store(merged)
	return nil
}

// docParser adapts pooled mapping.Parsers to engine.DocParser: it parses
// with the shard's current mapping and turns a dynamic update into a
// *MappingUpdateError, so nothing is indexed with unpublished fields.
type docParser struct{ d *docMapping }

func (p docParser) Parse(id, source []byte, doc *document.Document) error {
	return p.parse(id, source, doc, (*mapping.Parser).Parse)
}

// ParseReplay parses a replayed operation as acknowledged before
// (engine.ReplayParser).
func (p docParser) ParseReplay(id, source []byte, doc *document.Document) error {
	return p.parse(id, source, doc, (*mapping.Parser).ParseAcknowledged)
}

// ParseDocValuesUpdate reads an in-place doc-values update by the shard's
// mapping (engine.DocValuesParser).
func (p docParser) ParseDocValuesUpdate(fields []byte) ([]mapping.DocValueUpdate, error) {
	mp, err := p.parser()
	if err != nil {
		return nil, err
	}
	defer p.d.parsers.Put(mp)
	return mp.ParseDocValuesUpdate(fields)
}

// parser takes a pooled mapping.Parser set to the shard's mapping; the
// caller puts it back.
func (p docParser) parser() (*mapping.Parser, error) {
	m := p.d.mapping.Load()
	mp, _ := p.d.parsers.Get().(*mapping.Parser)
	if mp == nil {
		return mapping.NewParser(m)
	}
	if mp.Mapping() != m {
		if err := mp.SetMapping(m); err != nil {
			return nil, err
		}
	}
	return mp, nil
}

func (p docParser) parse(id, source []byte, doc *document.Document,
	parse func(*mapping.Parser, *document.Document, []byte, []byte) (*mapping.Mapping, error)) error {
	mp, err := p.parser()
	if err != nil {
		return err
	}
	defer p.d.parsers.Put(mp)
	update, err := parse(mp, doc, id, source)
	if err != nil {
		return err
	}
	if update != nil {
		return &MappingUpdateError{Update: update}
	}
	return nil
}

// stillOpen, checked after taking a reader, refuses what a closed shard
// would serve: a replica closed for its promotion (Host.Promote keeps its
// Shard registered meanwhile, for its pinned readers) shows an empty
// reader, and a read there must go to another copy (ErrNotHere) rather
// than find nothing. Closing sets the flag before the replica closes, so a
// reader taken while it is unset is the copy's.
func (s *Shard) stillOpen() error {
	if s.closed.Load() {
		return fmt.Errorf("shard %v: closed (promoted or closing): %w", s.id, ErrNotHere)
	}
	return nil
}

// failure is why the copy failed while open (engine.Engine.Failure,
// engine.Replica.Failure), or nil.
func (s *Shard) failure() error {
	if s.rep != nil {
		return s.rep.Failure()
	}
	return s.eng.Failure()
}
