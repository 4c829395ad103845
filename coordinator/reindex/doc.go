// Package reindex is the coordinator side of reindex tasks: the Manager
// behind the Reindex, GetTask, ListTasks, CancelTask and RethrottleTask
// RPCs (coordinator/server translates them), and the task runner that
// executes tasks (the coordinator runs Manager.Run).
// The data-node side is node/reindex.
//
// # Accepting a task (any coordinator)
//
// Reindex validates the request, resolves the source (an index, or an
// alias of one index) and plans:
//
//   - the destination: an existing index, or one created now from the
//     source's mapping and settings with the request's settings on top. A
//     created destination keeps the source's routing shard count when its
//     shard count is a multiple of the source's dividing it (a split), so
//     every destination shard draws from one source shard
//     (routing.SourceShard), and is then created with
//     metadata.CreateOptions.ColocateWith: each destination shard placed on
//     its source shard's node in the creating transaction;
//   - the mode: AUTO is LOCAL when the layout is co-locatable, else REMOTE;
//     LOCAL on a layout that is not is INVALID_ARGUMENT. LOCAL and REMOTE
//     run the same node code: a node writes in-process into the destination
//     shards it holds and streams the rest (ShardIngest). BASELINE scrolls
//     and bulks through this coordinator's data path, as external tools do,
//     and is refused on a source with a field updatable in place (its
//     _source lacks the updates; updatableField);
//   - the copy method (copy_method, chooseCopyMethod): SEGMENTS when the
//     task changes nothing about how documents are indexed or which are
//     copied — LOCAL mode, routing kept, no more slices than source shards,
//     no query, max_docs or requests_per_second (a throttled task asked for
//     a gentle document-paced copy; package segmentcopy holds these request
//     rules, which the nodes apply too), and an empty destination (created by
//     the task, or existing with no documents) whose mapping equals the
//     source's in canonical form. Then each slice adds its source shard's
//     segments to the co-located destination shards (node/reindex), and
//     verification counts per source shard as for documents. AUTO falls
//     back to DOCUMENTS and records why (ReindexStatus.copy_method_reason);
//     SEGMENTS on an ineligible task is INVALID_ARGUMENT naming the reason,
//     decided before a destination is created; DOCUMENTS is the document
//     copy. Each slice reports what it actually copied (a node falls back
//     per slice; SliceStatus.copy_method);
//   - slices: auto (and anything below the source's shard count) is one per
//     source shard; more subdivides shards by _id hash, as sliced scroll
//     does; max_docs is shared out evenly;
//   - routing (dest.routing, as Elasticsearch): "keep" (the default) copies
//     each document with the routing it was stored with and routes it by
//     that routing (its _id if none), as a bulk would — so a get or search
//     with the routing finds it in the destination, and a split layout
//     stays co-located; "discard" routes by _id and stores none; "=value"
//     gives every document value. In all modes alike: nodes apply it
//     (routing.Dest), BASELINE sets each bulk item's routing.
//
// The task is stored PENDING under tasks/<id> as a ReindexTaskRecord (the
// public Task, the request, the plan, per-slice checkpoints), and the RPC
// answers at once, or when the task ends with wait_for_completion.
//
// # Pins
//
// A LOCAL reindex pins the primaries it uses in place: pins/<id>
// (statev1.ShardPins) names the source shards of its unfinished slices and
// every destination shard, and the allocator's rebalancing does not move
// those primaries (coordinator/allocator). A created destination is pinned
// in its creating transaction (metadata.CreateOptions.Pin), before the
// task record exists; from then on every write of the record writes the
// pins it implies in the same transaction (store.go: pinsOf), so a slice
// done unpins its source shard and the task's end deletes them. A pin left
// without a task (a coordinator stopped between the two writes) is deleted
// by the runner's sweep one pass later. Drains and full disks move pinned
// primaries all the same; a slice whose shards are then apart copies
// documents. REMOTE, BASELINE and update by query pin nothing.
//
// # Running tasks (the elected task runner)
//
// Every coordinator's Manager campaigns in an etcd election
// (election/reindex); the winner lists tasks/ and watches it, and runs each
// task that has not ended — new ones, and RUNNING ones a previous runner
// left behind, from their checkpoints. Its writes to a task record are
// guarded by its leadership, so a deposed runner cannot overwrite its
// successor. Other coordinators only write cancel_requested and
// requests_per_second into the record; the runner sees them through the
// watch: cancel stops the slices' streams (nodes stop within a document)
// and ends the task CANCELLED; a rethrottle sends each running slice its
// new share of the rate at once (RethrottleReindexSlice), again and again
// while its node answers that the slice is not running there yet (its
// stream still starting), so no slice keeps the rate it started with; a
// slice not started, or resumed after a failed attempt, starts at the
// current share.
//
// A slice runs as RunReindexSlice on the node holding its source shard,
// resuming from its checkpoint's cursor. Each streamed message is a
// durable checkpoint (the node committed its writes first) and replaces
// the slice's checkpoint in memory; progress is persisted every
// ProgressInterval. A failed attempt — node gone, shard moving,
// RESOURCE_EXHAUSTED — is retried with backoff from the last checkpoint;
// conflicts under conflicts=abort and bad requests end the task FAILED, as
// does a slice without progress for StallTimeout. A node that restarted
// resumes by position if its source shard reopened with the same segments,
// else the slice starts over (writes are idempotent by _id).
//
// # Verification and alias swap
//
// When every slice is done the task is VERIFYING: each destination shard
// is refreshed and counted (ShardStats). If the destination was empty at
// the start, the count must equal what the slices selected minus
// documents that failed — per source shard when every destination shard
// draws from one source shard (a co-locatable layout with routing kept),
// else in total; otherwise it must be at
// least that. A mismatch fails the task with the numbers, and no alias is
// swapped. Then swap_alias is pointed at the destination and away from
// every other index in one metadata.UpdateAliases transaction.
//
// GetTask reports per-slice progress, created/updated/conflicts/failures,
// docs/s over the last 10 s and the ETA at that rate.
//
// # Update by query
//
// UpdateByQuery (updatebyquery.go) plans a task of type update_by_query as
// a LOCAL document reindex of an index into itself whose plan carries the
// fields to set (ReindexPlan.update_doc_values): the runner runs it like
// any reindex, its slices set the fields in place on their own shard
// (node/reindex), and its verification only refreshes the index.
//
// # Retention
//
// Finished task records stay readable (GetTask, ListTasks) for
// Options.TaskRetention after they end — a week by default — and the task
// runner then deletes them, so tasks/ does not grow forever. The deletion
// is guarded by the record's revision and the runner's leadership.
package reindex
