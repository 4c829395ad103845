package dwpt

import (
	"errors"
	"fmt"
	"sync"

	"github.com/sluice-search/sluice/node/engine/document"
	"github.com/sluice-search/sluice/node/engine/index"
)

// ErrInvalidDocument wraps every reason AddDocument rejects a document. A
// rejected document leaves the DWPT unchanged.
var ErrInvalidDocument = errors.New("invalid document")

// ErrFull is returned when a DWPT cannot take more data (its address space
// or doc count limit); the writer must flush it first.
var ErrFull = errors.New("in-memory segment full")

// MaxDocs bounds a DWPT's doc count well below int32 doc ids.
const MaxDocs = 1 << 30

// SourceField is the stored _source, reserved like index.IDField.
const SourceField = "_source"

// posting is the in-RAM state of one term of one field (Lucene's
// ParallelPostingsArray rows, kept as one struct so a token touches one
// cache line). The doc stream holds every doc but the last one; the last
// doc's delta and freq stay here until the next doc with the term arrives,
// and readers emit it from here.
type posting struct {
	byteStart   int32 // first slice of the doc stream; positions at +firstLevel
	docUpto     int32 // doc stream write address
	posUpto     int32 // position stream write address
	lastDoc     int32
	lastDocCode int32 // lastDoc minus the doc written before it
	freq        int32 // freq of the term in lastDoc
	lastPos     int32
	docFreq     int32
	ttf         int32
}

// perField holds one field's inverted terms, norms and doc values.
type perField struct {
	info     index.FieldInfo
	terms    termHash
	postings paged[posting]

	sumDocFreq, sumTTF int64
	docCount           int
	lastDocSeen        int32 // for docCount and duplicate-field checks
	validatedDoc       int32

	norms []uint8

	numeric    []int64
	numericHas []uint64

	sorted    termHash // sorted doc values' distinct values
	sortedOrd []int32  // per doc: value id, -1 if none

	// flush-time views, computed once by whichever reader asks first
	sortOnce  sync.Once
	sortedIDs []int32
	dvOnce    sync.Once
	dvIDs     []int32 // sorted doc values: ord -> value id
	dvOrdOf   []int32 // value id -> ord
}

// storedRef locates a doc's stored _id, _routing and _source, consecutive
// in the stored chunks. Lengths of _id and _routing are at most
// MaxTermLength, so they share a word and the ref stays 16 bytes.
type storedRef struct {
	chunk, off        int32
	idLen, routingLen uint16
	srcN              int32
}

const storedChunkSize = 256 << 10

// DWPT is an in-memory segment being built (Lucene's
// DocumentsWriterPerThread + FreqProxTermsWriter). One goroutine at a time
// adds documents; once the writer stops adding, the DWPT is a read-only
// index.LeafReader that a Codec writes as a segment.
type DWPT struct {
	pool    *bytePool
	fields  []*perField
	byName  map[string]*perField
	numDocs int32

	stored     paged[storedRef]
	chunks     [][]byte
	chunkBytes int64

	deleted  []uint64 // bit set = deleted by a buffered delete
	delCount int

	newFields []string // scratch for validation

	seqNo, term *perField // the _seq_no and _primary_term columns, once set

	infosOnce sync.Once
	infos     *index.FieldInfos
}

// New returns an empty DWPT taking byte blocks from alloc (nil: fresh
// blocks).
func New(alloc *Allocator) *DWPT {
	d := &DWPT{pool: &bytePool{alloc: alloc}, byName: make(map[string]*perField)}
	d.stored.pool = &refPages
	d.field(index.IDField, document.Keyword, true)
	return d
}

// NumDocs is the number of docs added, deleted ones included.
func (d *DWPT) NumDocs() int { return int(d.numDocs) }

// field returns the named field, creating it with options for typ.
func (d *DWPT) field(name string, typ document.FieldType, isID bool) *perField {
	if f := d.byName[name]; f != nil {
		return f
	}
	f := &perField{lastDocSeen: -1, validatedDoc: -1}
	f.postings.pool = &postingPages
	f.info = index.FieldInfo{Name: name, Number: len(d.fields), Type: typ}
	switch {
	case isID:
		f.info.IndexOptions = index.IndexDocs
	case typ == document.Text:
		f.info.IndexOptions = index.IndexDocsFreqsPositions
		f.info.HasNorms = true
	case typ == document.Keyword:
		f.info.IndexOptions = index.IndexDocs
		f.info.DocValues = index.DocValuesSorted
		f.sorted.init(d.pool)
	default: // numeric types
		f.info.IndexOptions = index.IndexDocs
		f.info.DocValues = index.DocValuesNumeric
	}
	f.terms.init(d.pool)
	d.fields = append(d.fields, f)
	d.byName[name] = f
	return f
}

