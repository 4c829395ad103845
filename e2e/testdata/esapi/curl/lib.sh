# Helpers of the curl scripts, sourced by each: $ES is the HTTP API's URL
# (e2e/esapi_test.go sets it). The scripts follow the examples of
# Elasticsearch's reference, written in their style (console requests as
# curl commands), and check what each answer must say.
set -euo pipefail
: "${ES:?set ES to the URL of the HTTP API}"

# req METHOD PATH [curl args...]: a request with a JSON body (from -d).
req() {
  local method=$1 path=$2
  shift 2
  curl -sS -X "$method" "$ES$path" -H 'Content-Type: application/json' "$@"
}

# status METHOD PATH [curl args...]: the HTTP status alone. HEAD goes as
# curl -I: a HEAD answer carries the length of the body GET would send,
# which curl -X HEAD would wait for.
status() {
  local method=$1 path=$2
  shift 2
  if [[ $method == HEAD ]]; then
    curl -sS -o /dev/null -w '%{http_code}' -I "$ES$path" "$@"
    return
  fi
  curl -sS -o /dev/null -w '%{http_code}' -X "$method" "$ES$path" -H 'Content-Type: application/json' "$@"
}

# expect PATTERN TEXT: TEXT matches the extended regular expression.
expect() {
  if ! grep -qE -- "$1" <<<"$2"; then
    printf '%s: expected /%s/ in:\n%s\n' "${BASH_SOURCE[1]##*/}:${BASH_LINENO[0]}" "$1" "$2" >&2
    exit 1
  fi
}

# expect_not PATTERN TEXT: TEXT does not match.
expect_not() {
  if grep -qE -- "$1" <<<"$2"; then
    printf '%s: did not expect /%s/ in:\n%s\n' "${BASH_SOURCE[1]##*/}:${BASH_LINENO[0]}" "$1" "$2" >&2
    exit 1
  fi
}
