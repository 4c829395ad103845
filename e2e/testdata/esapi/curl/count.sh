#!/usr/bin/env bash
# The examples of Elasticsearch's Count API reference.
. "$(dirname "$0")/lib.sh"

req PUT /count-index -d '{"mappings": {"properties": {"user.id": {"type": "keyword"}}}}' >/dev/null
for u in kimchy kimchy elkbee; do req POST '/count-index/_doc?refresh=wait_for' -d '{"user": {"id": "'$u'"}}' >/dev/null; done

expect '^\{"_shards":\{[^}]*"successful":1,[^}]*\},"count":2\}$' "$(req GET /count-index/_count -d '{"query": {"term": {"user.id": "kimchy"}}}')"
expect '"count":3' "$(req GET /count-index/_count)"
expect '"count":3' "$(req GET '/count-*/_count')"
# The Lucene query string (q=) is not Sluice's: refused, never ignored.
[[ $(status GET '/count-index/_count?q=user:kimchy') == 400 ]]
