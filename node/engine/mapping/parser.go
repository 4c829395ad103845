package mapping

import (
	"errors"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/sluice-search/sluice/node/engine/analysis"
	"github.com/sluice-search/sluice/node/engine/document"
)

const (
	// PositionIncrementGap separates the values of a multi-valued text
	// field, so a phrase cannot match across two values (Elasticsearch's
	// position_increment_gap default).
	PositionIncrementGap = 100
	// MaxTermLength is Lucene's limit on one indexed term; a longer keyword
	// rejects the document (Elasticsearch's "immense term").
	MaxTermLength = 1<<15 - 2
	// MaxIDLength is Elasticsearch's limit on _id, in bytes.
	MaxIDLength = 512
)

// target is a mapped path as the parser sees it: a leaf field or an object,
// plus the state of its values in the document being parsed.
type target struct {
	name     string
	field    Field
	object   bool
	analyzer analysis.Analyzer

	gen     uint64 // the document whose state below is current
	slot    int    // index in Document.Fields
	values  int
	nextPos int32
}

// Parser fills documents from JSON sources according to a mapping. It keeps
// analyzers and scratch buffers, so each indexing goroutine needs its own.
type Parser struct {
	m         *Mapping
	targets   map[string]*target
	pending   map[string]*target // dynamic paths this document introduced
	analyzers map[string]analysis.Analyzer
	sc        scanner
	buf       analysis.Buffer // lives here: passed to an interface, it would escape per call
	doc       *document.Document
	path      []byte
	gen       uint64
	anyBytes  bool // ParseAcknowledged

	// ParseDocValuesUpdate's scratch: the strict copy of strictOf, and
	// the document it parses into.
	strict, strictOf *Mapping
	dvDoc            document.Document
}

// NewParser returns a parser for m, for one goroutine.
func NewParser(m *Mapping) (*Parser, error) {
	p := &Parser{analyzers: map[string]analysis.Analyzer{}, pending: map[string]*target{}}
	if err := p.SetMapping(m); err != nil {
		return nil, err
	}
	return p, nil
}

// Mapping returns the mapping the parser applies.
func (p *Parser) Mapping() *Mapping { return p.m }

// SetMapping switches the parser to m, typically the index mapping after a
// dynamic update was merged into it.
func (p *Parser) SetMapping(m *Mapping) error {
	targets := make(map[string]*target, len(m.fields)+len(m.objects))
	for name, f := range m.fields {
		t := &target{name: name, field: f}
		if f.Type == document.Text {
			a, err := p.analyzer(f.analyzerName())
			if err != nil {
				return fieldErr(ErrInvalidMapping, name, "%v", err)
			}
			t.analyzer = a
		}
		targets[name] = t
	}
	for name := range m.objects {
		targets[name] = &target{name: name, object: true}
	}
	p.m, p.targets = m, targets
	return nil
}

func (p *Parser) analyzer(name string) (analysis.Analyzer, error) {
	if a := p.analyzers[name]; a != nil {
		return a, nil
	}
	a, err := analysis.New(name)
	if err != nil {
		return nil, err
	}
	p.analyzers[name] = a
	return a, nil
}

