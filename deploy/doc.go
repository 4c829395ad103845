// Package deploy holds no code: its directory holds what is needed to run
// Sluice on Kubernetes without Helm, and its tests check the deploy
// manifests and the Helm chart (charts/sluice) for consistency.
//
//   - crds/: the CustomResourceDefinitions of indexes.sluice.dev and
//     reindexes.sluice.dev, generated from operator/api/v1alpha1 by
//     scripts/gen-crds.sh (also copied to charts/sluice/crds).
//   - rbac/: the operator's namespace, ServiceAccount, least-privilege
//     ClusterRole and leader-election Role, with their bindings.
//   - samples/: Index and Reindex manifests; the API validation suite
//     (operator/api/v1alpha1) creates them against a real kube-apiserver.
//   - Dockerfile: the sluice image (static binary, distroless, non-root).
//
// scripts/check-chart.sh applies all of it, and the rendered chart, with a
// server-side dry run against a test kube-apiserver.
package deploy
