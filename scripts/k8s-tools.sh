#!/usr/bin/env bash
# k8s-tools.sh builds the Kubernetes tools the operator tests and the chart
# checks need, from the Go module proxy only (setup-envtest and release
# downloads cannot reach the network here), pinned by version and cached under
#   ${SLUICE_TOOLS_CACHE:-$HOME/.cache/sluice-tools}/<name>-<version>/
# A tool whose directory exists is skipped, so a warm run takes seconds.
#
# Usage:
#   eval "$(scripts/k8s-tools.sh)"              # all tools, exports their paths
#   eval "$(scripts/k8s-tools.sh controller-gen)" # only what you name
# Tools: kube-apiserver (with kubectl), etcd, controller-gen, helm, envtest
# (envtest = kube-apiserver + kubectl + etcd together in one KUBEBUILDER_ASSETS
# directory, as controller-runtime's envtest expects).
#
# stdout carries only `export` lines (for eval); progress goes to stderr. The
# same lines are written to $CACHE/k8s-tools.env (by a run that builds all
# tools) for scripts that source it.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${SLUICE_TOOLS_CACHE:-$HOME/.cache/sluice-tools}

# Pins. The Kubernetes version is also pinned, with its staging modules, in
# scripts/envtest/go.mod; etcd's version is read from the project's go.mod
# (kept there by a `tool` directive) so the tests' etcd is the one the
# cluster embeds.
K8S_VERSION=v1.37.0
CONTROLLER_TOOLS_VERSION=v0.23.0 # built against k8s.io v0.37, as controller-runtime v0.25
HELM_VERSION=v3.22.0

log() { printf 'k8s-tools: %s\n' "$*" >&2; }

# Builds are environment-independent: no workspace, no cgo (static binaries,
# no C toolchain needed), module graph taken as committed.
export GOWORK=off CGO_ENABLED=0 GOFLAGS=-buildvcs=false

etcd_version() {
	if ! (cd "$ROOT" && go list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3); then
		log "go.etcd.io/etcd/server/v3 is missing from go.mod; restore its tool directive:"
		log "  go get -tool go.etcd.io/etcd/server/v3@v3.7.3"
		return 1
	fi
}

# install_dir NAME VERSION BUILD_FN: runs BUILD_FN TMPDIR unless
# $CACHE/NAME-VERSION exists, then moves TMPDIR into place atomically, so an
# interrupted build never leaves a half-filled directory that a later run
# would trust.
install_dir() {
	local name=$1 version=$2 build=$3
	local dir=$CACHE/$name-$version
	if [[ -d $dir ]]; then
		return 0
	fi
	local tmp
	tmp=$(mktemp -d "$CACHE/.$name-$version.XXXXXX")
	log "building $name $version (cold; this can take minutes)"
	local start=$SECONDS
	if ! "$build" "$tmp"; then
		rm -rf "$tmp"
		log "building $name $version failed"
		return 1
	fi
	chmod 0755 "$tmp"
	mv -T "$tmp" "$dir"
	log "built $name $version in $((SECONDS - start))s"
}

