// Package e2e holds the end-to-end suite (Ginkgo v2, Gomega): it builds the
// sluice binary and etcd, starts etcd, coordinators and three data nodes as
// separate processes on loopback ports, and drives them through the public
// gRPC API and the CLI — including SIGKILL of a data node and of the
// allocating coordinator.
//
// Run it with the rest of the tests (`go test ./...`), alone
// (`go test ./e2e/ -v`), or with the Ginkgo CLI (`go tool ginkgo ./e2e`).
// SLUICE_E2E=off skips it; SLUICE_E2E_KEEP=1 keeps the work directory (logs
// and data of every process) for a post-mortem. The corpus slice comes from
// ../shared/corpus/enwiki-1k.jsonl.zst, or is generated when that is absent.
package e2e