// Parse fills doc (reset first) from a document's _id and JSON _source.
// Terms alias doc.Terms and doc keeps copies of id and source, so the
// caller may reuse both buffers.
//
// If the mapping is dynamic and the source has unmapped fields, they are
// parsed with inferred types (string: text, integer: long, other number:
// double, boolean: boolean) and returned as update, a mapping of just the
// new fields; update is nil otherwise. The caller must merge update into
// the index mapping (Mapping.Merge) before indexing doc — a merge conflict,
// e.g. another document having introduced the same field with another type
// meanwhile, rejects doc — and should then SetMapping the merged mapping.
//
// A document that does not fit gets an error wrapping ErrDocument or
// ErrStrict in a *FieldError naming the field; doc is then unusable.
func (p *Parser) Parse(doc *document.Document, id, source []byte) (update *Mapping, err error) {
	doc.Reset()
	switch {
	case len(id) == 0:
		return nil, fieldErr(ErrDocument, "_id", "must not be empty")
	case len(id) > MaxIDLength:
		return nil, fieldErr(ErrDocument, "_id", "is %d bytes long, more than %d", len(id), MaxIDLength)
	case !p.anyBytes && !utf8.Valid(id):
		return nil, fieldErr(ErrDocument, "_id", "is not valid UTF-8")
	}
	doc.ID = append(doc.ID, id...)
	doc.Source = append(doc.Source, source...)
	p.doc = doc
	p.gen++
	p.path = p.path[:0]
	clear(p.pending)
	p.sc = scanner{data: doc.Source, buf: p.sc.buf, anyBytes: p.anyBytes}
	if p.sc.peek() != '{' {
		return nil, fieldErr(ErrDocument, "", "the source must be a JSON object")
	}
	if err := p.object(0); err != nil {
		var se *syntaxError
		if errors.As(err, &se) {
			return nil, fieldErr(ErrDocument, string(p.path), "%v", se)
		}
		return nil, err
	}
	// Not peek() != 0: a NUL byte after the document is data too.
	if p.sc.peek(); p.sc.i < len(p.sc.data) {
		return nil, fieldErr(ErrDocument, "", "%v", p.sc.fail("data after the document"))
	}
	if len(p.pending) > 0 {
		return p.dynamicUpdate()
	}
	return nil, nil
}

// ParseAcknowledged is Parse for a document acknowledged before, a
// translog replay: strings that are not valid UTF-8 pass, as they did
// before the check existed, so an acknowledged document is never refused
// on its way back. Everything else is checked as by Parse.
func (p *Parser) ParseAcknowledged(doc *document.Document, id, source []byte) (update *Mapping, err error) {
	p.anyBytes = true
	defer func() { p.anyBytes = false }()
	return p.Parse(doc, id, source)
}

func (p *Parser) dynamicUpdate() (*Mapping, error) {
	fields := make(map[string]Field, len(p.pending))
	for name, t := range p.pending {
		if !t.object {
			fields[name] = t.field
		}
	}
	return New(DynamicDefault, fields)
}

func (p *Parser) lookup() *target {
	if t := p.targets[string(p.path)]; t != nil {
		return t
	}
	if len(p.pending) > 0 {
		return p.pending[string(p.path)]
	}
	return nil
}

// object parses the object at the scanner, its keys extending p.path.
func (p *Parser) object(depth int) error {
	s := &p.sc
	s.i++ // '{'
	if s.peek() == '}' {
		s.i++
		return nil
	}
	base := len(p.path)
	for {
		if s.peek() != '"' {
			return s.fail("expected a key")
		}
		key, err := s.str()
		if err != nil {
			return err
		}
		if base > 0 {
			p.path = append(p.path, '.')
		}
		p.path = append(p.path, key...)
		if len(key) == 0 {
			return fieldErr(ErrDocument, string(p.path), "field name cannot be empty")
		}
		if err := s.expect(':'); err != nil {
			return err
		}
		if err := p.value(depth + 1); err != nil {
			return err
		}
		p.path = p.path[:base]
		if more, err := s.more('}'); !more || err != nil {
			return err
		}
	}
}

// value parses any value at p.path.
func (p *Parser) value(depth int) error {
	s := &p.sc
	if depth > maxNesting {
		return s.fail("nested too deeply")
	}
	switch s.peek() {
	case '[':
		return s.elements(func() error { return p.value(depth + 1) })
	case 'n':
		return s.literal("null") // null adds no value and no mapping
	case '{':
		t, err := p.resolve(true)
		if err != nil || t == nil {
			if err == nil {
				err = s.skip(depth)
			}
			return err
		}
		if !t.object {
			return fieldErr(ErrDocument, t.name, "expected a [%s] value, got an object", t.field.Type)
		}
		return p.object(depth)
	default:
		t, err := p.resolve(false)
		if err != nil {
			return err
		}
		if t == nil {
			return s.skip(depth)
		}
		if t.object {
			return fieldErr(ErrDocument, t.name, "is an object, got a concrete value")
		}
		return p.scalar(t)
	}
}

