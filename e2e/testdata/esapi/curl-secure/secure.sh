# The HTTP API of `sluice dev --secure` with curl, as Elasticsearch's
# security answers it: no credentials 401 with WWW-Authenticate: ApiKey, a
# read-only key 403 security_exception naming the privilege it lacks, the
# admin key everything. $ES_URL, $ES_CA, $ES_ADMIN_KEY and $ES_READ_KEY
# come from e2e/esapi_test.go.
ES=$ES_URL
source "$(dirname "$0")/../curl/lib.sh"
admin=(--cacert "$ES_CA" -H "Authorization: ApiKey $ES_ADMIN_KEY")
reader=(--cacert "$ES_CA" -H "Authorization: ApiKey $ES_READ_KEY")

# No credentials: 401, Elasticsearch's error shape, and the scheme to use.
out=$(curl -sS -i --cacert "$ES_CA" "$ES/_cluster/health")
expect '^HTTP/[0-9.]+ 401' "$out"
expect '[Ww][Ww][Ww]-[Aa]uthenticate: ApiKey' "$out"
expect '"type":"security_exception"' "$out"
expect '"status":401' "$out"
expect 401 "$(status GET /_cat/indices --cacert "$ES_CA")"
expect 401 "$(status GET / --cacert "$ES_CA" -u elastic:changeme)"

# Plaintext HTTP is not served (Go's TLS server answers it 400).
expect '^(000|400)$' "$(curl -s -o /dev/null -w '%{http_code}' "http://${ES#https://}/" || true)"

# The admin key manages and writes.
expect '"acknowledged":true' "$(req PUT /sec-curl "${admin[@]}" -d '{"settings":{"number_of_shards":1}}')"
expect '"result":"created"' "$(req PUT '/sec-curl/_doc/1?refresh=true' "${admin[@]}" -d '{"title":"one"}')"

# The read-only key reads, and is refused writes naming the privilege.
expect '"count":1' "$(req GET /sec-curl/_count "${reader[@]}")"
out=$(req PUT /sec-curl/_doc/2 "${reader[@]}" -d '{"title":"two"}')
expect '"type":"security_exception"' "$out"
expect '\[write\]' "$out"
expect '"status":403' "$out"
expect 403 "$(status DELETE /sec-curl "${reader[@]}")"
expect '"count":1' "$(req GET /sec-curl/_count "${admin[@]}")"
