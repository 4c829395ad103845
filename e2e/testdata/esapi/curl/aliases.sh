#!/usr/bin/env bash
# The examples of Elasticsearch's "Aliases" guide: add, swap atomically,
# write index, and the alias APIs.
. "$(dirname "$0")/lib.sh"

req PUT /logs-nginx.access-prod >/dev/null
req PUT /my-index-2099.05.06-000001 >/dev/null
req PUT /my-index-2099.05.07-000002 >/dev/null

expect '"acknowledged":true' "$(req POST /_aliases -d '{"actions": [{"add": {"index": "logs-nginx.access-prod", "alias": "logs"}}]}')"
expect '"logs-nginx.access-prod":\{"aliases":\{"logs":\{\}\}\}' "$(req GET /_alias/logs)"

# Swap: both actions or neither.
req POST /_aliases -d '{"actions": [
  {"add": {"index": "my-index-2099.05.06-000001", "alias": "my-alias"}}
]}' >/dev/null
req POST /_aliases -d '{"actions": [
  {"remove": {"index": "my-index-2099.05.06-000001", "alias": "my-alias"}},
  {"add": {"index": "my-index-2099.05.07-000002", "alias": "my-alias"}}
]}' >/dev/null
out=$(req GET /_alias/my-alias)
expect '"my-index-2099.05.07-000002"' "$out"
expect_not '000001' "$out"

# A write index: writes through the alias go there.
req POST /_aliases -d '{"actions": [
  {"add": {"index": "my-index-2099.05.06-000001", "alias": "my-alias", "is_write_index": false}},
  {"add": {"index": "my-index-2099.05.07-000002", "alias": "my-alias", "is_write_index": true}}
]}' >/dev/null
expect '"_index":"my-index-2099.05.07-000002"' "$(req POST '/my-alias/_doc?refresh=true' -d '{"a": 1}')"

# The alias APIs by index and name; HEAD for existence.
req PUT /logs-nginx.access-prod/_alias/nginx >/dev/null
expect '"nginx":\{\}' "$(req GET /logs-nginx.access-prod/_alias)"
[[ $(status HEAD /_alias/nginx) == 200 ]]
[[ $(status HEAD /logs-nginx.access-prod/_alias/nginx) == 200 ]]
expect '^\{"logs-nginx.access-prod":\{"aliases":\{"nginx":\{\}\}\}\}$' "$(req GET /logs-nginx.access-prod/_alias/nginx)"
expect '"my-index-2099.05.07-000002":\{"aliases":\{"my-alias":\{"is_write_index":true\}\}\}' "$(req GET /_alias)"
req DELETE /logs-nginx.access-prod/_alias/nginx >/dev/null
[[ $(status HEAD /_alias/nginx) == 404 ]]
# Filtered aliases are not Sluice's: refused.
[[ $(status POST /_aliases -d '{"actions": [{"add": {"index": "logs-nginx.access-prod", "alias": "f", "filter": {"term": {"a": 1}}}}]}') == 400 ]]
