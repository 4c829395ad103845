// Package index reconciles Index resources with indices in a Sluice
// cluster, through the coordinator's public gRPC API.
//
// One reconcile reads the resource and the index, computes the desired
// index from the spec, converges (create; update dynamic settings; add
// mapping fields; add and remove aliases), and writes status last. It is
// idempotent: every step compares before it acts, so running it again
// changes nothing. Conflicts on the resource requeue instead of failing.
//
//   - Creation adopts an index that already exists with that name (a
//     Retained index, or one created by hand): the resource records its
//     uuid and converges it like any other. Shard counts that differ from
//     the spec are reported (Degraded, InvalidSpec), never "fixed".
//   - An index that disappears from the cluster (deleted by hand) is
//     created again, with a warning event: the resource says it should
//     exist.
//   - Aliases: the operator acts on changes to spec.aliases, tracked in
//     status.appliedAliases, so an alias a Reindex moved to another index
//     is not taken back; status.aliases shows the aliases the index has.
//   - Deletion: the finalizer sluice.dev/index implements
//     spec.deletionPolicy. Delete removes the index from the cluster, but
//     only the one whose uuid the resource recorded; Retain leaves it. While
//     the cluster is unreachable the finalizer stays and deletion waits.
//
// Conditions: Ready (the index exists, the spec is applied, every primary
// started), Progressing (creating, shards initializing, applying a change)
// and Degraded (the cluster is unreachable, the spec is refused, shards are
// failed or unassigned). Errors from the cluster always land in a
// condition and an event, not only in the log. While the cluster is
// unreachable, health is unknown and Ready is False (ClusterUnreachable);
// calls are retried with a backoff that grows with the outage (2 s up to
// 10 s), and every resource is reconciled at once when the connection
// comes back (operator/manager). A ready index is resynced every 30 s to
// refresh health, document counts and aliases.
package index
