package engine

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/sluice-search/sluice/node/engine/document"
	"github.com/sluice-search/sluice/node/engine/mapping"
)

// MappingParser is the DocParser over an index mapping: it pools
// mapping.Parsers (one per concurrent caller; they keep analyzers and
// scratch buffers) and merges dynamic mapping updates into the index
// mapping under a lock, so two documents introducing one field with
// different types cannot both be indexed (the second is rejected with
// mapping.ErrConflict).
type MappingParser struct {
	mu      sync.Mutex
	current atomic.Pointer[mapping.Mapping]
	parsers sync.Pool
	// OnUpdate, if set, is called (under the merge lock) with the merged
	// mapping after a dynamic update, e.g. to persist it.
	OnUpdate func(*mapping.Mapping)
}

// NewMappingParser returns a parser for m.
func NewMappingParser(m *mapping.Mapping) (*MappingParser, error) {
	p := &MappingParser{}
	p.current.Store(m)
	mp, err := mapping.NewParser(m) // validates analyzers once, up front
	if err != nil {
		return nil, err
	}
	p.parsers.Put(mp)
	return p, nil
}

// Mapping returns the current index mapping, dynamic updates included.
func (p *MappingParser) Mapping() *mapping.Mapping { return p.current.Load() }

// Parse fills doc from source by the current mapping.
func (p *MappingParser) Parse(id, source []byte, doc *document.Document) error {
	return p.parse(id, source, doc, (*mapping.Parser).Parse)
}

// ParseReplay is Parse for a replayed operation (ReplayParser).
func (p *MappingParser) ParseReplay(id, source []byte, doc *document.Document) error {
	return p.parse(id, source, doc, (*mapping.Parser).ParseAcknowledged)
}

// ParseDocValuesUpdate reads an in-place update by the current mapping
// (DocValuesParser).
func (p *MappingParser) ParseDocValuesUpdate(fields []byte) ([]mapping.DocValueUpdate, error) {
	mp, err := p.parser()
	if err != nil {
		return nil, err
	}
	defer p.parsers.Put(mp)
	return mp.ParseDocValuesUpdate(fields)
}

// parser takes a pooled mapping.Parser set to the current mapping; the
// caller puts it back.
func (p *MappingParser) parser() (*mapping.Parser, error) {
	cur := p.current.Load()
	mp, _ := p.parsers.Get().(*mapping.Parser)
	if mp == nil {
		return mapping.NewParser(cur)
	}
	if mp.Mapping() != cur {
		if err := mp.SetMapping(cur); err != nil {
			return nil, err
		}
	}
	return mp, nil
}

func (p *MappingParser) parse(id, source []byte, doc *document.Document,
	parse func(*mapping.Parser, *document.Document, []byte, []byte) (*mapping.Mapping, error)) error {
	mp, err := p.parser()
	if err != nil {
		return err
	}
	defer p.parsers.Put(mp)
	update, err := parse(mp, doc, id, source)
	if err != nil || update == nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	merged, err := p.current.Load().Merge(update)
	if err != nil {
		return fmt.Errorf("dynamic mapping update: %w", err)
	}
	p.current.Store(merged)
	if p.OnUpdate != nil {
		p.OnUpdate(merged)
	}
	return nil
}
