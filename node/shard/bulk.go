package shard

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"sync"

	"github.com/sluice-search/sluice/node/engine"
	"github.com/sluice-search/sluice/node/engine/translog"
)

// ErrInvalid marks an operation the shard cannot apply as asked (a bulk
// operation without an id or source, a doc outside a reader); the caller's
// request is at fault.
var ErrInvalid = errors.New("invalid request")

// Batch groups writes to a shard under one durability point: they are
// applied as they come and durable once Sync returns (one translog fsync
// for the batch, engine.Bulk) — on the primary and, when the shard has a
// Replicator, on every in-sync replica. Safe for concurrent use. A
// write's id, routing and source are kept, not copied, until Sync sends
// them to the replicas: the caller must not reuse their bytes before.
type Batch struct {
	s   *Shard
	b   *engine.Bulk
	err error // a replica copy refuses writes

	mu  sync.Mutex
	ops []translog.Op // what the replicas get at Sync
}

// NewBatch starts a batch of writes. On a replica copy every write of it
// fails with ErrNotPrimary.
func (s *Shard) NewBatch() *Batch {
	if s.rep != nil {
		return &Batch{s: s, err: s.notPrimary()}
	}
	return &Batch{s: s, b: s.eng.NewBulk()}
}

// errNoID refuses an operation without an id, whichever path (bulk,
// ingest of a reindex) brought it.
var errNoID = fmt.Errorf("%w: operation has no id", ErrInvalid)

// Index is Shard.IndexDoc, durable at Sync: source under id, with a custom
// routing value (nil: routed by id) the engine stores with it.
func (b *Batch) Index(ctx context.Context, id, routing, source []byte, createOnly bool) (engine.Result, error) {
	return b.index(ctx, id, routing, source, createOnly, nil)
}

// IndexIf is Index (not create-only), conditional on the id's version
// when cond is set (engine.IndexIf).
func (b *Batch) IndexIf(ctx context.Context, id, routing, source []byte, cond *engine.DocVersion) (engine.Result, error) {
	return b.index(ctx, id, routing, source, false, cond)
}

func (b *Batch) index(ctx context.Context, id, routing, source []byte, createOnly bool, cond *engine.DocVersion) (engine.Result, error) {
	if b.err != nil {
		return engine.Result{}, b.err
	}
	if len(id) == 0 {
		return engine.Result{}, errNoID
	}
	res, err := b.s.indexVia(ctx, b.b, id, routing, source, createOnly, cond)
	if err == nil {
		b.logged(translog.Op{Type: translog.OpIndex, ID: id, Routing: routing, Source: source}, res)
	}
	return res, err
}

// Delete is Shard.DeleteDoc, durable at Sync; conditional on the id's
// version when cond is set.
func (b *Batch) Delete(ctx context.Context, id []byte, cond *engine.DocVersion) (engine.Result, error) {
	if b.err != nil {
		return engine.Result{}, b.err
	}
	if len(id) == 0 {
		return engine.Result{}, errNoID
	}
	res, err := b.b.DeleteIf(ctx, id, cond)
	if err == nil {
		b.logged(translog.Op{Type: translog.OpDelete, ID: id}, res)
	}
	return res, err
}

// UpdateDocValues is Engine.UpdateDocValuesIf, durable at Sync:
// conditional on the id's version when cond is set.
func (b *Batch) UpdateDocValues(ctx context.Context, id, fields []byte, cond *engine.DocVersion) (engine.Result, error) {
	if b.err != nil {
		return engine.Result{}, b.err
	}
	res, err := b.b.UpdateDocValuesIf(ctx, id, fields, cond)
	if err == nil {
		b.logged(translog.Op{Type: translog.OpUpdateDocValues, ID: id, Source: fields}, res)
	}
	return res, err
}

// logged keeps an applied operation for the replicas, as the primary's
// translog holds it.
func (b *Batch) logged(op translog.Op, res engine.Result) {
	if b.s.replicator() == nil {
		return
	}
	op.SeqNo, op.PrimaryTerm = uint64(res.SeqNo), uint64(res.Term)
	b.mu.Lock()
	b.ops = append(b.ops, op)
	b.mu.Unlock()
}

// Sync makes every write of the batch durable: the primary's fsync runs
// while the replicas append the operations (Replicator.Replicate), and
// Sync returns once both are done. An error means nothing of the batch
// may be acknowledged.
func (b *Batch) Sync(ctx context.Context) error {
	if b.err != nil {
		return b.err
	}
	b.mu.Lock()
	ops := b.ops
	b.ops = nil
	b.mu.Unlock()
	var replicated func() error
	if r := b.s.replicator(); r != nil && len(ops) > 0 {
		replicated = r.Replicate(ctx, ops)
	}
	err := b.b.Sync(ctx)
	if replicated != nil {
		if rerr := replicated(); rerr != nil {
			err = errors.Join(err, fmt.Errorf("shard %v: %w", b.s.id, rerr))
		}
	}
	return err
}

// OpKind is what a bulk operation does.
type OpKind uint8

const (
	OpIndex  OpKind = iota + 1 // index, replacing a document with the id
	OpCreate                   // index only if the id is new, else ErrConflict
	OpDelete                   // delete by id
	// OpUpdateDocValues sets doc-value fields of the doc with the id in
	// place; Source is the fields (engine.UpdateDocValues).
	OpUpdateDocValues
	// OpUpdate is a partial update: Source is the partial document,
	// merged into the current one (Batch.Update).
	OpUpdate
)

