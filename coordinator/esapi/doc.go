// Package esapi serves a documented subset of Elasticsearch's HTTP/JSON
// API (docs/elasticsearch-api.md) on the coordinator, so that curl, the
// official Elasticsearch clients and the tools built on them work against
// Sluice. It is a translation, not a second implementation: every
// endpoint calls the public Sluice API (sluicev1.SluiceClient) on the
// coordinator's own service in-process (rpc.Server.Local: no encoding, no
// socket), so HTTP calls pass the same interceptors — logging, metrics,
// the one error table — as gRPC calls, and the JSON languages go through
// esjson, the one parser the CLI and the operator use.
//
// # Security
//
// On a secured coordinator the API holds no privilege of its own: each
// request's credentials (its ApiKey header, or the client certificate
// its TLS handshake verified) go with its in-process calls, which the
// coordinator's guard authenticates and authorizes as gRPC calls; every
// request is authenticated before it is routed (auth.go).
//
// # What is kept as it is
//
// Documents pass through as the bytes they arrived as: a bulk line's
// source is a slice of the request body handed to Bulk, and a hit's
// _source is written into the response as stored. Only a search that asks
// for _source includes or excludes has its sources filtered (source.go, a
// scanner over the raw JSON, not a decode and re-encode).
//
// # Errors
//
// Every error is Elasticsearch's error JSON — {"error": {"root_cause",
// "type", "reason", ...}, "status"} — with its HTTP status. The gRPC codes
// the coordinator's error table gave the core's typed errors are mapped
// to statuses and exception types by one table (statusTable, errors.go);
// per-item bulk failures and per-shard failures carry their codes in
// ErrorDetail and go through the same table. Overload (RESOURCE_EXHAUSTED)
// is 429 es_rejected_execution_exception with a Retry-After from the
// status's RetryInfo.
//
// Nothing is silently ignored: an unknown URL parameter is refused (as
// Elasticsearch refuses it), and so is every body key Sluice does not
// implement (aggregations, highlighting, scripts, ...), each with a
// reason. Parameters that change nothing in Sluice (preference,
// request_cache, ...) are accepted; the compatibility page lists them and
// why.
//
// # Scrolls
//
// A scroll is a point-in-time opened with the scroll's keep-alive, read
// page by page through Scroll; the scroll id is the next page's
// ScrollRequest, so any coordinator can serve any page (scroll.go).
//
// # Memory
//
// A bulk body is read whole (at most Config.MaxRequestBytes, 413 beyond)
// after Config.AdmitBulk has reserved room for it in the coordinator's
// bulk budget, so an overloaded coordinator refuses bulks before reading
// them.
package esapi
