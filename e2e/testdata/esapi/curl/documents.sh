#!/usr/bin/env bash
# The examples of Elasticsearch's document APIs: index, create, get,
# exists, _source, delete; refresh and cluster health; GET /.
. "$(dirname "$0")/lib.sh"

expect '"version":\{[^}]*"number":"8\.' "$(curl -sS "$ES/")"
[[ $(curl -sS -o /dev/null -D - "$ES/" | grep -ci '^X-Elastic-Product: Elasticsearch') == 1 ]]

req PUT /my-index-000002 >/dev/null
expect '"result":"created"' "$(req PUT /my-index-000002/_doc/1 -d '{"@timestamp": "2099-11-15T13:12:00", "message": "GET /search HTTP/1.1 200 1070000", "user": {"id": "kimchy"}}')"
[[ $(status PUT /my-index-000002/_create/1 -d '{"a": 1}') == 409 ]]
[[ $(status PUT '/my-index-000002/_doc/1?op_type=create' -d '{"a": 1}') == 409 ]]
expect '"_id":"1","_seq_no":[0-9]+,"_primary_term":1,"found":true,"_source":\{"@timestamp"' "$(req GET /my-index-000002/_doc/1)"
expect '^\{"@timestamp": "2099-11-15T13:12:00"' "$(req GET /my-index-000002/_source/1)"
[[ $(status HEAD /my-index-000002/_doc/1) == 200 ]]
[[ $(status HEAD /my-index-000002/_doc/0) == 404 ]]
[[ $(status HEAD /my-index-000002/_source/1) == 200 ]]
expect '"my-index-000002":\{"mappings":\{"properties":\{' "$(req GET /_mapping)"
expect '"my-index-000002":\{"settings":\{"index":\{[^}]*"number_of_shards":"1"' "$(req GET /_settings)"
expect '"count":[1-9][0-9]*\}' "$(req GET /_count)"   # every index, the other scripts' too
# The update API's partial document and upsert examples (no scripts).
expect '"result":"updated"' "$(req POST /my-index-000002/_update/1 -d '{"doc": {"user": {"name": "kimchy"}}}')"
expect '"user": *\{"id": *"kimchy", *"name": *"kimchy"\}' "$(req GET /my-index-000002/_source/1)"
expect '"result":"noop"' "$(req POST /my-index-000002/_update/1 -d '{"doc": {"user": {"name": "kimchy"}}}')"
expect '"result":"created"' "$(req POST /my-index-000002/_update/2 -d '{"doc": {"name": "new_name"}, "doc_as_upsert": true}')"
expect '"type":"document_missing_exception"' "$(req POST /my-index-000002/_update/3 -d '{"doc": {"name": "new_name"}}')"
expect '"result":"updated"' "$(printf '%s\n' '{"update": {"_id": "2", "_index": "my-index-000002"}}' '{"doc": {"field2": "value2"}}' | req POST /_bulk --data-binary @- -H 'Content-Type: application/x-ndjson')"
# Optimistic concurrency control: a write conditional on the version read.
out=$(req GET /my-index-000002/_doc/1)
seq=$(grep -oE '"_seq_no":[0-9]+' <<<"$out" | cut -d: -f2)
expect '"result":"updated","_shards":\{[^}]*\},"_seq_no":[0-9]+,"_primary_term":1' "$(req PUT "/my-index-000002/_doc/1?if_seq_no=$seq&if_primary_term=1" -d '{"product": "r2d2", "details": "A resourceful astromech droid"}')"
out=$(req PUT "/my-index-000002/_doc/1?if_seq_no=$seq&if_primary_term=1" -d '{"product": "r2d2"}')
expect '"type":"version_conflict_engine_exception".*"status":409' "$out"
expect "required seqNo \\[$seq\\]" "$out"
expect '"result":"deleted"' "$(req DELETE /my-index-000002/_doc/1)"
[[ $(status GET /my-index-000002/_doc/1) == 404 ]]

expect '"_shards":\{[^}]*"failed":0' "$(req POST /my-index-000002/_refresh)"
expect '"_shards":\{' "$(req POST /_refresh)"
out=$(req GET '/_cluster/health?wait_for_status=green&timeout=50s')
expect '"status":"green"' "$out"
expect '"timed_out":false' "$out"
expect '"status":"green"' "$(req GET /_cluster/health/my-index-000002)"
[[ $(status GET /_cluster/health/no-such-index) == 404 ]]
[[ $(status DELETE /my-index-000002) == 200 ]]
[[ $(status HEAD /my-index-000002) == 404 ]]
