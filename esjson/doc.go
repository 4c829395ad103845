// Package esjson reads and writes the JSON languages of Elasticsearch that
// Sluice speaks, as the public protobuf messages (sluice.v1): the query DSL
// (Query), mappings (Mapping), index settings (IndexSettings), the sort
// of a search (SortField), and search bodies (ParseSearch: query, paging,
// sort, search_after, pit, slice, _source; the parts Sluice lacks, such as
// aggregations, are refused by name). It is the one parser of each: the CLI, the
// operator's resources and an HTTP API use it, and it imports nothing of
// the cluster's internals, so each can.
//
// # Reading
//
// Parse functions accept what Elasticsearch accepts for the features Sluice
// has, and reject the rest — an unknown key, a query type or a mapping
// parameter Sluice lacks — rather than ignore it: a query that silently
// dropped a clause would return wrong results. Every problem is an *Error:
// its Kind (ErrInvalidQuery, ErrInvalidMapping, ErrInvalidSettings,
// ErrInvalidSort) says which language, its Path where in the document
// ("bool.must[1].term.title"), and its Reason is worded as Elasticsearch
// words it ("[bool] unknown field [mus]", "No handler for type [geo_point]
// declared on field [a]"), so users can search for it. Duplicate keys are
// errors, as in Elasticsearch; JSON syntax errors give a line and column.
//
// Queries take the short and long forms: {"term": {"f": "v"}} and
// {"term": {"f": {"value": "v", "boost": 2}}}, likewise match and
// match_phrase; a bool clause is one query or a list. Values keep their
// JSON type — strings, booleans, integral numbers as longs, others as
// doubles — and the cluster converts them to the field's type, so a date
// is "2024-01-01" or epoch milliseconds. Numeric parameters (boost, slop)
// also take numeric strings, as Elasticsearch coerces them.
//
// Mappings flatten objects to dotted names ("user.name"), as Sluice
// mappings are flat; a dotted property name is the same as its nested form.
// The cluster checks what needs its knowledge (analyzer names, reserved
// field names, a name mapped both as a value and as an object).
//
// Settings may be nested ({"index": {"translog": {"durability": "async"}}}),
// flat ("index.translog.durability") or without "index."; time values are
// Elasticsearch's ("30s", "-1").
//
// # Writing
//
// Marshal functions write a message as Elasticsearch JSON, in the short
// forms where they say everything, for display and for passing a query or
// mapping on. Parse reads what Marshal writes back to an equal message
// (the fuzz targets check it); a message that the JSON cannot say — a query
// of no kind, a NaN — is an error.
package esjson
