// Package crdtest starts a real Kubernetes API server (kube-apiserver and
// etcd through controller-runtime's envtest) with Sluice's CRDs from
// deploy/crds installed, for tests of the API types, the operator and the
// chart.
//
// The binaries are not downloaded: scripts/k8s-tools.sh builds them from the
// Go module proxy, pinned by version, and prints KUBEBUILDER_ASSETS.
// Start refuses to run without KUBEBUILDER_ASSETS, with a message naming the
// script, so a missing setup fails loudly instead of skipping tests. Setting
// SLUICE_SKIP_ENVTEST=1 is the explicit way to skip such tests (Skip reports
// it).
//
// The apiserver subpackage is a small program around Start that the chart
// check (scripts/check-chart.sh) runs to get a kubeconfig for kubectl.
package crdtest
