#!/usr/bin/env bash
# The other methods and spellings of endpoints the clients and the other
# scripts call one way (Elasticsearch's reference lists each: POST for
# PUT, _aliases for _alias, GET for POST), and the query DSL refusing what
# Sluice lacks at every depth, with Elasticsearch's error shape.
. "$(dirname "$0")/lib.sh"

req PUT /variants -d '{"mappings": {"properties": {"title": {"type": "text"}, "n": {"type": "long"}, "tag": {"type": "keyword"}}}}' >/dev/null
expect '"acknowledged":true' "$(req POST /variants/_mapping -d '{"properties": {"extra": {"type": "keyword"}}}')"
expect '"extra":\{"type":"keyword"\}' "$(req GET /variants/_mapping)"

expect '"result":"created"' "$(req POST /variants/_doc/1 -d '{"title": "one", "n": 1}')"
expect '"result":"created"' "$(req POST /variants/_create/2 -d '{"title": "two", "n": 2}')"
[[ $(status POST /variants/_create/2 -d '{"title": "again"}') == 409 ]]
expect '"_shards":\{[^}]*"failed":0' "$(req GET /variants/_refresh)"
expect '"_shards":\{' "$(req GET /_refresh)"
expect '"count":0' "$(req POST /_count -d '{"query": {"term": {"tag": "none"}}}')"
expect '"count":1' "$(req POST /variants/_count -d '{"query": {"term": {"n": 2}}}')"

expect '"acknowledged":true' "$(req POST /variants/_alias/v1)"
expect '"acknowledged":true' "$(req PUT /variants/_aliases/v2)"
expect '"acknowledged":true' "$(req POST /variants/_aliases/v3 -d '{"is_write_index": true}')"
expect '"v3":\{"is_write_index":true\}' "$(req GET /variants/_alias)"
expect '"acknowledged":true' "$(req DELETE /variants/_aliases/v2)"
[[ $(status HEAD /_alias/v2) == 404 ]]

# A scroll read with GET and the scroll id in the URL.
out=$(req POST '/variants/_search?scroll=1m&size=1')
sid=$(sed -E 's/.*"_scroll_id":"([^"]+)".*/\1/' <<<"$out")
out=$(curl -sS "$ES/_search/scroll?scroll=1m&scroll_id=$sid")
expect '"hits":\[\{"_index":"variants"' "$out"
sid=$(sed -E 's/.*"_scroll_id":"([^"]+)".*/\1/' <<<"$out")
expect '"num_freed":1' "$(req DELETE "/_search/scroll?scroll_id=$sid")"

# Unknown parts of a query are refused where they are, never ignored.
refused() { # BODY REASON: a 400 parsing_exception naming the part
  local out
  out=$(req GET /variants/_search -d "$1")
  expect '^\{"error":\{"root_cause":\[\{"type":"parsing_exception","reason":"[^"]*'"$2" "$out"
  expect '"status":400\}$' "$out"
}
refused '{"query": {"match": {"title": {"query": "one", "fuzziness": "AUTO"}}}}' '\[query.match.title.fuzziness\]'
refused '{"query": {"bool": {"must": [{"match_all": {}}], "boost_mode": "sum"}}}' '\[query.bool.boost_mode\]'
refused '{"query": {"range": {"n": {"gte": 1, "format": "yyyy"}}}}' '\[query.range.n.format\]'
refused '{"query": {"term": {"tag": {"value": "a", "case_insensitive": true}}}}' '\[query.term.tag.case_insensitive\]'
refused '{"query": {"bool": {"filter": {"exists": {"field": "n"}}}}}' 'unknown query \[exists\]'
refused '{"query": {"terms": {"tag": {"index": "variants", "id": "1", "path": "tag"}}}}' 'terms lookup'
refused '{"sort": [{"n": {"order": "asc", "mode": "min"}}]}' '\[sort\[0\].n.mode\]'
refused '{"highlight": {"fields": {"title": {}}}}' '\[highlight\]'
refused '{"no_such_key": 1}' '\[no_such_key\]'
[[ $(status GET /variants/_count -d '{"size": 1}') == 400 ]]
