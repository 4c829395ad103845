package mapping

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/sluice-search/sluice/node/engine/analysis"
	"github.com/sluice-search/sluice/node/engine/document"
)

// Errors are wrapped in a *FieldError naming the field; test the kind with
// errors.Is.
var (
	// ErrInvalidMapping: a mapping definition is malformed.
	ErrInvalidMapping = errors.New("invalid mapping")
	// ErrConflict: a mapping update changes an existing field.
	ErrConflict = errors.New("mapping conflict")
	// ErrDocument: a document does not fit the mapping (Elasticsearch's
	// mapper_parsing_exception), including invalid JSON.
	ErrDocument = errors.New("document does not fit the mapping")
	// ErrStrict: a document brings a new field into a strict mapping.
	ErrStrict = errors.New("dynamic field not allowed by strict mapping")
	// ErrLimit: a document or mapping update would take the mapping past
	// one of its Limits.
	ErrLimit = errors.New("mapping limit exceeded")
)

// Limits bound what dynamic mapping may add, as Elasticsearch's
// index.mapping.*.limit settings do; a zero field means its default.
type Limits struct {
	// TotalFields bounds the mapping's fields and the objects they imply
	// ("a.b" implies object "a"), as index.mapping.total_fields.limit.
	TotalFields int
	// Depth bounds a field's object depth: a field at the root has depth 1,
	// "a.b.c" depth 3 (index.mapping.depth.limit).
	Depth int
	// FieldNameLength bounds a field's whole dotted path, in bytes
	// (index.mapping.field_name_length.limit).
	FieldNameLength int
}

// The limits' defaults. Elasticsearch's, but for the field name length,
// unbounded there: here every mapping is one etcd record that every node
// and coordinator holds, so its size is bounded — 1,000 fields of at most
// 256 bytes keep it under half a megabyte, well inside etcd's 1.5 MiB
// request limit — and 256 bytes is longer than any path real data uses.
const (
	DefaultTotalFieldsLimit     = 1000
	DefaultDepthLimit           = 20
	DefaultFieldNameLengthLimit = 256
	// MaxDepthLimit bounds the depth limit itself: JSON nests objects and
	// arrays at most maxNesting deep whatever the mapping says.
	MaxDepthLimit = 100
)

// OrDefaults is l with its zero fields set to the defaults.
func (l Limits) OrDefaults() Limits {
	if l.TotalFields <= 0 {
		l.TotalFields = DefaultTotalFieldsLimit
	}
	if l.Depth <= 0 {
		l.Depth = DefaultDepthLimit
	}
	if l.FieldNameLength <= 0 {
		l.FieldNameLength = DefaultFieldNameLengthLimit
	}
	return l
}

// CheckName checks a new field or object path against the depth and name
// length limits (an object's depth is one more than its path's segments:
// its fields sit below it).
func (l Limits) CheckName(name string, object bool) error {
	l = l.OrDefaults()
	if len(name) > l.FieldNameLength {
		return fieldErr(ErrLimit, name, "field name is %d bytes long, more than the limit of %d (index.mapping.field_name_length.limit)", len(name), l.FieldNameLength)
	}
	depth := strings.Count(name, ".") + 1
	if object {
		depth++
	}
	if depth > l.Depth {
		return fieldErr(ErrLimit, name, "limit of mapping depth [%d] has been exceeded (index.mapping.depth.limit)", l.Depth)
	}
	return nil
}

// CheckTotal checks that a mapping of total fields and objects, after
// adding added new ones, is within the total fields limit; field names
// one of them.
func (l Limits) CheckTotal(total, added int, field string) error {
	if l = l.OrDefaults(); total > l.TotalFields {
		return fieldErr(ErrLimit, field, "limit of total fields [%d] has been exceeded while adding %d new fields (index.mapping.total_fields.limit)", l.TotalFields, added)
	}
	return nil
}

// FieldError is an error about one field.
type FieldError struct {
	Field  string // dotted path; "" for the document as a whole
	Reason string
	Kind   error // one of the Err* sentinels
}

func (e *FieldError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("%v: %s", e.Kind, e.Reason)
	}
	return fmt.Sprintf("%v: field [%s]: %s", e.Kind, e.Field, e.Reason)
}