k8s_ldflags() {
	local v=$K8S_VERSION minor
	minor=${v#v1.}
	minor=${minor%%.*}
	local flags="-s -w"
	# Without these the binaries report v0.0.0-master, which kubectl and
	# Helm reject as a server version.
	for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		flags+=" -X $pkg.gitVersion=$v -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
		flags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
	done
	echo "$flags"
}

build_kubernetes() {
	local out=$1
	# -mod=readonly: the wrapper's committed go.sum is the pin; a build that
	# would need to change it fails instead of drifting.
	(cd "$ROOT/scripts/envtest" &&
		go build -mod=readonly -trimpath -ldflags "$(k8s_ldflags)" -o "$out/" \
			k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kubectl)
	local got
	got=$("$out/kube-apiserver" --version)
	if [[ $got != "Kubernetes $K8S_VERSION" ]]; then
		log "kube-apiserver reports '$got', want 'Kubernetes $K8S_VERSION'"
		return 1
	fi
}

build_etcd() {
	# `go install etcd@version` fails on etcd's replace directives; building
	# it inside our module uses our go.mod's pins instead.
	(cd "$ROOT" && go build -mod=readonly -trimpath -ldflags "-s -w" -o "$1/etcd" go.etcd.io/etcd/server/v3)
}

build_controller_gen() {
	(cd "$1" && GOBIN=$1 go install -trimpath -ldflags "-s -w" \
		"sigs.k8s.io/controller-tools/cmd/controller-gen@$CONTROLLER_TOOLS_VERSION")
}

build_helm() {
	local minor=${K8S_VERSION#v1.}
	minor=${minor%%.*}
	# Helm built with `go install` assumes Kubernetes 1.20 for lint and
	# template capabilities; tell it the version we target instead.
	local flags="-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
	for pkg in helm.sh/helm/v3/pkg/chartutil helm.sh/helm/v3/pkg/lint/rules; do
		flags+=" -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$minor"
	done
	(cd "$1" && GOBIN=$1 go install -trimpath -ldflags "$flags" "helm.sh/helm/v3/cmd/helm@$HELM_VERSION")
}

# build_envtest gathers the binaries controller-runtime's envtest looks for in
# KUBEBUILDER_ASSETS into one directory, by symlink.
build_envtest() {
	ln -s "$CACHE/kubernetes-$K8S_VERSION/kube-apiserver" "$1/kube-apiserver"
	ln -s "$CACHE/kubernetes-$K8S_VERSION/kubectl" "$1/kubectl"
	ln -s "$CACHE/etcd-$ETCD_VERSION/etcd" "$1/etcd"
}

main() {
	local want=("$@")
	if [[ ${#want[@]} -eq 0 ]]; then
		want=(envtest controller-gen helm)
	fi
	mkdir -p "$CACHE"
	# One builder at a time per cache: CI steps and engineers may run this
	# concurrently, and two cold kube-apiserver builds on 2 cores help no one.
	exec 9>"$CACHE/.k8s-tools.lock"
	if command -v flock >/dev/null; then
		flock 9
	fi

	local env=()
	local t
	for t in "${want[@]}"; do
		case $t in
		kube-apiserver | kubectl | kubernetes)
			install_dir kubernetes "$K8S_VERSION" build_kubernetes
			env+=("SLUICE_KUBECTL=$CACHE/kubernetes-$K8S_VERSION/kubectl")
			;;
		etcd)
			ETCD_VERSION=$(etcd_version)
			install_dir etcd "$ETCD_VERSION" build_etcd
			env+=("SLUICE_ETCD=$CACHE/etcd-$ETCD_VERSION/etcd")
			;;
		envtest)
			ETCD_VERSION=$(etcd_version)
			install_dir kubernetes "$K8S_VERSION" build_kubernetes
			install_dir etcd "$ETCD_VERSION" build_etcd
			install_dir envtest "$K8S_VERSION-etcd-$ETCD_VERSION" build_envtest
			env+=("KUBEBUILDER_ASSETS=$CACHE/envtest-$K8S_VERSION-etcd-$ETCD_VERSION")
			env+=("SLUICE_KUBECTL=$CACHE/kubernetes-$K8S_VERSION/kubectl")
			;;
		controller-gen)
			install_dir controller-gen "$CONTROLLER_TOOLS_VERSION" build_controller_gen
			env+=("SLUICE_CONTROLLER_GEN=$CACHE/controller-gen-$CONTROLLER_TOOLS_VERSION/controller-gen")
			;;
		helm)
			install_dir helm "$HELM_VERSION" build_helm
			env+=("SLUICE_HELM=$CACHE/helm-$HELM_VERSION/helm")
			;;
		*)
			log "unknown tool '$t' (want kube-apiserver, kubectl, etcd, envtest, controller-gen, helm)"
			return 2
			;;
		esac
	done

	local e lines=""
	for e in "${env[@]}"; do
		lines+="export ${e%%=*}='${e#*=}'"$'\n'
	done
	lines=$(printf '%s' "$lines" | sort -u)
	echo "$lines"
	# The env file describes the full set, so only a full run writes it.
	if [[ $# -eq 0 ]]; then
		echo "$lines" >"$CACHE/k8s-tools.env"
	fi
}

main "$@"
