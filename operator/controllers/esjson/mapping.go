package esjson

import (
	"fmt"

	"github.com/sluice-search/sluice/node/engine/mapping"
	"github.com/sluice-search/sluice/node/querydsl"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// Mapping parses an Elasticsearch mapping object ({"properties": {...}})
// into the public form; empty input is a nil mapping (dynamic mapping of
// every field).
func Mapping(raw []byte) (*sluicev1.Mapping, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	m, err := mapping.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("mapping: %w", err)
	}
	return querydsl.MappingToProto(m), nil
}
