package shardbench

import (
	"sync"

	"github.com/sluice-search/sluice/node/engine/document"
	"github.com/sluice-search/sluice/node/engine/mapping"
)

// parserPool adapts per-goroutine mapping.Parsers to engine.DocParser. The
// benchmark mapping is strict, so a parse never yields a mapping update.
type parserPool struct{ pool sync.Pool }

func newParserPool(m *mapping.Mapping) (*parserPool, error) {
	if _, err := mapping.NewParser(m); err != nil {
		return nil, err
	}
	pp := &parserPool{}
	pp.pool.New = func() any {
		p, _ := mapping.NewParser(m) // m was validated above
		return p
	}
	return pp, nil
}

func (pp *parserPool) Parse(id, source []byte, doc *document.Document) error {
	p := pp.pool.Get().(*mapping.Parser)
	defer pp.pool.Put(p)
	if upd, err := p.Parse(doc, id, source); err != nil {
		return err
	} else if upd != nil {
		return errf("unexpected mapping update from a strict mapping")
	}
	return nil
}
