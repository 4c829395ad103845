// Package e2e holds the end-to-end suite (Ginkgo v2, Gomega): it builds the
// sluice binary and etcd, starts etcd, coordinators and three data nodes as
// separate processes on loopback ports, and drives them through the public
// gRPC API and the CLI — including SIGKILL of a data node and of the
// allocating coordinator. The data nodes scrub every file every 2 s
// (--scrub-interval), so every test runs with the scrubber.
//
// faults_test.go damages what a node keeps on disk: a flipped byte in the
// last acknowledged translog record and in the middle of the translog (the
// shard is FAILED, red, naming file and offset), a record cut short past
// the checkpoint (cut; green with every acknowledged document), a flipped
// byte in each segment file type on running nodes (the scrubber fails each
// shard within its interval; searches report it; `sluice shard verify`
// exits non-zero naming the files), and a flipped byte in a replica's
// segment file (the scrubber fails the copy, which leaves the in-sync set
// and recovers from its primary: the file is whole again, green, both
// copies verify); and restarts a node killed with a large
// translog, measuring the replay (SLUICE_E2E_TRANSLOG_MB sets the larger
// case's size, 128 by default).
//
// partition_test.go runs a cluster of its own whose data nodes are hosts
// of their own (netlab_test.go: a network namespace each, veth pairs to a
// bridge; etcd and the coordinator in the root namespace; a cut is an
// iproute2 blackhole rule, so only `ip` is needed). With replicas=1 and a
// writer running it cuts the primary's node from everyone, from etcd only,
// and from its replicas only, then heals: every acknowledged write is
// there, the copies agree (ShardStats per copy), and a write sent straight
// to an old primary whose term ended is acknowledged by no one. A primary
// moved by a drain under a writer has the new primary's node killed, the
// old one isolated, or the new one cut from the other nodes the moment
// the hand-off shows (term + 1): nothing acknowledged is lost. A
// randomized test then mixes bulks (some refresh=wait_for), refreshes,
// SIGKILL and restart of random nodes and the three cuts for
// SLUICE_E2E_FAULT_SECONDS (45 by default), with the seed printed and
// settable (SLUICE_E2E_FAULT_SEED), and checks every acknowledged id
// present, no id twice, and equal copies. Without root or iproute2 the
// partition specs are skipped and the randomized test makes SIGKILLs only,
// on loopback.
//
// moves_test.go runs a loopback cluster of its own (three data nodes, an
// index of 4 shards with replicas=1) and, with a writer and a searcher
// running, adds a 4th node and waits until the allocator has rebalanced
// copies onto it, then drains that node with `sluice node drain --wait`
// until it holds nothing. Each time every acknowledged write is there
// once, no search reported a failure, no more moves ran at once than the
// allocator's bounds, and the cluster state and health showed a move in
// progress (whether the CLI, a process per call, answered before the
// moves ended is reported, not required: its output for a move is
// unit-tested in cmd/sluice). A node holding primaries is drained under load the
// same way, each primary's role handed to its target at term + 1.
//
// scaledown_test.go runs a loopback cluster of its own whose data nodes
// are named as a StatefulSet's pods, beside a test API server
// (operator/crdtest/apiserver; skipped without KUBEBUILDER_ASSETS) holding
// that StatefulSet, and runs the chart's preStop hook, `sluice node
// prestop`, as the kubelet would: a pod still counted drains nothing; with
// the StatefulSet scaled from 3 to 2 and a writer and a searcher running,
// the pod of ordinal 2 drains to empty, SIGTERM ends its drain, every
// acknowledged write is there and no search failed; scaled back to 3, the
// node of ordinal 2 takes copies again.
//
// rolling_test.go restarts every data node in turn (SIGTERM, start, wait
// until its readiness, the health service sluice.node.ready, is SERVING)
// with replicas=1 and a bulk running, polling health and a search every
// 100 ms: health is never red, no search reports a failure, and every
// acknowledged write is there at the end.
//
// secure_test.go runs the secure path as processes: `sluice dev --secure
// --nodes 0` (etcd over TLS with client certificates, a coordinator with TLS
// and API keys) joined by `sluice node` processes holding certificates of
// its CA; clients without TLS, without a key or with a bad key are refused,
// a read-only key can neither write nor delete, a revoked key stops, and a
// node with a certificate of another CA never registers.
//
// Ports (ports_test.go): a process the suite must tell its port before it
// starts (etcd; nodes and coordinators that restart on the same address)
// gets one outside the kernel's ephemeral range, never handed out twice
// in a run and claimed against concurrent runs by a lock file under
// $TMPDIR/sluice-e2e-ports; `sluice dev` binds port 0 and the suite reads
// its addresses from its banner. A port picked by binding :0 and closing
// could be handed out again by the kernel before its process binds it.
//
// Run it with the rest of the tests (`go test ./...`), alone
// (`go test ./e2e/ -v`), or with the Ginkgo CLI (`go tool ginkgo ./e2e`).
// SLUICE_E2E=off skips it; SLUICE_E2E_KEEP=1 keeps the work directory (logs
// and data of every process) for a post-mortem. The corpus slice comes from
// ../shared/corpus/enwiki-1k.jsonl.zst, or is generated when that is absent.
package e2e
