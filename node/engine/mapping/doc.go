// Package mapping holds an index's mapping — its fields and their types, as
// in Elasticsearch — and the Parser that turns a JSON _source into an
// analyzed document.Document according to it.
//
// # Mapping
//
// A Mapping maps dotted field paths ("user.name") to a Field: a type (text,
// keyword, long, double, date, boolean), the analyzer of a text field
// (default "standard"), and index / doc_values / store flags with
// Elasticsearch's defaults. New validates it: analyzer names, no doc values
// on text, no path mapped both as a value and as an object. The JSON form
// ({"dynamic": ..., "properties": {...}}) has one reader, package esjson,
// which yields the public protobuf message that querydsl turns into a
// Mapping. A Mapping is immutable; Merge returns a new one with a mapping
// update's fields added and fails with ErrConflict, naming the field, when
// the update changes an existing field or puts a value where an object is
// (or the reverse).
//
// # Parser
//
// A Parser (one per indexing goroutine) scans the JSON bytes by hand — no
// reflection, no intermediate tree, no allocation once its buffers are warm
// — and fills a reused document.Document: text through the field's
// analyzer, with a position gap of 100 between the values of an array;
// keywords as one token each plus sorted doc values; numbers, dates (epoch
// millis) and booleans (0/1) as 8-byte sortable terms plus numeric doc
// values. Values are coerced as Elasticsearch does (numeric strings into
// numbers, fractions truncated for long, numbers and booleans into
// keyword/text); null and empty arrays add nothing. A value that does not
// fit, or invalid JSON — a string (key or value) that is not valid UTF-8
// included, as Elasticsearch's parser refuses it — is an error wrapping
// ErrDocument in a *FieldError naming the field.
//
// Unmapped fields follow the mapping's dynamic setting: strict rejects the
// document (ErrStrict), false ignores them (they stay in _source), true
// infers a type (string: text, integer: long, other number: double,
// boolean: boolean; no date detection and no keyword sub-field) and Parse
// returns the new fields as a mapping update. The caller merges it into
// the index mapping before indexing the document — the merge is where two
// documents racing to introduce one field with different types meet, and
// the loser is rejected — then hands the parser the merged mapping.
//
// # Limits
//
// A Mapping carries Limits (WithLimits, from the index settings): the new
// fields a document brings dynamically are held to Elasticsearch's
// index.mapping.total_fields.limit (1,000 fields and the objects their
// paths imply), depth.limit (20 levels) and field_name_length.limit (256
// bytes of the whole path here; unbounded in Elasticsearch). The first
// field past a limit refuses the document (ErrLimit, naming it), so a
// document with 50,000 new fields costs no more than one with 1,001, and
// no update is returned. Objects and arrays nest at most maxNesting deep
// anywhere in a document. Fields already mapped are not checked again: the
// cluster metadata holds every mapping update to the same limits.
//
// Differences from Elasticsearch: dynamic applies to the whole mapping, not
// per object; duplicate keys in a source are not rejected (their values
// add up).
package mapping
