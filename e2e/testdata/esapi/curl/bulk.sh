#!/usr/bin/env bash
# The examples of Elasticsearch's Bulk API reference (docs/reference/
# docs/bulk): one request that indexes, deletes, creates and updates, and
# the per-item answer; then the same with a gzipped body.
. "$(dirname "$0")/lib.sh"

req PUT /test -d '{"settings": {"number_of_shards": 2}}' >/dev/null

out=$(curl -sS -X POST "$ES/_bulk?refresh=wait_for" -H 'Content-Type: application/x-ndjson' --data-binary @- <<'NDJSON'
{ "index" : { "_index" : "test", "_id" : "1" } }
{ "field1" : "value1" }
{ "delete" : { "_index" : "test", "_id" : "2" } }
{ "create" : { "_index" : "test", "_id" : "3" } }
{ "field1" : "value3" }
{ "update" : {"_id" : "1", "_index" : "test"} }
{ "doc" : {"field2" : "value2"} }
NDJSON
)
expect '"errors":false' "$out"
expect '^\{"took":[0-9]+,' "$out"
expect '\{"index":\{"_index":"test","_id":"1","result":"created",[^}]*\},"_seq_no":[0-9]+,"_primary_term":1,"status":201\}\}' "$out"
expect '\{"delete":\{"_index":"test","_id":"2","result":"not_found",[^}]*\},"_seq_no":[0-9]+,"_primary_term":1,"status":404\}\}' "$out"
expect '\{"create":\{"_index":"test","_id":"3","result":"created",' "$out"
# The update merges its partial document into the one indexed above.
expect '\{"update":\{"_index":"test","_id":"1","result":"updated",[^}]*\},"_seq_no":[0-9]+,"_primary_term":1,"status":200\}\}' "$out"
expect '"_source":\{"field1":"value1","field2":"value2"\}' "$(req GET /test/_doc/1)"

# A create of an id that exists is a conflict, 409, for that item only.
out=$(printf '%s\n' '{"create":{"_id":"3"}}' '{"field1":"again"}' '{"index":{"_id":"4"}}' '{"field1":"value4"}' |
  curl -sS -X POST "$ES/test/_bulk" -H 'Content-Type: application/x-ndjson' --data-binary @-)
expect '"status":409,"error":\{[^}]*"type":"version_conflict_engine_exception"' "$out"
expect '"_id":"4","result":"created"' "$out"

# Clients gzip large bodies (Content-Encoding: gzip) and accept gzipped
# answers.
body=$(for i in $(seq 1 200); do printf '{"index":{"_id":"g%d"}}\n{"field1":"gzip %d"}\n' "$i" "$i"; done)
out=$(gzip -c <<<"$body" | curl -sS --compressed -X POST "$ES/test/_bulk?refresh=true" \
  -H 'Content-Type: application/x-ndjson' -H 'Content-Encoding: gzip' --data-binary @-)
expect '"errors":false' "$out"
expect_not '"status":4' "$out"
expect '"count":203' "$(req GET /test/_count)"

# A line that is not an action fails the whole request.
out=$(printf '%s\n' '{"index":{"_id":"x"}}' '{"a":1}' '{"oops":{}}' | curl -sS -X POST "$ES/test/_bulk" -H 'Content-Type: application/x-ndjson' --data-binary @-)
expect '"status":400' "$out"
expect 'Malformed action/metadata line \[3\]' "$out"
