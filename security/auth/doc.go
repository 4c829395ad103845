// Package auth authenticates and authorizes the callers of a secure
// cluster's public API, as Elasticsearch's API keys and roles do.
//
// Authentication: an API key in the "authorization" metadata ("ApiKey
// <base64 of id:secret>", or "ApiKey id:secret"), else a client
// certificate verified against the cluster CA, whose Common Name names
// the caller and whose Organization values are its role names (as
// Kubernetes reads client certificates). Anything else is UNAUTHENTICATED.
// Keys live in etcd (Store) with only the SHA-256 of their 256-bit random
// secret (token.go says why a fast hash is right here); lookups are cached
// for CacheTTL, which bounds how long a revoked or expired key, or a changed
// role, is still honoured on another coordinator (the one that revokes
// forgets at once).
//
// Authorization: a role grants read, write, manage or monitor on index
// name patterns ("logs-*", "*"), or admin (everything, and the Auth
// service). The rule table (rules.go) gives every RPC a coordinator serves
// — Sluice, Auth, health, reflection — what it needs, computed from the
// request: aliases resolve to their indices first (writes to the write
// index); a reindex needs read on the source and write on the destination
// (and manage on it when it creates or maps it); cluster-wide calls (tasks,
// cluster state) need the privilege on "*". A method missing from the table
// is refused, and a test fails if any service method is missing. A denial
// is PERMISSION_DENIED naming the privilege and index (and a
// google.rpc.ErrorInfo with both). List answers are filtered to what the
// caller may monitor. Point-in-time ids are bound to their creator: the
// guard hands out "<tag>.<id>", the tag an HMAC of caller and id under a
// key kept in etcd, and refuses another caller's. So are scroll cursors
// (which carry the point-in-time a scroll opened for itself): the tag's
// bytes come first.
//
// Audit: authentication failures, denials, key and role changes and index
// deletions are logged as structured lines with msg "audit", an event
// name and the caller's principal.
//
// Guard.Authenticate checks a call's credentials alone, before any of its
// messages is read: the coordinator's gRPC tap refuses an unauthenticated
// bulk with it before the bulk takes room in the coordinator's byte budget.
//
// The data nodes' internal services are not guarded here: TLS with the
// cluster's client certificates guards them (security/tlsconf).
package auth
