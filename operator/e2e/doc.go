// Package e2e is the operator's end-to-end suite: the real operator
// (operator/manager) against a real kube-apiserver and etcd (envtest, the
// binaries built by scripts/k8s-tools.sh) and a real Sluice cluster started
// in-process (devcluster: embedded etcd, a coordinator, three data nodes).
// Nothing is faked: resources are applied as users apply them (from
// deploy/samples where one fits) and every effect is checked through the
// Sluice gRPC API.
//
// Without KUBEBUILDER_ASSETS the suite fails and names the script;
// SLUICE_SKIP_ENVTEST=1 skips it.
package e2e
