#!/usr/bin/env bash
# The examples of Elasticsearch's Reindex and Task management references.
. "$(dirname "$0")/lib.sh"

req PUT /my-index-000003 -d '{"settings": {"number_of_shards": 2}}' >/dev/null
for i in 1 2 3 4 5; do req PUT "/my-index-000003/_doc/$i?refresh=wait_for" -d '{"n": '$i'}' >/dev/null; done

out=$(req POST /_reindex -d '{"source": {"index": "my-index-000003"}, "dest": {"index": "my-new-index-000003"}}')
expect '"created":5' "$out"
expect '"failures":\[\]' "$out"

out=$(req POST '/_reindex?wait_for_completion=false' -d '{"source": {"index": "my-index-000003", "query": {"range": {"n": {"gte": 3}}}}, "dest": {"index": "my-new-index-000004"}}')
expect '^\{"task":"[^"]+"\}$' "$out"
task=$(sed -E 's/.*"task":"([^"]+)".*/\1/' <<<"$out")
out=$(req GET "/_tasks/$task?wait_for_completion=true&timeout=60s")
expect '"completed":true' "$out"
expect '"created":3' "$out"
[[ $(status GET /_tasks/no-such-task) == 404 ]]
# Cancelling a task that has ended leaves it as it ended.
out=$(req POST "/_tasks/$task/_cancel")
expect '"tasks":\{"'"$task"'":\{' "$out"
expect '"cancelled":false' "$out"