// validate checks doc completely before anything is inverted, so a bad
// document never leaves half its terms behind.
func (d *DWPT) validate(doc *document.Document) error {
	if len(doc.ID) == 0 {
		return fmt.Errorf("%w: empty _id", ErrInvalidDocument)
	}
	if len(doc.ID) > MaxTermLength {
		return fmt.Errorf("%w: _id longer than %d bytes", ErrInvalidDocument, MaxTermLength)
	}
	if len(doc.Routing) > MaxTermLength {
		return fmt.Errorf("%w: _routing longer than %d bytes", ErrInvalidDocument, MaxTermLength)
	}
	if d.numDocs >= MaxDocs {
		return ErrFull
	}
	// Worst case growth of the pool for this doc: every token a new term in
	// a new pair of slices plus stream bytes; stay inside int32 addresses.
	if int64(len(d.pool.blocks)+2)*BlockSize > maxPoolBytes {
		return ErrFull
	}
	d.newFields = d.newFields[:0]
	for i := range doc.Fields {
		fl := &doc.Fields[i]
		if fl.Name == "" || index.Reserved(fl.Name) {
			return fmt.Errorf("%w: field name %q is reserved or empty", ErrInvalidDocument, fl.Name)
		}
		if fl.Type < document.Text || fl.Type > document.Boolean {
			return fmt.Errorf("%w: field %q has unknown type %d", ErrInvalidDocument, fl.Name, fl.Type)
		}
		if f := d.byName[fl.Name]; f != nil {
			if f.info.Type != fl.Type {
				return fmt.Errorf("%w: field %q is %s in this segment, got %s", ErrInvalidDocument, fl.Name, f.info.Type, fl.Type)
			}
			if f.validatedDoc == d.numDocs {
				return fmt.Errorf("%w: field %q appears twice", ErrInvalidDocument, fl.Name)
			}
			f.validatedDoc = d.numDocs
		} else {
			for _, n := range d.newFields {
				if n == fl.Name {
					return fmt.Errorf("%w: field %q appears twice", ErrInvalidDocument, fl.Name)
				}
			}
			d.newFields = append(d.newFields, fl.Name)
		}
		last := int32(0)
		for j := range fl.Tokens {
			t := &fl.Tokens[j]
			if len(t.Term) > MaxTermLength {
				return fmt.Errorf("%w: field %q has a term longer than %d bytes", ErrInvalidDocument, fl.Name, MaxTermLength)
			}
			if fl.Type == document.Text {
				if t.Position < last {
					return fmt.Errorf("%w: field %q: positions go backwards (%d after %d)", ErrInvalidDocument, fl.Name, t.Position, last)
				}
				last = t.Position
			}
		}
	}
	return nil
}

// AddDocument inverts doc into the DWPT and returns its doc id. On error the
// DWPT is unchanged. doc is not retained.
func (d *DWPT) AddDocument(doc *document.Document) (int, error) {
	if err := d.validate(doc); err != nil {
		// The next doc reuses this doc id: undo validation's stamps so it
		// is not mistaken for a duplicate field.
		for _, f := range d.fields {
			if f.validatedDoc == d.numDocs {
				f.validatedDoc = -1
			}
		}
		return 0, err
	}
	docID := d.numDocs
	d.fields[0].addDocsOnly(d.pool, doc.ID, docID)
	for i := range doc.Fields {
		fl := &doc.Fields[i]
		f := d.field(fl.Name, fl.Type, false)
		if f.info.IndexOptions.HasPositions() {
			for j := range fl.Tokens {
				f.addWithPositions(d.pool, fl.Tokens[j].Term, docID, fl.Tokens[j].Position)
			}
		} else {
			for j := range fl.Tokens {
				f.addDocsOnly(d.pool, fl.Tokens[j].Term, docID)
			}
		}
		if f.info.HasNorms {
			n := int(fl.Length)
			if n == 0 {
				n = len(fl.Tokens)
			}
			f.norms = extend(f.norms, int(docID))
			f.norms = append(f.norms, index.EncodeNorm(n))
		}
		switch f.info.DocValues {
		case index.DocValuesNumeric:
			if len(fl.Numerics) > 0 {
				f.setNumeric(docID, fl.Numerics)
			}
		case index.DocValuesSorted:
			if len(fl.Keywords) > 0 {
				f.setSorted(docID, fl.Keywords)
			}
		}
	}
	d.storeDoc(doc.ID, doc.Routing, doc.Source)
	d.numDocs++
	return int(docID), nil
}

func extend[T any](s []T, n int) []T {
	var zero T
	for len(s) < n {
		s = append(s, zero)
	}
	return s
}

func (f *perField) seeDoc(doc int32) {
	if f.lastDocSeen != doc {
		f.lastDocSeen = doc
		f.docCount++
	}
}

