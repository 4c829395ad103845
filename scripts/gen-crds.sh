#!/usr/bin/env bash
# gen-crds.sh regenerates everything derived from the Kubernetes API types in
# operator/api/v1alpha1: the deepcopy methods (zz_generated.deepcopy.go) and
# the CRD manifests in deploy/crds, copied verbatim into charts/sluice/crds so
# the chart installs exactly what the tests validate. controller-gen is
# built, pinned, by scripts/k8s-tools.sh.
#
#   scripts/gen-crds.sh [gen]   regenerate in place (commit the result)
#   scripts/gen-crds.sh check   fail if the committed files are stale
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
API=operator/api/v1alpha1
CRD_DIRS=(deploy/crds charts/sluice/crds)

eval "$(scripts/k8s-tools.sh controller-gen)"

# generate DIR writes the deepcopy file to DIR/object and the CRDs to DIR/crd.
generate() {
	"$SLUICE_CONTROLLER_GEN" object paths="./$API/..." output:object:dir="$1/object"
	"$SLUICE_CONTROLLER_GEN" crd paths="./$API/..." output:crd:dir="$1/crd"
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
generate "$tmp"

case "${1:-gen}" in
gen)
	cp "$tmp/object/zz_generated.deepcopy.go" "$API/"
	for dir in "${CRD_DIRS[@]}"; do
		# Replace, not overlay, so the CRD of a removed type disappears.
		mkdir -p "$dir"
		rm -f "$dir"/*.yaml
		cp "$tmp"/crd/*.yaml "$dir"/
	done
	;;
check)
	stale=0
	if ! cmp -s "$tmp/object/zz_generated.deepcopy.go" "$API/zz_generated.deepcopy.go"; then
		echo "stale: $API/zz_generated.deepcopy.go" >&2
		stale=1
	fi
	for dir in "${CRD_DIRS[@]}"; do
		if ! diff -r "$tmp/crd" "$dir" >/dev/null; then
			echo "stale: $dir" >&2
			stale=1
		fi
	done
	if [[ $stale -ne 0 ]]; then
		echo "generated Kubernetes API files are stale: run scripts/gen-crds.sh and commit the result" >&2
		exit 1
	fi
	;;
*)
	echo "usage: scripts/gen-crds.sh [gen|check]" >&2
	exit 2
	;;
esac
