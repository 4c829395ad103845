package reindex

import (
	"errors"
	"fmt"
	"strings"

	"github.com/sluice-search/sluice/cluster/routing"
)

// DestRouting is how a reindex routes copied documents in the destination
// (Elasticsearch's dest.routing), parsed by ParseDestRouting.
type DestRouting struct {
	discard bool
	value   []byte // set for "=value"
}

// ParseDestRouting parses ReindexDestination.routing: "" or "keep" keeps
// each document's stored routing, "discard" drops it (documents are routed
// by _id), "=value" gives every document the routing value.
func ParseDestRouting(s string) (DestRouting, error) {
	switch {
	case s == "" || s == "keep":
		return DestRouting{}, nil
	case s == "discard":
		return DestRouting{discard: true}, nil
	case strings.HasPrefix(s, "="):
		if len(s) == 1 {
			return DestRouting{}, errors.New(`routing "=" needs a value after "="`)
		}
		return DestRouting{value: []byte(s[1:])}, nil
	}
	return DestRouting{}, fmt.Errorf(`routing %q: want "keep", "discard" or "=value"`, s)
}

// Keeps reports whether documents keep their own routing, so that they
// land in the destination shard their source shard maps to (what a
// colocated copy and per-source-shard verification rely on).
func (r DestRouting) Keeps() bool { return !r.discard && r.value == nil }

// shardOf is the destination shard of a document with id and routing rt
// (nil: routed by id), as a bulk routes it.
func shardOf(id, rt []byte, dst routing.Params) int {
	key := id
	if len(rt) > 0 {
		key = rt
	}
	return routing.Shard(string(key), dst)
}

// Of returns the routing a document stored with routing gets in the
// destination: nil means it is routed by _id and stores none. It aliases
// its argument or r.
func (r DestRouting) Of(routing []byte) []byte {
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
