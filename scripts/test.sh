#!/usr/bin/env bash
# The whole test suite, as CI runs it on a clean checkout (.ci/run calls this):
# formatting, vet, staticcheck, generated-code staleness, then every Go test
# with the race detector. Tools are built once into ~/.cache/sluice-tools.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

step "tools"
scripts/tools.sh install

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

step "go test -race"
go test -race -count=1 ./...
