// Package datapath is the coordinator's data path: the document RPCs of the
// public Sluice service (Bulk, BulkStream, Get, Search, OpenPointInTime,
// ClosePointInTime, Scroll, Refresh, index statistics and VerifyIndex), implemented over
// the cluster state cache (which node holds each shard) and the node
// connection pool, given explicitly to New; coordinator.New builds it, and
// coordinator/server translates the RPCs to its methods.
//
// The data path returns typed, wrapped errors (ErrInvalid, ErrOverloaded,
// ErrTooLarge, ErrUnavailable, ErrPITGone, the cluster state's); the coordinator's one
// error table maps them to codes and describes per-item and per-shard
// failures (Options.Errors). A node's error arrives as an rpc.RemoteError
// (cluster/nodeconn): wrapped with where it happened, it keeps the node's
// code and details, and its text is the node's message.
//
// # Bulk
//
// Each item is routed as Elasticsearch does — index (or write alias), then
// shard = routing.Shard(routing or _id) — grouped per shard, and the groups
// are sent to their shards' primaries concurrently (ShardBulk): the
// primary alone indexes, and replicates to its copies. A realtime Get
// reads the primary too. Results keep request
// order. Item problems the coordinator can see (no such index, invalid
// name, no id for a delete) fail just that item; document problems
// (malformed JSON, mapping conflicts) come back from the node per item.
// The item's routing travels with it and the shard's engine stores it
// (_routing); Get, search hits and Scroll return it. An index with a write
// block (a node holding a copy of it is past the flood-stage disk
// watermark; the allocator sets and lifts it) fails its items with
// RESOURCE_EXHAUSTED, a retry delay and the block's reason, naming the
// node and its disk; a bulk of nothing else fails as a whole, with a
// RetryInfo.
//
// # Memory budgets
//
// The coordinator holds what it is asked to carry within two budgets of
// bytes (Budget), as Elasticsearch's indexing pressure does, so that
// under overload it refuses work instead of growing without bound:
//
//   - Bulk (Options.MaxInFlightBulkBytes): a bulk call takes room for the
//     largest request the coordinator receives (a quarter of the budget,
//     at most 64 MiB, its gRPC receive limit) before any of its bytes are
//     read (AdmitBulk, a gRPC tap), or is refused unread with
//     RESOURCE_EXHAUSTED and a RetryInfo; once decoded it holds its real
//     size until it is answered. So the requests being received and those
//     being applied are bounded together. A BulkStream takes room for its
//     next batch (as large as its last) before reading it, and waits for
//     it: a full budget leaves batches in the client and gRPC flow
//     control pushes back.
//   - Search (Options.MaxInFlightSearchBytes): the documents a search's
//     fetch phase gathers, and each scroll batch, until handed to gRPC.
//     A search that finds no room within AdmissionWait is refused with
//     RESOURCE_EXHAUSTED and a RetryInfo; one that alone outweighs the
//     budget is INVALID_ARGUMENT naming size (scroll: batch_size).
//
// A reservation is released when its call ends, on every path (a tap's
// with the call's context). Resident memory under overload is a few times
// the budgets (the request decoded, its copy to the nodes, garbage not yet
// collected); docs/limits.md has the measurements.
//
// Each node also has a budget of in-flight bulk bytes. Unary Bulk waits at
// most Options.AdmissionWait for room; items it cannot admit fail with
// RESOURCE_EXHAUSTED and a retry delay (ErrorDetail.retry_delay) and, when
// no item was admitted at all, the call fails with RESOURCE_EXHAUSTED
// carrying a google.rpc.RetryInfo — never an unbounded queue, never a
// silent drop. BulkStream instead blocks on the node's budget: each stream
// holds one batch at a time.
//
// # Copies
//
// Reads — the query and fetch phases, opening a point-in-time — may use any
// copy of a shard that is started on a live node and in sync, the primary
// included (readShards). Which one is chosen per request by adaptive
// replica selection (ars.go: Elasticsearch's ARS, an average of each
// node's response time weighed by its outstanding requests), and a shard
// request that fails on one copy is retried on the next (onCopies), so a
// node's death costs a search no shard. The fetch phase goes to the copy
// whose reader the query phase pinned; if that copy is gone from its node
// by then (moved away, its node stopped), a search without a point in
// time runs once more from the start on the copies the state has then,
// rather than fail. A point-in-time pins one copy per
// shard and names it in its id, so its searches, search_after pages and
// scrolls stay on the reader they pinned. Refresh, statistics and writes
// go to primaries.
//
// # Search
//
// Query phase on every shard (from+size hits each, with sort values), a
// merge by score (ties: shard order, then doc) or by the sort keys, then a
// fetch phase that reads _source only for the winners, from the very reader
// each shard searched (ShardSearch pins it; ShardFetch releases it). Shard
// failures are reported in ShardsSummary; the search fails only when every
// shard failed. The query is validated first against the cluster's mapping
// (querydsl strict), so an unknown field is INVALID_ARGUMENT naming it.
//
// "_shard_doc" sort values are (shard position << 32 | doc), unique across
// the shards of one point-in-time; search_after on them is translated back
// per shard.
//
// # Point-in-time and scroll
//
// A PIT pins a reader on every shard; its id encodes, per shard, the index,
// shard, node and reader id (pitid.go). Scroll reads shards in order
// through ShardScan. With a slice {id, max} and n shards: max <= n gives
// slice id the shards j with j % max == id, whole; max > n gives it shard
// id % n, subdivided into the slices whose ids are congruent to it, by _id
// hash on the node — together every live document exactly once. A scroll
// without a PIT opens its own, carries it in the cursor (so a broken stream
// resumes on the same view) and closes it at the end.
//
// # Verify
//
// VerifyIndex asks each started copy's node to checksum its files
// (VerifyShard; one at a time per node), all copies at once. A copy whose
// routing entry says FAILED answers with its reason and its node is not
// called — the node closed it; one not started is UNAVAILABLE. A node that
// no longer holds a copy it was asked about has usually just failed it:
// the routing entry is given a moment (failedWait) to say so.
package datapath
