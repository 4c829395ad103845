package engine

import (
	"errors"
	"fmt"

	"github.com/sluice-search/sluice/node/engine/index"
)

// DocVersion identifies the latest operation on a document: its sequence
// number and the primary term that wrote it (Elasticsearch's _seq_no and
// _primary_term). Every write of a document — index, in-place update —
// gives it a new one.
type DocVersion struct {
	SeqNo       int64
	PrimaryTerm int64
}

// UnassignedSeqNo is the version of a document that has none in this
// index: its segment predates the _seq_no column (written before sequence
// numbers were stored per document), or was added from another index
// (AddIndexes: SegmentInfo.ForeignVersions) and no write here has given
// the document one. No conditional write from a client matches it.
// Elasticsearch's UNASSIGNED_SEQ_NO.
const UnassignedSeqNo = -2

// ErrVersionConflict: a conditional write (OpOptions.If) found another
// version, or no document (Elasticsearch's version_conflict_engine_exception).
var ErrVersionConflict = errors.New("engine: version conflict")

// VersionConflictError is a refused conditional write, with what the
// document had when it was refused.
type VersionConflictError struct {
	ID      string
	Want    DocVersion
	Found   bool       // a live document with the id exists
	Current DocVersion // its version, when Found
}

func (e *VersionConflictError) Error() string {
	head := fmt.Sprintf("[%s]: version conflict, required seqNo [%d], primary term [%d]", e.ID, e.Want.SeqNo, e.Want.PrimaryTerm)
	if !e.Found {
		return head + " but no document was found"
	}
	if e.Current.SeqNo == UnassignedSeqNo {
		// Not "seqNo [-2]": Elasticsearch says unassigned only of a
		// document that does not exist.
		return head + ". current document has no version in this index (its segment was written before versions were stored, or copied from another index): write it once without if_seq_no to give it one"
	}
	return fmt.Sprintf("%s. current document has seqNo [%d] and primary term [%d]", head, e.Current.SeqNo, e.Current.PrimaryTerm)
}

func (e *VersionConflictError) Unwrap() error { return ErrVersionConflict }

// checkVersion is the precondition of a conditional write.
func checkVersion(id []byte, want DocVersion, found bool, current DocVersion) error {
	if found && current == want {
		return nil
	}
	return &VersionConflictError{ID: string(id), Want: want, Found: found, Current: current}
}

// DocVersion returns the version of a live doc found by LookupID, from its
// segment's _seq_no and _primary_term columns (in-place updates layered);
// a segment without them, or a doc of an added segment no write here has
// reached (the leaf hides the source's columns), gives UnassignedSeqNo.
func (r *Reader) DocVersion(leaf, doc int) DocVersion {
	v := DocVersion{SeqNo: UnassignedSeqNo}
	lr := r.leaves[leaf].Reader
	if dv := lr.NumericDocValues(index.SeqNoField); dv != nil {
		if s, ok := dv.Get(doc); ok {
			v.SeqNo = s
		}
	}
	if dv := lr.NumericDocValues(index.PrimaryTermField); dv != nil {
		v.PrimaryTerm, _ = dv.Get(doc)
	}
	return v
}
