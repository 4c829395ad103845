package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/sluice-search/sluice/node/engine/mapping"
	"github.com/sluice-search/sluice/node/engine/translog"
)

// DocValuesParser is a DocParser that reads in-place doc-values updates:
// a JSON object of fields to values, each field one that can be updated in
// place (mapping.Field.Updatable). Engine.UpdateDocValues needs one.
type DocValuesParser interface {
	ParseDocValuesUpdate(fields []byte) ([]mapping.DocValueUpdate, error)
}

// ErrNoDocValuesParser: the engine's parser cannot read doc-values updates.
var ErrNoDocValuesParser = errors.New("engine: the parser cannot read doc-values updates")

// UpdateDocValues sets doc-value fields of the live document with id in
// place, without re-indexing it (see IndexWriter.UpdateDocValues): fields
// is a JSON object of numeric doc-value-only fields to their new values.
// The update is logged like any write and becomes searchable at the next
// refresh; _source keeps the document as it was indexed. If the id was
// written since the last refresh, it refreshes first (as a realtime get
// does). No live document with the id: ErrDocumentMissing.
func (e *Engine) UpdateDocValues(ctx context.Context, id, fields []byte) (Result, error) {
	return e.updateDocValues(ctx, nil, id, fields, nil)
}

// UpdateDocValuesIf is UpdateDocValues, conditional on cond when set (see
// IndexIf).
func (e *Engine) UpdateDocValuesIf(ctx context.Context, id, fields []byte, cond *DocVersion) (Result, error) {
	return e.updateDocValues(ctx, nil, id, fields, cond)
}

// UpdateDocValues is Engine.UpdateDocValues without the fsync (see Bulk).
func (b *Bulk) UpdateDocValues(ctx context.Context, id, fields []byte) (Result, error) {
	return b.e.updateDocValues(ctx, b, id, fields, nil)
}

// UpdateDocValuesIf is Engine.UpdateDocValuesIf without the fsync.
func (b *Bulk) UpdateDocValuesIf(ctx context.Context, id, fields []byte, cond *DocVersion) (Result, error) {
	return b.e.updateDocValues(ctx, b, id, fields, cond)
}

func (e *Engine) updateDocValues(ctx context.Context, b *Bulk, id, fields []byte, cond *DocVersion) (Result, error) {
	if err := e.Failure(); err != nil {
		return Result{}, err
	}
	dv, err := e.parseDocValues(id, fields)
	if err != nil {
		return Result{}, err
	}
	term := e.term.Load()
	seq, err := e.applyDocValues(ctx, id, dv, OpOptions{PrimaryTerm: term, If: cond}, func(pending int64) error {
		e.refresher.addWaiter(true)
		return e.w.WaitForGeneration(ctx, pending)
	})
	if err != nil {
		return Result{}, err
	}
	if err := e.logOp(ctx, b, &translog.Op{Type: translog.OpUpdateDocValues, SeqNo: uint64(seq), PrimaryTerm: uint64(term), ID: id, Source: fields}); err != nil {
		return Result{}, err
	}
	e.refresher.checkBuffered()
	return Result{SeqNo: seq, Term: term, Found: true}, nil
}

func (e *Engine) parseDocValues(id, fields []byte) ([]mapping.DocValueUpdate, error) {
	p, ok := e.opts.Parser.(DocValuesParser)
	if !ok {
		return nil, ErrNoDocValuesParser
	}
	dv, err := p.ParseDocValuesUpdate(fields)
	if err != nil {
		return nil, fmt.Errorf("engine: update doc values of %q: %w", id, err)
	}
	return dv, nil
}

// applyDocValues queues the update, calling refresh (with the id's
// pending seqNo) first while the id's latest write is not yet searchable.
func (e *Engine) applyDocValues(ctx context.Context, id []byte, dv []mapping.DocValueUpdate, o OpOptions, refresh func(pending int64) error) (int64, error) {
	for {
		seq, err := e.w.UpdateDocValues(ctx, id, dv, o)
		if !errors.Is(err, errIDBuffered) {
			return seq, err
		}
		if pending, ok := e.w.pendingSeq(id); ok {
			if err := refresh(pending); err != nil {
				return 0, err
			}
		}
	}
}
