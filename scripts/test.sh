#!/usr/bin/env bash
# The whole test suite, as CI runs it on a clean checkout (.ci/run calls this):
# formatting, vet, staticcheck, generated-code staleness (protobuf, CRDs), the
# Helm chart against a real kube-apiserver, then every Go test with the race
# detector (operator suites use envtest; e2e starts real processes). Tools are
# built once into ~/.cache/sluice-tools (a cold build of the Kubernetes tools
# takes several minutes; warm runs cost nothing).
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

step "tools"
scripts/tools.sh install
scripts/tools.sh python-venv >/dev/null   # the official Elasticsearch client, for e2e/esapi_test.go
eval "$(scripts/k8s-tools.sh)"   # kube-apiserver, etcd, kubectl, controller-gen, helm; exports KUBEBUILDER_ASSETS

step "gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go'))
if [[ -n $unformatted ]]; then
  echo "not gofmt-formatted (run 'make fmt'):" >&2
  echo "$unformatted" >&2
  exit 1
fi

step "go vet"
go vet ./...

step "staticcheck"
"$(scripts/tools.sh path staticcheck)" ./...

step "generated protobuf code is current"
scripts/gen-proto.sh check

step "generated Go code is current (codec/packed unpackers)"
tmp=$(mktemp -d)
cp node/engine/codec/packed/gen.go "$tmp/"
(cd "$tmp" && go run gen.go)
if ! cmp -s "$tmp/unpack_gen.go" node/engine/codec/packed/unpack_gen.go; then
  echo "node/engine/codec/packed/unpack_gen.go is stale: run 'go generate ./node/engine/codec/packed' and commit it" >&2
  exit 1
fi
rm -rf "$tmp"

step "public protocol: no breaking change against the previous commit (buf breaking)"
scripts/gen-proto.sh breaking

step "layer rules (what may import what)"
scripts/check-layers.sh

step "generated CRDs and deepcopy are current"
scripts/gen-crds.sh check

step "Helm chart and deploy/ manifests against a real kube-apiserver"
scripts/check-chart.sh

step "go test -race"
# The e2e package runs real multi-process clusters one spec after another;
# go test's default 10-minute limit per package is too tight on a loaded
# 2-core machine.
go test -race -count=1 -timeout 30m ./...
