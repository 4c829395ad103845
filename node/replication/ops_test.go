package replication

import (
	"errors"
	"reflect"
	"testing"

	"github.com/sluice-search/sluice/node/engine/translog"
	nodev1 "github.com/sluice-search/sluice/proto/sluice/node/v1"
)

// TestOpsRoundTrip: every operation type a primary's translog logs
// reaches the replica as it was logged (a type missing from the wire
// would be refused there, failing the copy).
func TestOpsRoundTrip(t *testing.T) {
	ops := []translog.Op{
		{Type: translog.OpIndex, SeqNo: 1, PrimaryTerm: 1, ID: []byte("a"), Source: []byte(`{"x":1}`), Routing: []byte("r")},
		{Type: translog.OpDelete, SeqNo: 2, PrimaryTerm: 1, ID: []byte("a")},
		{Type: translog.OpNoOp, SeqNo: 3, PrimaryTerm: 2, Source: []byte("gap")},
		{Type: translog.OpUpdateDocValues, SeqNo: 4, PrimaryTerm: 2, ID: []byte("b"), Source: []byte(`{"n":2}`)},
	}
	got, err := fromProtoOps(toProtoOps(ops))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, ops) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, ops)
	}
	for _, bad := range []*nodev1.ReplicatedOp{{SeqNo: 1, PrimaryTerm: 1}, {Type: nodev1.ReplicatedOpType_REPLICATED_OP_TYPE_INDEX, SeqNo: -1}} {
		if _, err := fromProtoOps([]*nodev1.ReplicatedOp{bad}); !errors.Is(err, ErrInvalid) {
			t.Errorf("%v: %v, want ErrInvalid", bad, err)
		}
	}
}
