// Package document holds the parsed, analyzed form of a document: what the
// mapping produces from a JSON source and what the indexing chain inverts into
// an in-memory segment.
//
// A Document is built and consumed by one goroutine and reused for the next
// document (Reset), so the indexing hot path does not allocate per token.
package document

// FieldType is a mapping type, as in Elasticsearch mappings.
type FieldType uint8

const (
	Text    FieldType = iota + 1 // analyzed full text: positions, freqs, norms
	Keyword                      // exact value: one term per value, sorted doc values
	Long                         // int64: sortable 8-byte term + numeric doc values
	Double                       // float64 as sortable int64 bits: term + numeric doc values
	Date                         // epoch milliseconds as int64: term + numeric doc values
	Boolean                      // 0/1: term + numeric doc values
)

// String returns the mapping name of the type ("text", "keyword", ...).
func (t FieldType) String() string {
	switch t {
	case Text:
		return "text"
	case Keyword:
		return "keyword"
	case Long:
		return "long"
	case Double:
		return "double"
	case Date:
		return "date"
	case Boolean:
		return "boolean"
	}
	return "unknown"
}

// ParseFieldType maps a mapping type name to its FieldType; ok is false for
// an unknown name.
func ParseFieldType(s string) (FieldType, bool) {
	for t := Text; t <= Boolean; t++ {
		if t.String() == s {
			return t, true
		}
	}
	return 0, false
}

// Numeric reports whether values of the type are held as int64.
func (t FieldType) Numeric() bool { return t >= Long && t <= Boolean }

// Token is one indexed term at a position. Term aliases a buffer owned by the
// Document; copy it to keep it past the next Reset.
type Token struct {
	Term     []byte
	Position int32
}

// Field is one mapped field of a document with all its values (a JSON array
// gives several values; text positions continue across values with a gap).
type Field struct {
	Name string
	Type FieldType
	// Tokens are the indexed terms. Text: analyzed tokens. Keyword: one token
	// per value. Numeric types: one token per value, the value's sortable
	// 8-byte big-endian encoding (see EncodeSortable), so term-range
	// iteration in the term dictionary is numeric order.
	Tokens []Token
	// Numerics are the values of numeric types (Double as SortableFloat64
	// bits, Date as epoch millis, Boolean as 0/1), for numeric doc values.
	Numerics []int64
	// Keywords are the values of keyword fields, for sorted doc values.
	Keywords [][]byte
	// Length is the number of tokens for norms (Text only).
	Length int32
}

// Document is a parsed document ready for the indexing chain.
type Document struct {
	ID []byte // the _id
	// Routing is the custom routing value the document was indexed with
	// (_routing), stored next to _id; empty when it is routed by _id.
	Routing []byte
	Source  []byte // the original JSON (_source), stored compressed
	Fields  []Field
	// Terms is the arena that producers (the mapping's Parser) append term
	// and keyword bytes to; Token.Term and Field.Keywords alias it, so a
	// reused Document parses without allocating. Consumers ignore it.
	Terms []byte
}

// Reset empties d for reuse, keeping its buffers.
func (d *Document) Reset() {
	d.ID = d.ID[:0]
	d.Routing = d.Routing[:0]
	d.Source = d.Source[:0]
	for i := range d.Fields {
		f := &d.Fields[i]
		f.Tokens = f.Tokens[:0]
		f.Numerics = f.Numerics[:0]
		f.Keywords = f.Keywords[:0]
		f.Length = 0
	}
	d.Fields = d.Fields[:0]
	d.Terms = d.Terms[:0]
}
