// Package esjson converts the Elasticsearch-shaped JSON that Index and
// Reindex resources carry (a mapping object, a query DSL object) into the
// public protobuf messages of the Sluice API.
//
// Mappings go through the engine's own parser (node/engine/mapping.Parse),
// so a resource is checked by exactly the rules the cluster applies, and
// nested "properties" flatten to dotted names as they do there.
//
// Queries accept the Elasticsearch forms users paste from their existing
// tooling: the short form {"term": {"status": "published"}} and the long
// form {"term": {"status": {"value": "published", "boost": 2}}}, likewise
// for match, match_phrase, terms, range, bool (a single clause or a list)
// and ids. Unknown keys are errors naming their path, as the API server
// cannot check this schema-less JSON itself.
package esjson