// resolve finds the target at p.path, applying the dynamic setting when it
// is unmapped. A nil target means: ignore the value.
func (p *Parser) resolve(object bool) (*target, error) {
	if t := p.lookup(); t != nil {
		return t, nil
	}
	name := string(p.path)
	if err := validName(name); err != nil {
		return nil, fieldErr(ErrDocument, name, "%s", err.(*FieldError).Reason)
	}
	switch p.m.dynamic {
	case DynamicFalse:
		return nil, nil
	case DynamicStrict:
		return nil, fieldErr(ErrStrict, name, "mapping is strict, dynamic introduction of [%s] is not allowed", name)
	}
	limits := p.m.Limits()
	if err := limits.CheckName(name, object); err != nil {
		return nil, err
	}
	t := &target{name: name, object: object}
	if !object {
		var err error
		if t.field, err = p.inferField(); err != nil {
			return nil, err
		}
		if t.field.Type == document.Text {
			if t.analyzer, err = p.analyzer("standard"); err != nil {
				return nil, err
			}
		}
	}
	// The objects above a new dynamic path are dynamic too unless mapped.
	for i := len(name) - 1; i > 0; i-- {
		if name[i] == '.' && p.targets[name[:i]] == nil && p.pending[name[:i]] == nil {
			p.pending[name[:i]] = &target{name: name[:i], object: true}
		}
	}
	p.pending[name] = t
	// Refused at the first field past the limit: a document bringing
	// 50,000 new fields costs no more than one bringing 1,001.
	if err := limits.CheckTotal(p.m.Total()+len(p.pending), len(p.pending), name); err != nil {
		return nil, err
	}
	return t, nil
}

// inferField picks a type for an unmapped value as Elasticsearch's dynamic
// mapping does (without date detection and the keyword sub-field).
func (p *Parser) inferField() (Field, error) {
	s := &p.sc
	switch c := s.peek(); {
	case c == '"':
		return NewField(document.Text), nil
	case c == 't' || c == 'f':
		return NewField(document.Boolean), nil
	case c == '-' || '0' <= c && c <= '9':
		save := s.i
		_, integer, err := s.number()
		s.i = save
		if err != nil {
			return Field{}, err
		}
		if integer {
			return NewField(document.Long), nil
		}
		return NewField(document.Double), nil
	}
	return Field{}, s.fail("expected a value")
}

// scalar parses a string, number or boolean into leaf t.
func (p *Parser) scalar(t *target) error {
	s := &p.sc
	var raw []byte
	var str, integer bool
	switch c := s.peek(); {
	case c == '"':
		v, err := s.str()
		if err != nil {
			return err
		}
		raw, str = v, true
	case c == 't':
		if err := s.literal("true"); err != nil {
			return err
		}
		raw = s.data[s.i-4 : s.i]
	case c == 'f':
		if err := s.literal("false"); err != nil {
			return err
		}
		raw = s.data[s.i-5 : s.i]
	default:
		v, i, err := s.number()
		if err != nil {
			return err
		}
		raw, integer = v, i
	}
	isBool := !str && (raw[0] == 't' || raw[0] == 'f')
	f := t.field
	switch f.Type {
	case document.Text:
		if f.Index {
			p.addText(t, raw)
		}
		return nil
	case document.Keyword:
		if len(raw) > MaxTermLength {
			return fieldErr(ErrDocument, t.name, "keyword value is %d bytes long, more than %d", len(raw), MaxTermLength)
		}
		if f.Index || f.DocValues {
			p.addKeyword(t, raw)
		}
		return nil
	}
	if str && (f.Type == document.Long || f.Type == document.Double) {
		// Coerce numeric strings, but only in JSON number syntax (not
		// strconv's hex, "Inf" or underscores).
		ns := scanner{data: raw}
		if _, i, err := ns.number(); err == nil && ns.i == len(raw) {
			integer = i
		} else {
			return fieldErr(ErrDocument, t.name, "failed to parse %s as [%s]", preview(raw, str), f.Type)
		}
	}
	var v int64
	var ok bool
	switch f.Type {
	case document.Long:
		if !isBool {
			v, ok = parseLong(raw, integer)
		}
	case document.Double:
		if !isBool {
			var d float64
			d, ok = parseDouble(raw)
			v = document.SortableFloat64(d)
		}
	case document.Date:
		switch {
		case str:
			v, ok = parseDate(raw)
		case !isBool:
			v, ok = parseLong(raw, integer)
		}
	case document.Boolean:
		switch string(raw) {
		case "true":
			v, ok = 1, true
		case "false", "":
			v, ok = 0, isBool || str
		}
	}
	if !ok {
		return fieldErr(ErrDocument, t.name, "failed to parse %s as [%s]", preview(raw, str), f.Type)
	}
	p.addNumeric(t, v)
	return nil
}

