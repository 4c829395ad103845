#!/usr/bin/env bash
# Builds the developer tools Sluice's checks need, pinned by version, from the
# Go module proxy, into a cache outside the repo:
#   ${SLUICE_TOOLS_CACHE:-~/.cache/sluice-tools}/<name>-<version>/<name>
# A warm run costs a few stat calls. Prints nothing but progress on stderr;
# `scripts/tools.sh path NAME` prints the binary path of one tool.
set -euo pipefail

CACHE=${SLUICE_TOOLS_CACHE:-$HOME/.cache/sluice-tools}

# name|module/cmd path|version
TOOLS=(
  "protoc-gen-go|google.golang.org/protobuf/cmd/protoc-gen-go|v1.36.12"
  "protoc-gen-go-grpc|google.golang.org/grpc/cmd/protoc-gen-go-grpc|v1.6.2"
  "buf|github.com/bufbuild/buf/cmd/buf|v1.75.0"
  "staticcheck|honnef.co/go/tools/cmd/staticcheck|v0.8.2"
)

tool_dir() { echo "$CACHE/$1-$2"; }

install_one() {
  local name=$1 pkg=$2 ver=$3 dir
  dir=$(tool_dir "$name" "$ver")
  if [[ -x "$dir/$name" ]]; then return 0; fi
  echo "tools: building $name $ver ..." >&2
  mkdir -p "$dir"
  # GOFLAGS cleared so a -mod setting of the caller cannot leak in.
  GOFLAGS= GOBIN="$dir" go install "$pkg@$ver"
}

lookup() {
  local want=$1 entry name pkg ver
  for entry in "${TOOLS[@]}"; do
    IFS='|' read -r name pkg ver <<<"$entry"
    if [[ $name == "$want" ]]; then echo "$(tool_dir "$name" "$ver")/$name"; return 0; fi
  done
  echo "tools: unknown tool $want" >&2
  return 1
}

case "${1:-install}" in
  install)
    for entry in "${TOOLS[@]}"; do
      IFS='|' read -r name pkg ver <<<"$entry"
      install_one "$name" "$pkg" "$ver"
    done
    ;;
  path)
    lookup "$2"
    ;;
  bindir)
    # A PATH fragment with every tool's directory (protoc plugins must be on PATH for buf).
    p=""
    for entry in "${TOOLS[@]}"; do
      IFS='|' read -r name pkg ver <<<"$entry"
      p="$p:$(tool_dir "$name" "$ver")"
    done
    echo "${p#:}"
    ;;
  *)
    echo "usage: scripts/tools.sh [install | path NAME | bindir]" >&2
    exit 2
    ;;
esac