func (e *FieldError) Unwrap() error { return e.Kind }

// ErrorField names the field (the gRPC edge's rpc.FieldError).
func (e *FieldError) ErrorField() string { return e.Field }

func fieldErr(kind error, field, format string, args ...any) error {
	return &FieldError{Field: field, Reason: fmt.Sprintf(format, args...), Kind: kind}
}

// Dynamic says what happens to fields a document has and the mapping lacks.
type Dynamic uint8

const (
	// DynamicDefault is "not set": it behaves as DynamicTrue and, in a
	// mapping update, keeps the existing setting.
	DynamicDefault Dynamic = iota
	DynamicTrue            // infer a type and add the field
	DynamicFalse           // ignore the field (it stays in _source)
	DynamicStrict          // reject the document
)

func (d Dynamic) String() string {
	switch d {
	case DynamicTrue, DynamicDefault:
		return "true"
	case DynamicFalse:
		return "false"
	case DynamicStrict:
		return "strict"
	}
	return "unknown"
}

// Field is one mapped leaf field.
type Field struct {
	Type document.FieldType
	// Analyzer names the analysis analyzer of a text field ("" and
	// "standard" are the default).
	Analyzer string
	// Index: searchable (terms in the inverted index). Default true.
	Index bool
	// DocValues: column values for sorting and aggregations. Default true,
	// and not allowed, for text.
	DocValues bool
	// Store asks for the field to be stored apart from _source. Accepted
	// and kept for Elasticsearch compatibility; values are read from
	// _source.
	Store bool
}

// NewField returns a field of type t with Elasticsearch's defaults.
func NewField(t document.FieldType) Field {
	return Field{Type: t, Index: true, DocValues: t != document.Text}
}

// analyzerName is the analyzer a text field uses.
func (f Field) analyzerName() string {
	if f.Analyzer == "" {
		return "standard"
	}
	return f.Analyzer
}

func (f Field) validate(name string) error {
	if f.Type < document.Text || f.Type > document.Boolean {
		return fieldErr(ErrInvalidMapping, name, "unknown type %d", f.Type)
	}
	if f.Type == document.Text {
		if !analysis.Known(f.analyzerName()) {
			return fieldErr(ErrInvalidMapping, name, "analyzer [%s] has not been configured", f.Analyzer)
		}
		if f.DocValues {
			return fieldErr(ErrInvalidMapping, name, "[doc_values] is not supported for [text] fields")
		}
	} else if f.Analyzer != "" {
		return fieldErr(ErrInvalidMapping, name, "[analyzer] is only allowed on [text] fields, not [%s]", f.Type)
	}
	return nil
}

// Mapping is an index mapping: leaf fields by dotted path, and what to do
// with unmapped ones. A Mapping is immutable once built, so it can be shared
// by every goroutine; updates make a new one (Merge).
type Mapping struct {
	dynamic Dynamic
	limits  Limits
	fields  map[string]Field
	objects map[string]struct{} // every proper prefix "a", "a.b" of a field "a.b.c"
}

// New builds and validates a mapping from fields keyed by dotted path.
func New(dynamic Dynamic, fields map[string]Field) (*Mapping, error) {
	if dynamic > DynamicStrict {
		return nil, fieldErr(ErrInvalidMapping, "", "unknown dynamic setting %d", dynamic)
	}
	m := &Mapping{dynamic: dynamic, fields: maps.Clone(fields), objects: map[string]struct{}{}}
	if m.fields == nil {
		m.fields = map[string]Field{}
	}
	for _, name := range m.Names() {
		if err := validName(name); err != nil {
			return nil, err
		}
		if err := m.fields[name].validate(name); err != nil {
			return nil, err
		}
		for i := range len(name) {
			if name[i] == '.' {
				m.objects[name[:i]] = struct{}{}
			}
		}
	}
	// A path cannot be both a value and an object holding values.
	for _, name := range m.Names() {
		if _, ok := m.objects[name]; ok {
			return nil, fieldErr(ErrInvalidMapping, name, "mapped as [%s] and as an object", m.fields[name].Type)
		}
	}
	return m, nil
}