// addDocsOnly indexes term in doc for an IndexDocs field: the doc stream
// holds doc deltas only; repeats within a doc are ignored.
func (f *perField) addDocsOnly(p *bytePool, term []byte, doc int32) {
	f.seeDoc(doc)
	id, isNew := f.terms.add(term)
	if isNew {
		start := p.newSlices(1)
		f.postings.append(posting{byteStart: start, docUpto: start, lastDoc: doc, lastDocCode: doc, freq: 1, docFreq: 1, ttf: 1})
		f.sumDocFreq++
		f.sumTTF++
		return
	}
	pt := f.postings.at(id)
	if pt.lastDoc == doc {
		return
	}
	pt.docUpto = p.writeVInt(pt.docUpto, uint32(pt.lastDocCode))
	pt.lastDocCode = doc - pt.lastDoc
	pt.lastDoc = doc
	pt.docFreq++
	pt.ttf++
	f.sumDocFreq++
	f.sumTTF++
}

// addWithPositions indexes one token of a text field: the doc stream holds
// (delta<<1 | freq==1) [freq], the position stream position deltas.
func (f *perField) addWithPositions(p *bytePool, term []byte, doc, pos int32) {
	f.seeDoc(doc)
	f.sumTTF++
	id, isNew := f.terms.add(term)
	if isNew {
		start := p.newSlices(2)
		posUpto := p.writeVInt(start+firstLevel, uint32(pos))
		f.postings.append(posting{byteStart: start, docUpto: start, posUpto: posUpto,
			lastDoc: doc, lastDocCode: doc, freq: 1, lastPos: pos, docFreq: 1, ttf: 1})
		f.sumDocFreq++
		return
	}
	pt := f.postings.at(id)
	pt.ttf++
	if pt.lastDoc == doc {
		pt.freq++
		pt.posUpto = p.writeVInt(pt.posUpto, uint32(pos-pt.lastPos))
		pt.lastPos = pos
		return
	}
	pt.docUpto = writeDocCode(p, pt.docUpto, pt.lastDocCode, pt.freq)
	pt.lastDocCode = doc - pt.lastDoc
	pt.lastDoc = doc
	pt.freq = 1
	pt.docFreq++
	f.sumDocFreq++
	pt.posUpto = p.writeVInt(pt.posUpto, uint32(pos))
	pt.lastPos = pos
}

func writeDocCode(p *bytePool, addr, delta, freq int32) int32 {
	if freq == 1 {
		return p.writeVInt(addr, uint32(delta)<<1|1)
	}
	addr = p.writeVInt(addr, uint32(delta)<<1)
	return p.writeVInt(addr, uint32(freq))
}

// SetSeqNo records doc's sequence number and primary term in the reserved
// _seq_no and _primary_term columns (index.SeqNoField). The writer calls
// it once the doc is sequenced, which happens after inversion and in
// doc order, so each call appends to the columns.
func (d *DWPT) SetSeqNo(doc int, seq, term int64) {
	if d.seqNo == nil {
		d.seqNo = d.field(index.SeqNoField, document.Long, false)
		d.term = d.field(index.PrimaryTermField, document.Long, false)
	}
	d.seqNo.setNumericOne(int32(doc), seq)
	d.term.setNumericOne(int32(doc), term)
}

// setNumeric keeps the minimum of a multi-valued field (index.DocValuesNumeric).
func (f *perField) setNumeric(doc int32, vals []int64) {
	v := vals[0]
	for _, x := range vals[1:] {
		v = min(v, x)
	}
	f.setNumericOne(doc, v)
}

func (f *perField) setNumericOne(doc int32, v int64) {
	f.numeric = extend(f.numeric, int(doc))
	f.numeric = append(f.numeric, v)
	w := int(doc) >> 6
	f.numericHas = extend(f.numericHas, w+1)
	f.numericHas[w] |= 1 << (uint(doc) & 63)
}

// setSorted keeps the smallest value of a multi-valued keyword field.
func (f *perField) setSorted(doc int32, vals [][]byte) {
	v := vals[0]
	for _, x := range vals[1:] {
		if string(x) < string(v) {
			v = x
		}
	}
	if len(v) > MaxTermLength {
		v = v[:MaxTermLength]
	}
	id, _ := f.sorted.add(v)
	for len(f.sortedOrd) < int(doc) {
		f.sortedOrd = append(f.sortedOrd, -1)
	}
	f.sortedOrd = append(f.sortedOrd, id)
}

