package index

// SegmentID is a random identifier written into every file header of a
// segment, so a file from another segment with the same name is detected.
type SegmentID [16]byte

// SegmentInfo names a segment and what is needed to open it. The files and
// the codec are fixed when the segment is written; deletes and doc-values
// updates live in generation files named from DelGen / DocValuesGen and are
// tracked by the commit point (the engine's SegmentInfos), not here.
type SegmentInfo struct {
	Name   string    // "_0", "_1z": base-36 counter, as Lucene
	ID     SegmentID // random, checked against every file header
	MaxDoc int
	Codec  string   // the Codec name that wrote it
	Files  []string // core files, set by the codec's WriteSegment
	// Diagnostics records how the segment came to be (source=flush|merge,
	// timestamps); informational only.
	Diagnostics map[string]string
	// ForeignVersions: the segment was added from another index
	// (AddIndexes), so its _seq_no and _primary_term columns are that
	// index's versions, not this one's. Readers ignore them — a doc has
	// no version here (UnassignedSeqNo) until a write here gives it one,
	// as a doc-values update — and merges carry no version for such docs.
	// Recorded with the segment in commit points and checkpoints, so it
	// travels to replicas with the files.
	ForeignVersions bool `json:",omitempty"`
}
