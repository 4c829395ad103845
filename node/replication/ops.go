package replication

import (
	"bytes"
	"fmt"

	"github.com/sluice-search/sluice/node/engine/translog"
	nodev1 "github.com/sluice-search/sluice/proto/sluice/node/v1"
)

var opTypes = map[translog.OpType]nodev1.ReplicatedOpType{
	translog.OpIndex:  nodev1.ReplicatedOpType_REPLICATED_OP_TYPE_INDEX,
	translog.OpDelete: nodev1.ReplicatedOpType_REPLICATED_OP_TYPE_DELETE,
	translog.OpNoOp:   nodev1.ReplicatedOpType_REPLICATED_OP_TYPE_NO_OP,

	translog.OpUpdateDocValues: nodev1.ReplicatedOpType_REPLICATED_OP_TYPE_UPDATE_DOC_VALUES,
}

// toProtoOp is a translog operation on the wire.
func toProtoOp(op *translog.Op) *nodev1.ReplicatedOp {
	return &nodev1.ReplicatedOp{SeqNo: int64(op.SeqNo), PrimaryTerm: int64(op.PrimaryTerm), Type: opTypes[op.Type],
		Id: op.ID, Source: op.Source, Routing: op.Routing}
}

// copyProtoOp is toProtoOp over copies of op's bytes, for an op read from
// a translog snapshot: Snapshot.Next reuses its buffer for the next
// record, so a batch that kept the bytes would send every op with the
// id and source of the last ones read.
func copyProtoOp(op *translog.Op) *nodev1.ReplicatedOp {
	p := toProtoOp(op)
	p.Id, p.Source, p.Routing = bytes.Clone(op.ID), bytes.Clone(op.Source), bytes.Clone(op.Routing)
	return p
}

func toProtoOps(ops []translog.Op) []*nodev1.ReplicatedOp {
	out := make([]*nodev1.ReplicatedOp, len(ops))
	for i := range ops {
		out[i] = toProtoOp(&ops[i])
	}
	return out
}

// fromProtoOps are operations off the wire; an unknown type or a
// negative number is refused (the engine checks the rest).
func fromProtoOps(ops []*nodev1.ReplicatedOp) ([]translog.Op, error) {
	out := make([]translog.Op, len(ops))
	for i, p := range ops {
		var t translog.OpType
		switch p.GetType() {
		case nodev1.ReplicatedOpType_REPLICATED_OP_TYPE_INDEX:
			t = translog.OpIndex
		case nodev1.ReplicatedOpType_REPLICATED_OP_TYPE_DELETE:
			t = translog.OpDelete
		case nodev1.ReplicatedOpType_REPLICATED_OP_TYPE_NO_OP:
			t = translog.OpNoOp
		case nodev1.ReplicatedOpType_REPLICATED_OP_TYPE_UPDATE_DOC_VALUES:
			t = translog.OpUpdateDocValues
		default:
			return nil, fmt.Errorf("%w: ops[%d].type: %v", ErrInvalid, i, p.GetType())
		}
		if p.GetSeqNo() < 0 || p.GetPrimaryTerm() < 0 {
			return nil, fmt.Errorf("%w: ops[%d]: seq_no %d, primary_term %d", ErrInvalid, i, p.GetSeqNo(), p.GetPrimaryTerm())
		}
		out[i] = translog.Op{Type: t, SeqNo: uint64(p.GetSeqNo()), PrimaryTerm: uint64(p.GetPrimaryTerm()),
			ID: p.GetId(), Source: p.GetSource(), Routing: p.GetRouting()}
	}
	return out, nil
}