func (d *DWPT) storeDoc(id, routing, src []byte) {
	n := len(id) + len(routing) + len(src)
	var c []byte
	if len(d.chunks) > 0 {
		c = d.chunks[len(d.chunks)-1]
	}
	if c == nil || len(c)+n > cap(c) {
		size := max(storedChunkSize, n)
		if size == storedChunkSize {
			c = chunkPool.get(size)
		} else {
			c = make([]byte, 0, size)
		}
		d.chunks = append(d.chunks, c)
		d.chunkBytes += int64(size)
	}
	ref := storedRef{chunk: int32(len(d.chunks) - 1), off: int32(len(c)), idLen: uint16(len(id)), routingLen: uint16(len(routing)), srcN: int32(len(src))}
	c = append(c, id...)
	c = append(c, routing...)
	c = append(c, src...)
	d.chunks[len(d.chunks)-1] = c
	d.stored.append(ref)
}

// DeleteID marks deleted every doc below docIDUpto whose _id is id and
// returns how many were newly deleted. Docs added later keep their id
// alive: this is how a delete or update that happened after doc n was added
// but before doc m reaches docs [0, n] only (Lucene's docIDUpto).
func (d *DWPT) DeleteID(id []byte, docIDUpto int) int {
	f := d.fields[0]
	t := f.terms.find(id)
	if t < 0 {
		return 0
	}
	var it docIter
	it.init(d.pool, f.postings.at(t), false)
	before := d.delCount
	for doc := it.next(); doc < docIDUpto && doc != index.NoMoreDocs; doc = it.next() {
		d.DeleteDoc(doc)
	}
	return d.delCount - before
}

// DeleteDoc marks one doc deleted (a document added and then refused, such
// as a create whose id already exists).
func (d *DWPT) DeleteDoc(doc int) {
	w := doc >> 6
	d.deleted = extend(d.deleted, w+1)
	m := uint64(1) << (uint(doc) & 63)
	if d.deleted[w]&m == 0 {
		d.deleted[w] |= m
		d.delCount++
	}
}

// HasID reports whether some doc (deleted or not) carries id.
func (d *DWPT) HasID(id []byte) bool { return d.fields[0].terms.find(id) >= 0 }

// DelCount is the number of docs deleted by DeleteID.
func (d *DWPT) DelCount() int { return d.delCount }

// LiveDocs returns the live docs of the flushed segment, or nil if every doc
// is live.
func (d *DWPT) LiveDocs() *index.FixedBitSet {
	if d.delCount == 0 {
		return nil
	}
	n := int(d.numDocs)
	words := make([]uint64, (n+63)/64)
	for i := range words {
		var del uint64
		if i < len(d.deleted) {
			del = d.deleted[i]
		}
		words[i] = ^del
	}
	return index.FixedBitSetFromWords(words, n)
}

// RAMBytesUsed is the heap held by the DWPT: byte blocks, postings rows,
// hash tables, norms, doc values and stored documents.
func (d *DWPT) RAMBytesUsed() int64 {
	b := d.pool.ramBytes() + d.chunkBytes + d.stored.ramBytes() + int64(cap(d.deleted))*8 + int64(len(d.fields))*256
	for _, f := range d.fields {
		b += f.terms.ramBytes() + f.postings.ramBytes() + int64(cap(f.norms)) +
			int64(cap(f.numeric))*8 + int64(cap(f.numericHas))*8 + f.sorted.ramBytes() + int64(cap(f.sortedOrd))*4
	}
	return b
}

// Release returns the DWPT's byte blocks to its allocator. The DWPT (and
// every enum or slice it handed out) must not be used afterwards.
func (d *DWPT) Release() {
	d.pool.release()
	for _, f := range d.fields {
		f.terms.release()
		f.sorted.release()
		f.postings.release()
		for _, s := range [][]int32{f.sortedIDs, f.dvIDs, f.dvOrdOf} {
			int32Arrays.put(s)
		}
	}
	for _, c := range d.chunks {
		chunkPool.put(c, storedChunkSize)
	}
	d.stored.release()
	d.fields = nil
	d.byName = nil
	d.seqNo, d.term = nil, nil
	d.chunks = nil
}

// docIter walks the docs (and freqs) of one posting: the doc stream, then
// the pending last doc.
type docIter struct {
	r         sliceReader
	pt        *posting
	freqs     bool
	doc, freq int
	lastDone  bool
}

func (it *docIter) init(p *bytePool, pt *posting, freqs bool) {
	it.r.init(p, pt.byteStart, pt.docUpto)
	it.pt, it.freqs, it.doc, it.freq, it.lastDone = pt, freqs, 0, 0, false
}

func (it *docIter) next() int {
	if !it.r.eof() {
		code := it.r.readVInt()
		if !it.freqs {
			it.doc += int(code)
			it.freq = 1
			return it.doc
		}
		it.doc += int(code >> 1)
		if code&1 != 0 {
			it.freq = 1
		} else {
			it.freq = int(it.r.readVInt())
		}
		return it.doc
	}
	if it.lastDone {
		return index.NoMoreDocs
	}
	it.lastDone = true
	it.doc = int(it.pt.lastDoc)
	it.freq = int(it.pt.freq)
	return it.doc
}
