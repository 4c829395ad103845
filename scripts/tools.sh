#!/usr/bin/env bash
# Builds the developer tools Sluice's checks need, pinned by version, from the
# Go module proxy, into a cache outside the repo:
#   ${SLUICE_TOOLS_CACHE:-~/.cache/sluice-tools}/<name>-<version>/<name>
# A warm run costs a few stat calls. Prints nothing but progress on stderr;
# `scripts/tools.sh path NAME` prints the binary path of one tool.
#
# `scripts/tools.sh python-venv` makes the Python environment of the
# Python checks (the Elasticsearch-compatibility tests, the Python client's
# stubs and tests; every package pinned with hashes in
# scripts/python-requirements.txt) from PyPI, in
#   ${SLUICE_TOOLS_CACHE:-~/.cache/sluice-tools}/pyenv-<hash of the requirements>/
# and prints its path. It needs python3 (>= 3.11) with its venv module, and
# fails saying so when they are missing.
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

# python_venv: the tests' Python environment, made once per requirements.
python_venv() {
  local req dir py
  req="$(cd "$(dirname "$0")/.." && pwd)/scripts/python-requirements.txt"
  dir="$CACHE/pyenv-$(sha256sum "$req" | cut -c1-16)"
  if [[ -f "$dir/.complete" ]]; then echo "$dir"; return 0; fi
  py=$(command -v python3 || true)
  if [[ -z $py ]]; then
    echo "tools: python3 is missing; the Python checks (Elasticsearch-compatibility tests, Python client) need Python >= 3.11 with its venv module (Debian: apt-get install python3 python3-venv)" >&2
    return 1
  fi
  if ! "$py" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    echo "tools: $py is $("$py" -V 2>&1); the Python checks need Python >= 3.11" >&2
    return 1
  fi
  echo "tools: making the Python environment $dir ..." >&2
  rm -rf "$dir"
  if ! "$py" -m venv "$dir" >&2; then
    echo "tools: $py -m venv failed; install Python's venv module (Debian: apt-get install python3-venv)" >&2
    rm -rf "$dir"
    return 1
  fi
  if ! "$dir/bin/python" -m pip install --quiet --disable-pip-version-check --require-hashes --no-deps -r "$req" >&2; then
    echo "tools: installing $req from PyPI failed" >&2
    rm -rf "$dir"
    return 1
  fi
  touch "$dir/.complete"
  echo "$dir"
}

case "${1:-install}" in
  python-venv)
    python_venv
    ;;
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
    echo "usage: scripts/tools.sh [install | path NAME | bindir | python-venv]" >&2
    exit 2
    ;;
esac