// validName rejects the names Elasticsearch rejects: empty segments and the
// metadata fields.
func validName(name string) error {
	switch {
	case name == "":
		return fieldErr(ErrInvalidMapping, name, "field name cannot be empty")
	case name == "_id" || name == "_source" || name == "_seq_no" || name == "_primary_term":
		return fieldErr(ErrInvalidMapping, name, "[%s] is a metadata field and cannot be mapped", name)
	case name[0] == '.' || name[len(name)-1] == '.' || strings.Contains(name, ".."):
		return fieldErr(ErrInvalidMapping, name, "field name cannot contain an empty path segment")
	case strings.TrimSpace(name) == "":
		return fieldErr(ErrInvalidMapping, name, "field name cannot be blank")
	}
	return nil
}

// Dynamic returns the dynamic setting.
func (m *Mapping) Dynamic() Dynamic { return m.dynamic }

// Limits returns the limits dynamic updates are held to, defaults filled.
func (m *Mapping) Limits() Limits { return m.limits.OrDefaults() }

// WithLimits returns m with limits l (the index's settings). A mapping
// update with limits set carries them into the merge (Merge).
func (m *Mapping) WithLimits(l Limits) *Mapping {
	out := *m
	out.limits = l
	return &out
}

// Total is what the total fields limit counts: fields and the objects
// their paths imply.
func (m *Mapping) Total() int { return len(m.fields) + len(m.objects) }

// Field returns the mapped field at a dotted path.
func (m *Mapping) Field(name string) (Field, bool) {
	f, ok := m.fields[name]
	return f, ok
}

// Len is the number of leaf fields.
func (m *Mapping) Len() int { return len(m.fields) }

// Names returns the leaf field paths, sorted.
func (m *Mapping) Names() []string {
	return slices.Sorted(maps.Keys(m.fields))
}

// Merge returns m with the fields of update added: new fields are added,
// identical ones kept, and a field whose type or parameters differ is a
// conflict (ErrConflict naming it), as in Elasticsearch's put-mapping. A
// dynamic setting or limits in update replace m's. The limits are not
// checked here (a cluster mapping may already be past a lowered limit):
// the parser holds the fields a document brings to them, and the cluster
// metadata every update. m is not changed.
func (m *Mapping) Merge(update *Mapping) (*Mapping, error) {
	fields := maps.Clone(m.fields)
	for _, name := range update.Names() {
		uf := update.fields[name]
		if old, ok := fields[name]; ok {
			if err := conflict(name, old, uf); err != nil {
				return nil, err
			}
			continue
		}
		fields[name] = uf
	}
	dynamic := m.dynamic
	if update.dynamic != DynamicDefault {
		dynamic = update.dynamic
	}
	limits := m.limits
	if update.limits != (Limits{}) {
		limits = update.limits
	}
	merged, err := New(dynamic, fields)
	if err != nil {
		// A leaf added where the other mapping has an object (or the
		// reverse) is a conflict, not a malformed mapping.
		var fe *FieldError
		if errors.As(err, &fe) {
			return nil, fieldErr(ErrConflict, fe.Field, "%s", fe.Reason)
		}
		return nil, err
	}
	merged.limits = limits
	return merged, nil
}

func conflict(name string, old, new Field) error {
	switch {
	case old.Type != new.Type:
		return fieldErr(ErrConflict, name, "cannot change type from [%s] to [%s]", old.Type, new.Type)
	case old.analyzerName() != new.analyzerName():
		return fieldErr(ErrConflict, name, "cannot change [analyzer] from [%s] to [%s]", old.analyzerName(), new.analyzerName())
	case old.Index != new.Index:
		return fieldErr(ErrConflict, name, "cannot change [index] from [%t] to [%t]", old.Index, new.Index)
	case old.DocValues != new.DocValues:
		return fieldErr(ErrConflict, name, "cannot change [doc_values] from [%t] to [%t]", old.DocValues, new.DocValues)
	case old.Store != new.Store:
		return fieldErr(ErrConflict, name, "cannot change [store] from [%t] to [%t]", old.Store, new.Store)
	}
	return nil
}
