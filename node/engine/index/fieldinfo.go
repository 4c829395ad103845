package index

import (
	"fmt"
	"sort"

	"github.com/sluice-search/sluice/node/engine/document"
)

// IndexOptions says what a field's postings hold.
type IndexOptions uint8

const (
	IndexNone               IndexOptions = iota // not indexed
	IndexDocs                                   // doc ids only (keyword, numeric, _id)
	IndexDocsFreqs                              // + term frequencies
	IndexDocsFreqsPositions                     // + positions (text)
)

// HasFreqs reports whether postings carry term frequencies.
func (o IndexOptions) HasFreqs() bool { return o >= IndexDocsFreqs }

// HasPositions reports whether postings carry positions.
func (o IndexOptions) HasPositions() bool { return o >= IndexDocsFreqsPositions }

// DocValuesType is the column-stride form of a field.
type DocValuesType uint8

const (
	DocValuesNone    DocValuesType = iota
	DocValuesNumeric               // one int64 per doc (for multi-valued fields, the minimum)
	DocValuesSorted                // one term ordinal per doc (for multi-valued, the smallest term)
)

// IDField is the name of the _id field: indexed (IndexDocs) in every segment
// so that an id lookup is one term-dictionary seek per segment.
const IDField = "_id"

// SeqNoField and PrimaryTermField are the columns (numeric doc values, no
// terms) holding each document's sequence number and the primary term
// that wrote it, as Elasticsearch keeps _seq_no and _primary_term: what a
// conditional write (if_seq_no / if_primary_term) compares with once the
// document has left the version map. The writer sets them when it
// sequences the document; an in-place update sets them too.
const (
	SeqNoField       = "_seq_no"
	PrimaryTermField = "_primary_term"
)

// Reserved reports whether name is a metadata field no mapping may use.
func Reserved(name string) bool {
	switch name {
	case IDField, SeqNoField, PrimaryTermField, "_source":
		return true
	}
	return false
}

// FieldInfo describes one field of a segment.
type FieldInfo struct {
	Name         string
	Number       int
	Type         document.FieldType
	IndexOptions IndexOptions
	HasNorms     bool
	DocValues    DocValuesType
}

// FieldInfos is the set of fields of a segment, by name and by number.
// Numbers are dense from 0 in the order fields were added.
type FieldInfos struct {
	byNumber []*FieldInfo
	byName   map[string]*FieldInfo
}

// NewFieldInfos builds FieldInfos from infos whose Numbers are 0..n-1.
func NewFieldInfos(infos []FieldInfo) (*FieldInfos, error) {
	fi := &FieldInfos{byNumber: make([]*FieldInfo, len(infos)), byName: make(map[string]*FieldInfo, len(infos))}
	for i := range infos {
		f := infos[i]
		if f.Number < 0 || f.Number >= len(infos) || fi.byNumber[f.Number] != nil {
			return nil, fmt.Errorf("field %q: bad or duplicate field number %d", f.Name, f.Number)
		}
		if _, dup := fi.byName[f.Name]; dup {
			return nil, fmt.Errorf("field %q: duplicate name", f.Name)
		}
		fi.byNumber[f.Number] = &f
		fi.byName[f.Name] = &f
	}
	return fi, nil
}

// Len is the number of fields.
func (fi *FieldInfos) Len() int { return len(fi.byNumber) }

// ByNumber returns field n (0 <= n < Len()).
func (fi *FieldInfos) ByNumber(n int) *FieldInfo { return fi.byNumber[n] }

// ByName returns the named field, or nil.
func (fi *FieldInfos) ByName(name string) *FieldInfo { return fi.byName[name] }

// Names returns the field names sorted by name.
func (fi *FieldInfos) Names() []string {
	names := make([]string, 0, len(fi.byNumber))
	for _, f := range fi.byNumber {
		names = append(names, f.Name)
	}
	sort.Strings(names)
	return names
}
