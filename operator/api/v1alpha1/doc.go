// Package v1alpha1 holds the Kubernetes API of Sluice: the Index and Reindex
// custom resources in group sluice.dev, version v1alpha1.
//
// An Index declares one Sluice index (shards, routing shards, replicas,
// mapping, settings, aliases) and what happens to its data when the resource
// is deleted. A Reindex declares one reindex task: copy the documents of a
// source index (optionally filtered by a query) into a destination index,
// optionally creating the destination and swapping an alias to it at the end.
// The operator (operator/controllers) turns both into calls on the
// coordinator's public gRPC API and reports back through status: conditions
// (Ready, Progressing, Degraded), observedGeneration and counters.
//
// The Go types are the source of truth. kubebuilder markers on them carry the
// OpenAPI schema and the CEL rules (x-kubernetes-validations) that the API
// server enforces statically: Elasticsearch index-name rules, immutable shard
// counts, routing shards a multiple of shards, replicas 0 to 32, source !=
// destination. scripts/gen-crds.sh regenerates
// zz_generated.deepcopy.go here and the CRD manifests in deploy/crds and
// charts/sluice/crds; never edit those by hand.
//
// +kubebuilder:object:generate=true
// +groupName=sluice.dev
package v1alpha1
