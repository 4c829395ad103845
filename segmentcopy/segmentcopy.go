// Package segmentcopy holds the rule that decides whether a reindex may
// copy segments — add a source shard's committed segments to its
// co-located destination shards, nothing re-analysed — rather than
// documents. A segment carries every live document of its shard, routed as
// it was, at full speed, so only a request that asks for exactly that can
// be served by one. The coordinator applies the rule when it plans a task
// (copy_method AUTO falls back to documents, SEGMENTS is refused) and a
// data node again to each slice it is asked to copy by segments: one rule,
// so the two cannot disagree. What only one side can know (the layout and
// the destination's mapping and documents) each side checks itself.
package segmentcopy

import sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"

// Request is what a reindex, or one slice of it, asks of the documents it
// copies.
type Request struct {
	Query             *sluicev1.Query
	MaxDocs           int64
	RequestsPerSecond float32
	// SubSliced: the copy cuts a source shard by _id hash (a task with
	// more slices than source shards; a slice with a sub-slice).
	SubSliced bool
	// KeepsRouting: dest.routing keeps each document's routing.
	KeepsRouting bool
}

// Refusal says why a segment copy cannot serve r, or "" if it can.
func (r Request) Refusal() string {
	switch {
	case !r.KeepsRouting:
		return "dest.routing is not keep"
	case r.SubSliced:
		return "slices subdivide the source shards"
	case !SelectsAll(r.Query):
		return "a query selects the documents"
	case r.MaxDocs > 0:
		return "max_docs limits the documents"
	case r.RequestsPerSecond > 0:
		return "requests_per_second throttles the copy"
	}
	return ""
}

// SelectsAll reports whether q selects every document: no query, one with
// no kind set, or match_all. A data node runs no query for these.
func SelectsAll(q *sluicev1.Query) bool {
	return q.GetKind() == nil || q.GetMatchAll() != nil
}
