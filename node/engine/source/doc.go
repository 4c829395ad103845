// Package source edits a document's _source, the JSON object it was indexed
// from, without a schema: Merge applies a partial document the way
// Elasticsearch's update API does (XContentHelper.update: objects present
// in both are merged key by key, recursively; any other value of the
// partial document replaces the old one), and Set writes one field by its
// dotted path (an in-place doc-values update's current value, carried into
// a re-indexed copy). Keys keep their order, new keys go last, and values
// the edit does not touch keep their bytes, so an edit never reformats a
// document.
package source
