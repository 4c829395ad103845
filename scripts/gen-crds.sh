#!/usr/bin/env bash
# gen-crds.sh regenerates everything derived from the Kubernetes API types in
# operator/api: the deepcopy methods (zz_generated.deepcopy.go) and the CRD
# manifests in deploy/crds, copied verbatim into charts/sluice/crds so the
# chart installs exactly what the tests validate. controller-gen is built,
# pinned, by scripts/k8s-tools.sh.
#
# Staleness check: scripts/gen-crds.sh && git diff --exit-code -- operator/api deploy/crds charts/sluice/crds
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
eval "$(scripts/k8s-tools.sh controller-gen)"

"$SLUICE_CONTROLLER_GEN" object paths=./operator/api/...
# Write into a fresh directory first so CRDs of deleted types disappear
# instead of lingering.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$SLUICE_CONTROLLER_GEN" crd paths=./operator/api/... output:crd:dir="$tmp"
for dir in deploy/crds charts/sluice/crds; do
	mkdir -p "$dir"
	rm -f "$dir"/*.yaml
	cp "$tmp"/*.yaml "$dir"/
done
