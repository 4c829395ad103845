#!/usr/bin/env bash
# The examples of Elasticsearch's "Search your data" and "Paginate search
# results" guides: a match query, from/size, sort, search_after over a
# point-in-time, and a scroll.
. "$(dirname "$0")/lib.sh"

req PUT /my-index-000001 -d '{
  "mappings": {"properties": {"user.id": {"type": "keyword"}, "message": {"type": "text"}, "@timestamp": {"type": "date"}, "http.response.bytes": {"type": "long"}}}
}' >/dev/null
req POST '/my-index-000001/_doc?refresh=true' -d '{"@timestamp": "2099-11-15T13:12:00", "message": "GET /search HTTP/1.1 200 1070000", "user": {"id": "kimchy"}, "http": {"response": {"bytes": 1070000}}}' >/dev/null
req PUT '/my-index-000001/_doc/2?refresh=true' -d '{"@timestamp": "2099-11-15T14:12:12", "message": "GET /search HTTP/1.1 200 500", "user": {"id": "elkbee"}, "http": {"response": {"bytes": 500}}}' >/dev/null

out=$(req GET /my-index-000001/_search -d '{"query": {"match": {"user.id": "kimchy"}}}')
expect '"hits":\{"total":\{"value":1,"relation":"eq"\}' "$out"
expect '"_source":\{"@timestamp": "2099-11-15T13:12:00", "message"' "$out"   # the document as it was sent

out=$(req GET /my-index-000001/_search -d '{"from": 1, "size": 1, "query": {"match": {"message": "search"}}, "sort": [{"http.response.bytes": "desc"}]}')
expect '"_id":"2","_score":null,.*"sort":\[500\]' "$out"

# Paginate: a point-in-time, then search_after the last hit's sort values.
pit=$(req POST '/my-index-000001/_pit?keep_alive=1m' | sed -E 's/.*"id":"([^"]+)".*/\1/')
out=$(req GET /_search -d '{"size": 1, "query": {"match": {"message": "search"}}, "pit": {"id": "'"$pit"'", "keep_alive": "1m"}, "sort": [{"@timestamp": {"order": "asc"}}]}')
expect '"pit_id":' "$out"
expect '"sort":\[[0-9]+\]' "$out"
after=$(sed -E 's/.*"sort":\[([0-9]+)\].*/\1/' <<<"$out")
out=$(req GET /_search -d '{"size": 1, "pit": {"id": "'"$pit"'", "keep_alive": "1m"}, "sort": [{"@timestamp": {"order": "asc"}}], "search_after": ['"$after"']}')
expect '"_id":"2"' "$out"
expect '"succeeded":true' "$(req DELETE /_pit -d '{"id": "'"$pit"'"}')"

# Scroll: the first page opens it, POST /_search/scroll reads on.
out=$(req POST '/my-index-000001/_search?scroll=1m' -d '{"size": 1, "query": {"match": {"message": "search"}}}')
expect '"total":\{"value":2,' "$out"
sid=$(sed -E 's/.*"_scroll_id":"([^"]+)".*/\1/' <<<"$out")
out=$(req POST /_search/scroll -d '{"scroll": "1m", "scroll_id": "'"$sid"'"}')
expect '"hits":\[\{"_index":"my-index-000001"' "$out"
sid=$(sed -E 's/.*"_scroll_id":"([^"]+)".*/\1/' <<<"$out")
expect '"hits":\[\]' "$(req POST /_search/scroll -d '{"scroll": "1m", "scroll_id": "'"$sid"'"}')"

# What Sluice lacks is refused with Elasticsearch's error shape.
out=$(req GET /my-index-000001/_search -d '{"aggs": {"my-agg-name": {"terms": {"field": "user.id"}}}}')
expect '^\{"error":\{.*"root_cause":\[\{.*"type":"parsing_exception".*\},"status":400\}$' "$out"
