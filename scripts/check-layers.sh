#!/usr/bin/env bash
# Checks what may import what (the layers of docs/architecture in README's
# package map), so the rules are checked, not remembered:
#
#   node/engine/...  the shard engine, a library: imports nothing of the
#                    cluster, no gRPC, no protobuf, no Sluice package but
#                    its own.
#   esjson, client,  public-API helpers: no Sluice package but the public
#   segmentcopy      protos (and client may use esjson); segmentcopy is the
#                    one eligibility rule shared by coordinator and node.
#   querydsl         the query model: the public protos and the engine's
#                    analysis/mapping/search libraries only.
#   cluster/...      shared cluster plumbing: no process package (node,
#                    coordinator, operator) and no node internals; the engine
#                    libraries are allowed (analyzer names, field types).
#   coordinator/...  no node internals (node, node/shard, node/server,
#                    node/reindex, node/nodetest); it reaches nodes only
#                    through the internal protocol.
#   operator/...     talks to the cluster through the public API only.
#   cmd/...          imports the operator through its entry point
#                    (operator/manager) only, never its controllers.
#
# Rules over non-test code and transitive imports (`go list -deps`), except
# the cmd rule, which is about direct imports. Exits 1 naming each breach.
set -euo pipefail
cd "$(dirname "$0")/.."

mod=$(go list -m)
fail=0

# deps PKGS...: every package the given ones depend on, transitively.
# Test-support packages (names ending in "test", like nodetest or
# datapathtest) start real processes for tests and are left out as roots.
deps() { go list -deps $(go list "$@" | grep -vE 'test$'); }

# forbid NAME PATTERN PKGS...: no dependency of PKGS may match PATTERN (ERE).
forbid() {
  local name=$1 pattern=$2
  shift 2
  local bad
  bad=$(deps "$@" | grep -E "$pattern" || true)
  if [[ -n $bad ]]; then
    echo "layer rule broken: $name" >&2
    # Say who imports each forbidden package, directly.
    while IFS= read -r b; do
      go list -f '{{.ImportPath}} {{join .Imports " "}}' $(deps "$@" | grep "^$mod/") |
        awk -v b="$b" '{for (i = 2; i <= NF; i++) if ($i == b) print "  " $1 " imports " b}'
    done <<<"$bad" >&2
    fail=1
  fi
}

node_internals="^$mod/node(/(shard|server|reindex|nodetest)(/|$)|$)"

forbid "the engine imports no gRPC, protobuf or Sluice package outside node/engine" \
  "grpc|protobuf|^$mod/(cluster|coordinator|operator|proto|querydsl|esjson|client|segmentcopy|devcluster|cmd)(/|$)|$node_internals" \
  ./node/engine/...
forbid "esjson, client and segmentcopy use no Sluice package but the public protos" \
  "^$mod/(node|cluster|coordinator|operator|querydsl|devcluster|cmd)(/|$)|^$mod/proto/sluice/(node|state)/" \
  ./esjson ./client/... ./segmentcopy
forbid "querydsl uses the public protos and engine libraries only" \
  "^$mod/(cluster|coordinator|operator|devcluster|cmd|client)(/|$)|$node_internals|^$mod/proto/sluice/(node|state)/" \
  ./querydsl
forbid "cluster imports no process package and no node internals" \
  "^$mod/(coordinator|operator|devcluster|cmd)(/|$)|$node_internals" \
  ./cluster/...
forbid "coordinator imports no node internals" \
  "$node_internals|^$mod/(operator|devcluster|cmd)(/|$)" \
  ./coordinator/...
forbid "the operator talks to the cluster through the public API only" \
  "^$mod/(node|cluster|coordinator|querydsl|devcluster|cmd)(/|$)|^$mod/proto/sluice/(node|state)/" \
  ./operator/...

# cmd: direct imports of operator packages other than its entry point.
bad=$(go list -f '{{range .Imports}}{{.}}{{"\n"}}{{end}}' ./cmd/... |
  grep -E "^$mod/operator/" | grep -vE "^$mod/operator/manager$" || true)
if [[ -n $bad ]]; then
  echo "layer rule broken: cmd imports operator internals:" >&2
  sed 's/^/  /' <<<"$bad" >&2
  fail=1
fi

if [[ $fail -ne 0 ]]; then exit 1; fi
echo "layer rules hold"
