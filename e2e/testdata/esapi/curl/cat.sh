#!/usr/bin/env bash
# The examples of Elasticsearch's cat APIs: health and indices, as text
# with and without headers, and as JSON.
. "$(dirname "$0")/lib.sh"

req PUT /cat-index-1 -d '{"settings": {"number_of_shards": 2}}' >/dev/null
req PUT '/cat-index-1/_doc/1?refresh=true' -d '{"a": 1}' >/dev/null

out=$(curl -sS "$ES/_cat/health?v")
expect '^epoch +timestamp +cluster +status +node.total +node.data +shards +pri +relo +init +unassign' "$out"
expect '^[0-9]+ +[0-9:]+ +[^ ]+ +green +3 +3 ' "$(tail -n 1 <<<"$out")"
expect '"status":"green"' "$(curl -sS "$ES/_cat/health?format=json")"

out=$(curl -sS "$ES/_cat/indices/cat-*?v")
expect '^health +status +index +uuid +pri +rep +docs.count +store.size +pri.store.size$' "$out"
expect '^green +open +cat-index-1 +[0-9a-f-]{36} +2 +0 +1 +[0-9.]+[kmg]?b ' "$(sed -n 2p <<<"$out")"
expect '^cat-index-1 1$' "$(curl -sS "$ES/_cat/indices/cat-index-1?h=index,docs.count")"
expect '^\[\{"docs.count":"1","index":"cat-index-1"\}\]$' "$(curl -sS "$ES/_cat/indices/cat-index-1?format=json&h=index,docs.count")"
expect '^[0-9]+$' "$(curl -sS "$ES/_cat/indices/cat-index-1?h=store.size&bytes=b")"
[[ $(status GET '/_cat/indices?format=yaml') == 400 ]]