// field returns t's Field in the document, adding it on t's first value.
func (p *Parser) field(t *target) *document.Field {
	d := p.doc
	if t.gen == p.gen {
		t.values++
		return &d.Fields[t.slot]
	}
	t.gen, t.slot, t.values, t.nextPos = p.gen, len(d.Fields), 1, 0
	if len(d.Fields) < cap(d.Fields) {
		d.Fields = d.Fields[:len(d.Fields)+1] // reuse the field's slices
	} else {
		d.Fields = append(d.Fields, document.Field{})
	}
	f := &d.Fields[t.slot]
	f.Name, f.Type, f.Length = t.name, t.field.Type, 0
	f.Tokens, f.Numerics, f.Keywords = f.Tokens[:0], f.Numerics[:0], f.Keywords[:0]
	return f
}

func (p *Parser) addText(t *target, text []byte) {
	f := p.field(t)
	pos := t.nextPos
	if t.values > 1 {
		pos += PositionIncrementGap
	}
	n := len(f.Tokens)
	b := &p.buf
	b.Tokens, b.Terms = f.Tokens, p.doc.Terms
	t.nextPos = t.analyzer.Analyze(b, text, pos)
	f.Tokens, p.doc.Terms = b.Tokens, b.Terms
	b.Tokens, b.Terms = nil, nil // the document owns them now
	f.Length += int32(len(f.Tokens) - n)
}

func (p *Parser) addKeyword(t *target, value []byte) {
	f := p.field(t)
	b := &p.buf
	b.Tokens, b.Terms = f.Tokens, p.doc.Terms
	analysis.Keyword{}.Analyze(b, value, int32(t.values-1))
	term := b.Tokens[len(b.Tokens)-1].Term
	p.doc.Terms = b.Terms
	if t.field.Index {
		f.Tokens = b.Tokens
	}
	b.Tokens, b.Terms = nil, nil
	if t.field.DocValues {
		f.Keywords = append(f.Keywords, term)
	}
}

func (p *Parser) addNumeric(t *target, v int64) {
	f := t.field
	if !f.Index && !f.DocValues {
		return
	}
	df := p.field(t)
	if f.Index {
		start := len(p.doc.Terms)
		p.doc.Terms = document.EncodeSortable(p.doc.Terms, v)
		end := len(p.doc.Terms)
		df.Tokens = append(df.Tokens, document.Token{Term: p.doc.Terms[start:end:end], Position: int32(t.values - 1)})
	}
	if f.DocValues {
		df.Numerics = append(df.Numerics, v)
	}
}

// parseLong reads a long, coercing as Elasticsearch does: numeric strings
// are accepted and fractions truncated toward zero; out of range fails.
func parseLong(raw []byte, integer bool) (int64, bool) {
	if integer && len(raw) <= 18 {
		if v, ok := parseEpochMillis(raw); ok { // a plain run of digits
			return v, true
		}
	}
	if v, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
		return v, true
	}
	f, ok := parseDouble(raw)
	if !ok || f < -(1<<63) || f >= 1<<63 {
		return 0, false
	}
	return int64(f), true
}

// parseDouble reads a finite float64 (JSON number or numeric string).
func parseDouble(raw []byte) (float64, bool) {
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, false
	}
	return f, true
}

// preview quotes a value for an error message, shortened.
func preview(raw []byte, str bool) string {
	const max = 40
	v := string(raw)
	if len(v) > max {
		v = v[:max] + "..."
	}
	if str {
		return strconv.Quote(v)
	}
	return v
}
