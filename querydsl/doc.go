// Package querydsl translates the public protobuf forms of the query DSL,
// sort keys and mappings (sluice.v1.Query, SortField, SortValue, Mapping)
// into the engine's forms (search.Query, search.SortField, search.SortValue,
// mapping.Mapping), using an index mapping to give each value its field's
// meaning:
//
//   - match and phrase text is analyzed with the field's analyzer; on a
//     keyword, numeric, date or boolean field, match is a term query of the
//     whole value (as Elasticsearch);
//   - term, terms and range values are converted to the field's type: a long
//     field takes 42, "42" or 42.0 and is searched by its 8-byte sortable
//     encoding; doubles by their sortable bits; dates from epoch millis or
//     RFC 3339 / yyyy-MM-dd strings; booleans from true/false or "true";
//   - minimum_should_match takes "2", "-1", "75%" and "-25%";
//   - boosts of 0 mean 1; negative boosts are invalid.
//
// Every problem is an *Error wrapping ErrInvalid that names the field, so
// the gRPC edge maps it to INVALID_ARGUMENT and nothing else has to.
//
// Unknown fields: a Compiler built with Strict (the coordinator, which
// validates against the cluster's mapping) rejects them; a lenient one (a
// data node) compiles them to match-none. The lenient default is right on a
// shard: its mapping can only lag the cluster's for fields that other shards
// introduced dynamically, and this shard has no documents with those fields.
package querydsl
