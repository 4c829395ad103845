package routing

import (
	"errors"
	"fmt"
	"strings"
)

// Dest is how a reindex routes the documents it copies into the
// destination index (Elasticsearch's dest.routing), parsed by ParseDest.
type Dest struct {
	discard bool
	value   []byte // set for "=value"
}

// ParseDest parses ReindexDestination.routing: "" or "keep" keeps
// each document's stored routing, "discard" drops it (documents are routed
// by _id), "=value" gives every document the routing value.
func ParseDest(s string) (Dest, error) {
	switch {
	case s == "" || s == "keep":
		return Dest{}, nil
	case s == "discard":
		return Dest{discard: true}, nil
	case strings.HasPrefix(s, "="):
		if len(s) == 1 {
			return Dest{}, errors.New(`routing "=" needs a value after "="`)
		}
		return Dest{value: []byte(s[1:])}, nil
	}
	return Dest{}, fmt.Errorf(`routing %q: want "keep", "discard" or "=value"`, s)
}

// Keeps reports whether documents keep their own routing, so that they
// land in the destination shard their source shard maps to (what a
// colocated copy and per-source-shard verification rely on).
func (r Dest) Keeps() bool { return !r.discard && r.value == nil }

// Of returns the routing a document stored with routing gets in the
// destination: nil means it is routed by _id and stores none. It aliases
// its argument or r.
func (r Dest) Of(routing []byte) []byte {
	switch {
	case r.discard:
		return nil
	case r.value != nil:
		return r.value
	}
	if len(routing) == 0 {
		return nil
	}
	return routing
}