// Op is one operation of a bulk.
type Op struct {
	Kind    OpKind
	ID      []byte
	Routing []byte // custom routing, stored with the document; nil: by id
	Source  []byte
	// OpUpdate only: the document to index when the id has none, and
	// whether Source is that document (Elasticsearch's upsert,
	// doc_as_upsert).
	Upsert      []byte
	DocAsUpsert bool
	// If makes the op conditional on the id's live document having this
	// version (Elasticsearch's if_seq_no / if_primary_term): otherwise it
	// fails with an *engine.VersionConflictError. Not for OpCreate.
	If *engine.DocVersion
	// RetryOnConflict (OpUpdate without If): how many times to re-read
	// and re-merge when another write of the id lands between the read
	// and the write (Elasticsearch's retry_on_conflict; 0: fail with the
	// conflict).
	RetryOnConflict int
}

// OpResult is the outcome of one Op: the engine's result, or the error
// that failed just this operation.
type OpResult struct {
	engine.Result
	// Noop (OpUpdate): the merge changed nothing, so nothing was written.
	Noop bool
	Err  error
}

// Refresh is when a bulk's writes become visible to search.
type Refresh uint8

const (
	RefreshNone      Refresh = iota // at the next periodic refresh
	RefreshImmediate                // refresh the shard before answering
	RefreshWaitFor                  // wait for a refresh to cover them
)

// Bulk applies a shard's share of a bulk request: operations on different
// ids in parallel (HostOptions.BulkParallelism goroutines, the ops split by
// id so one id's ops apply in request order), all made durable by one
// translog fsync, then the refresh policy. An op that fails fails alone,
// in its OpResult. An error return means nothing may be acknowledged: the
// ops are applied but not durable, or durable but not visible as asked.
func (s *Shard) Bulk(ctx context.Context, ops []Op, refresh Refresh) ([]OpResult, error) {
	if s.rep != nil {
		return nil, s.notPrimary()
	}
	results := make([]OpResult, len(ops))
	b := s.NewBatch()
	if par := min(s.bulkParallelism, len(ops)); par <= 1 {
		s.applyOps(ctx, b, ops, results, nil, 0)
	} else {
		parts := make([]uint8, len(ops))
		for i, op := range ops {
			parts[i] = uint8(maphash.Bytes(s.bulkSeed, op.ID) % uint64(par))
		}
		var wg sync.WaitGroup
		for p := range par {
			wg.Go(func() { s.applyOps(ctx, b, ops, results, parts, uint8(p)) })
		}
		wg.Wait()
	}
	if err := b.Sync(ctx); err != nil {
		return nil, fmt.Errorf("shard %v: bulk not durable: %w", s.id, err)
	}
	var maxSeq int64 = -1
	for _, r := range results {
		if r.Err == nil {
			maxSeq = max(maxSeq, r.SeqNo)
		}
	}
	if maxSeq < 0 {
		return results, nil
	}
	var err error
	switch refresh {
	case RefreshImmediate:
		_, err = s.eng.Refresh(ctx)
	case RefreshWaitFor:
		err = s.eng.WaitForGeneration(ctx, maxSeq)
	}
	if r := s.replicator(); err == nil && r != nil && refresh != RefreshNone {
		// Visible on every in-sync copy that serves searches, not only
		// here (docs/replication.md, refresh=wait_for).
		err = r.WaitVisible(ctx, maxSeq)
	}
	if err != nil {
		// The writes are applied; only visibility is unconfirmed.
		return nil, fmt.Errorf("shard %v: refresh after bulk: %w", s.id, err)
	}
	return results, nil
}

// applyOps applies the ops of partition p (all when parts is nil).
func (s *Shard) applyOps(ctx context.Context, b *Batch, ops []Op, results []OpResult, parts []uint8, p uint8) {
	ctx = engine.WithAffinity(ctx) // the ops fill one DWPT
	for i, op := range ops {
		if parts != nil && parts[i] != p {
			continue
		}
		if op.Kind == OpUpdate {
			results[i] = b.Update(ctx, op)
			continue
		}
		results[i].Result, results[i].Err = applyOp(ctx, b, op)
	}
}

func applyOp(ctx context.Context, b *Batch, op Op) (engine.Result, error) {
	if op.If != nil && op.Kind == OpCreate {
		return engine.Result{}, fmt.Errorf("%w: create of %q cannot be conditional on a version (use index)", ErrInvalid, op.ID)
	}
	switch op.Kind {
	case OpIndex, OpCreate:
		if len(op.Source) == 0 {
			return engine.Result{}, fmt.Errorf("%w: %v of %q has no source", ErrInvalid, op.Kind, op.ID)
		}
		return b.index(ctx, op.ID, op.Routing, op.Source, op.Kind == OpCreate, op.If)
	case OpDelete:
		return b.Delete(ctx, op.ID, op.If)
	case OpUpdateDocValues:
		return b.UpdateDocValues(ctx, op.ID, op.Source, op.If)
	}
	return engine.Result{}, fmt.Errorf("%w: unknown operation %d", ErrInvalid, op.Kind)
}

func (k OpKind) String() string {
	switch k {
	case OpIndex:
		return "index"
	case OpCreate:
		return "create"
	case OpDelete:
		return "delete"
	case OpUpdateDocValues:
		return "update_doc_values"
	case OpUpdate:
		return "update"
	}
	return fmt.Sprintf("OpKind(%d)", uint8(k))
}
