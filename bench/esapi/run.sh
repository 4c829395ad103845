#!/usr/bin/env bash
# The HTTP API's bulk benchmark of docs/benchmarks.md: one sluice dev, the
# same JSON lines loaded into fresh 3-shard indices by `sluice bulk` (gRPC),
# the official Python client (bulk_load.py) and curl (raw NDJSON, 1,000
# documents a request, 4 at a time), alternated for ROUNDS rounds.
#
#   bench/esapi/run.sh FILE [ROUNDS]   (needs scripts/tools.sh python-venv)
set -euo pipefail
cd "$(dirname "$0")/../.."
file=$(realpath "$1")
rounds=${2:-2}
venv=$(scripts/tools.sh python-venv)
work=$(mktemp -d)
trap 'kill $dev 2>/dev/null; wait $dev 2>/dev/null; rm -rf "$work"' EXIT
go build -o "$work/sluice" ./cmd/sluice
"$work/sluice" dev --data-dir "$work/data" --listen 127.0.0.1:19300 --http-listen 127.0.0.1:19301 >"$work/dev.log" 2>&1 &
dev=$!
until curl -sf 127.0.0.1:19301/_cluster/health >/dev/null; do sleep 0.2; done
url=http://127.0.0.1:19301
n=$(wc -l <"$file")

# NDJSON bodies of 1,000 documents for curl, made before the clock starts.
mkdir "$work/nd"
python3 - "$file" "$work/nd" <<'PY'
import re, sys
src, out = sys.argv[1], sys.argv[2]
id_re = re.compile(rb'\{"id":\s*"([^"]*)"')
with open(src, "rb") as f:
    lines = f.readlines()
for c in range(0, len(lines), 1000):
    with open(f"{out}/{c // 1000:06d}.ndjson", "wb") as w:
        for line in lines[c:c + 1000]:
            w.write(b'{"index":{"_id":"' + id_re.match(line).group(1) + b'"}}\n' + line.rstrip(b"\n") + b"\n")
PY

# settle INDEX: checks the load, deletes the index and lets the machine
# quiet down, so one run's merges do not slow the next.
settle() {
  curl -sf -X POST "$url/$1/_refresh" >/dev/null
  got=$(curl -sf "$url/$1/_count" | sed -E 's/.*"count":([0-9]+).*/\1/')
  [[ $got == "$n" ]] || { echo "$1 holds $got documents, not $n" >&2; exit 1; }
  curl -sf -X DELETE "$url/$1" >/dev/null
  sleep 3
}

mapping='{"properties": {"id": {"type": "keyword"}, "title": {"type": "text"}, "body": {"type": "text"}}}'
for r in $(seq "$rounds"); do
  idx=grpc-$r
  "$work/sluice" index create "$idx" --addr 127.0.0.1:19300 --shards 3 --routing-shards 6 --mapping "$mapping" --wait >/dev/null
  start=$(date +%s.%N)
  "$work/sluice" bulk "$file" --addr 127.0.0.1:19300 --index "$idx" >/dev/null
  end=$(date +%s.%N)
  echo "round $r: sluice-bulk-grpc $n $(echo "$end - $start" | bc) $(echo "$n / ($end - $start)" | bc)"
  settle "$idx"
  for mode in ${MODES:-parallel parallel-fastswitch bulk raw-parallel}; do
    echo "round $r: python-$("$venv/bin/python" bench/esapi/bulk_load.py "$url" "$file" "py-$mode-$r" "$mode")"
    sleep 3
  done
  curl -sf -X PUT "$url/curl-$r" -H 'Content-Type: application/json' \
    -d '{"settings": {"number_of_shards": 3, "number_of_routing_shards": 6}, "mappings": '"$mapping"'}' >/dev/null
  start=$(date +%s.%N)
  ls "$work"/nd/*.ndjson | xargs -P 4 -I{} curl -sf -o /dev/null -X POST "$url/curl-$r/_bulk" \
    -H 'Content-Type: application/x-ndjson' --data-binary @{}
  end=$(date +%s.%N)
  echo "round $r: curl-ndjson $n $(echo "$end - $start" | bc) $(echo "$n / ($end - $start)" | bc)"
  settle "curl-$r"
done
