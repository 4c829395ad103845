// Package reindex reconciles Reindex resources with reindex tasks in a
// Sluice cluster: it starts exactly one task per resource, follows it to
// the end, mirrors its progress into status, rethrottles it when
// spec.requestsPerSecond changes and cancels it when the resource is
// deleted.
//
// # Exactly one task, across crashes
//
// The task id is written to status.taskID in the same reconcile that
// started the task, right after the Reindex call returns, retrying the
// status write on conflicts against a fresh copy of the resource. Every
// later reconcile, in this operator or in a restarted one, follows that id.
//
// The id can still be lost: the operator can die between the call and the
// write, or status can be dropped (a backup restored without status, a
// resource recreated from its manifest). So before starting a task the
// reconciler always looks for one it may have started already (ListTasks),
// and adopts a task when all of these hold:
//
//   - it is a reindex into spec.destination.index, from spec.source.index
//     (or the index that name resolves to, when it is an alias);
//   - it started no earlier than 5 s before the resource was created (the
//     slack covers clock skew between the API server and the cluster),
//     and, if it has ended, ended after the resource was created (so a
//     resource deleted and applied again does not adopt the task of its
//     predecessor);
//   - no other Reindex resource records it in status.taskID.
//
// Among several, the earliest started wins. The public API has no field to
// tag a task with its resource (a description such as
// "k8s:<namespace>/<name>/<uid>" would make the match exact); if one is
// added to ReindexRequest, matching on it should come first.
//
// # Spec changes
//
// Only requestsPerSecond may change after creation: the CRD's CEL rules
// make every other field immutable, so the API server rejects such edits.
// A changed requestsPerSecond is sent with RethrottleTask while the task
// runs; once the task has ended it is ignored.
//
// # Deletion
//
// The finalizer sluice.dev/reindex cancels a task that has not ended
// before the resource goes away. It is removed as soon as the task ends,
// so a finished Reindex deletes at once even when the cluster is gone.
//
// # Conditions
//
// Ready is True once the task succeeded; Progressing while it is pending,
// running or verifying; Degraded when the cluster is unreachable
// (ClusterUnreachable, retried with a growing backoff), the task failed
// (TaskFailed) or vanished (TaskLost), documents failed (DocumentFailures),
// or the cluster has no reindex support yet (ReindexUnsupported, its
// RPCs answer UNIMPLEMENTED; retried every 2 minutes).
package reindex
