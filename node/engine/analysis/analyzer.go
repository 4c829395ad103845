package analysis

import (
	"fmt"
	"slices"
	"sync"

	"github.com/sluice-search/sluice/node/engine/document"
)

// MaxTokenLength is the longest term, in bytes, the text analyzers emit
// (Lucene's StandardAnalyzer.DEFAULT_MAX_TOKEN_LENGTH).
const MaxTokenLength = 255

// Buffer receives an Analyzer's output. Tokens are appended to Tokens; their
// Term bytes are appended to Terms and alias it. Reuse a Buffer across
// documents (Reset) so the steady state does not allocate.
type Buffer struct {
	Tokens []document.Token
	Terms  []byte
}

// Reset empties b, keeping its memory. Terms handed out before remain
// readable only until the buffer is written again.
func (b *Buffer) Reset() {
	b.Tokens = b.Tokens[:0]
	b.Terms = b.Terms[:0]
}

// appendTerm records the bytes Terms[start:] as a token at pos. The term's
// capacity is capped so appending to it can never overwrite a later term.
func (b *Buffer) appendTerm(start int, pos int32) {
	end := len(b.Terms)
	b.Tokens = append(b.Tokens, document.Token{Term: b.Terms[start:end:end], Position: pos})
}

// Analyzer turns text into tokens. Implementations hold scratch state and are
// not safe for concurrent use; create one per goroutine with New.
type Analyzer interface {
	// Analyze appends the tokens of text to b, the first at position pos,
	// and returns the position after the last one (pos if none).
	Analyze(b *Buffer, text []byte, pos int32) int32
}

// Factory creates a fresh Analyzer.
type Factory func() Analyzer

var registry = struct {
	sync.RWMutex
	m map[string]Factory
}{m: map[string]Factory{
	"standard":   func() Analyzer { return NewStandard() },
	"cjk":        func() Analyzer { return NewCJK() },
	"keyword":    func() Analyzer { return Keyword{} },
	"whitespace": func() Analyzer { return Whitespace{} },
	"simple":     func() Analyzer { return Simple{} },
}}

// Register adds a named analyzer. It fails if the name is taken, so a plugin
// cannot silently change how existing indices analyze text.
func Register(name string, f Factory) error {
	registry.Lock()
	defer registry.Unlock()
	if _, ok := registry.m[name]; ok {
		return fmt.Errorf("analysis: analyzer %q already registered", name)
	}
	registry.m[name] = f
	return nil
}

// New returns a new instance of the named analyzer, for one goroutine.
func New(name string) (Analyzer, error) {
	registry.RLock()
	f, ok := registry.m[name]
	registry.RUnlock()
	if !ok {
		return nil, fmt.Errorf("analysis: unknown analyzer %q", name)
	}
	return f(), nil
}

// Known reports whether an analyzer of that name is registered.
func Known(name string) bool {
	registry.RLock()
	defer registry.RUnlock()
	_, ok := registry.m[name]
	return ok
}

// Names lists the registered analyzers, sorted.
func Names() []string {
	registry.RLock()
	defer registry.RUnlock()
	names := make([]string, 0, len(registry.m))
	for n := range registry.m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
