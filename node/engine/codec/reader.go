package codec

import (
	"fmt"
	"math"
	"sync"

	"github.com/blevesearch/vellum"
	"github.com/sluice-search/sluice/node/engine/document"
	"github.com/sluice-search/sluice/node/engine/index"
	"github.com/sluice-search/sluice/node/engine/store"
)

// segmentReader is an open Sluice10 segment. Everything it hands out reads
// the mmap'd file bodies directly.
type segmentReader struct {
	info   *index.SegmentInfo
	maxDoc int
	fis    *index.FieldInfos
	inputs []store.IndexInput
	files  map[string][]byte // ext -> whole file
	bodies map[string][]byte // ext -> body between header and footer
	doc    []byte            // body of .doc
	pos    []byte            // body of .pos
	// termsFile names .tim in errors without building the name per lookup.
	termsFile string
	// impacts: the postings keep competitive impacts per block (format
	// version 3); skipSize is the skip entry size of the version.
	impacts  bool
	skipSize int

	fields        map[string]*fieldReader
	stored        storedMeta
	storedVersion int // format version of .fdt: 1 has no _routing
	heapEst       int64
	// storedPool recycles stored-fields readers for Document: random
	// access (a get, a search's fetch phase) otherwise decompresses every
	// doc's block into a fresh buffer — a third of a loaded node's
	// allocation in a profile, and with it the GC's share of the CPU.
	storedPool sync.Pool
}

type fieldReader struct {
	seg  *segmentReader
	info *index.FieldInfo

	// terms
	hasTerms                     bool
	numTerms, sumDocFreq, sumTTF int64
	docCount                     int
	termMeta                     []byte
	fst                          *vellum.FST
	norms                        index.NormsReader
	numeric                      index.NumericDocValues
	sorted                       index.SortedDocValues
	hasFreqs, hasPos             bool
}

func openSegment(dir store.Directory, info *index.SegmentInfo) (_ *segmentReader, err error) {
	sr := &segmentReader{info: info, maxDoc: info.MaxDoc, files: map[string][]byte{}, bodies: map[string][]byte{}, fields: map[string]*fieldReader{}}
	defer func() {
		if err != nil {
			sr.Close()
		}
	}()
	termsVersion := 0
	for _, ext := range []string{extMeta, extTerms, extDocs, extPos, extNorms, extDV, extStored} {
		name := fileName(info.Name, ext)
		in, err := dir.OpenInput(name)
		if err != nil {
			return nil, fmt.Errorf("codec: open segment %s: %w", info.Name, err)
		}
		sr.inputs = append(sr.inputs, in)
		data := in.Bytes()
		body, version, err := checkHeader(data, name, ext, info.ID)
		if err != nil {
			return nil, err
		}
		switch ext {
		case extStored:
			sr.storedVersion = version
		case extTerms:
			termsVersion = version
		case extDocs:
			// .tim's one-block entries and .doc's skip entries follow
			// one layout, so their versions agree on impacts.
			sr.impacts = version >= 3
			if (termsVersion >= 3) != sr.impacts {
				return nil, corruptf(name, 5+len(Name), "format version %d disagrees with the term dictionary's (%d)", version, termsVersion)
			}
			sr.skipSize = skipEntrySizeV2
			if sr.impacts {
				sr.skipSize = skipEntrySize
			}
		}
		// Metadata and the term dictionary are read without further
		// checks on every lookup (the FST decoder trusts its bytes), so
		// they are checksummed in full at open, as Lucene does for its
		// terms index and metadata; the big files are checked by
		// CheckIntegrity and decoded with bounds checks.
		if ext == extMeta || ext == extTerms {
			if err := verifyChecksum(data, name); err != nil {
				return nil, err
			}
		}
		if ext == extStored {
			// Fetches read one block per hit, far apart: read-ahead
			// would mostly fetch pages nobody reads (store.Advise).
			if err := store.Advise(in, store.AdviceRandom); err != nil {
				return nil, err
			}
		}
		sr.files[ext], sr.bodies[ext] = data, body
	}
	sr.doc, sr.pos = sr.bodies[extDocs], sr.bodies[extPos]
	sr.termsFile = fileName(info.Name, extTerms)
	if err := sr.readMeta(); err != nil {
		return nil, err
	}
	return sr, nil
}

func (sr *segmentReader) readMeta() error {
	name := fileName(sr.info.Name, extMeta)
	r := &reader{b: sr.bodies[extMeta], file: name, base: headerLen(extMeta)}
	if md := r.uint(math.MaxInt32, "maxDoc"); md != sr.maxDoc && r.err == nil {
		return corruptf(name, r.base, "maxDoc %d, segment info says %d", md, sr.maxDoc)
	}
	n := r.uint(1<<20, "field count")
	infos := make([]index.FieldInfo, 0, n)
	for i := 0; i < n && r.err == nil; i++ {
		fi := index.FieldInfo{Name: r.str(), Number: r.uint(n-1, "field number")}
		fi.Type = document.FieldType(r.byte1())
		fi.IndexOptions = index.IndexOptions(r.byte1())
		fi.HasNorms = r.byte1() != 0
		fi.DocValues = index.DocValuesType(r.byte1())
		if fi.IndexOptions > index.IndexDocsFreqsPositions || fi.DocValues > index.DocValuesSorted {
			r.fail("field %q: bad options", fi.Name)
		}
		infos = append(infos, fi)
	}
	if r.err != nil {
		return r.err
	}
	fis, err := index.NewFieldInfos(infos)
	if err != nil {
		return corruptf(name, r.off, "%v", err)
	}
	sr.fis = fis
	for i := 0; i < n && r.err == nil; i++ {
		fi := fis.ByNumber(i)
		f := &fieldReader{seg: sr, info: fi, hasFreqs: fi.IndexOptions.HasFreqs(), hasPos: fi.IndexOptions.HasPositions()}
		sr.fields[fi.Name] = f
		sr.heapEst += 256
		if fi.IndexOptions != index.IndexNone {
			if err := f.readTermsMeta(r); err != nil {
				return err
			}
		}
		if fi.HasNorms {
			f.norms = readNormsMeta(r, sr.bodies[extNorms], sr.maxDoc)
		}
		switch fi.DocValues {
		case index.DocValuesNumeric:
			f.numeric = readNumericMeta(r, sr.bodies[extDV], sr.maxDoc)
		case index.DocValuesSorted:
			f.sorted = readSortedMeta(r, sr.bodies[extDV], sr.maxDoc)
		}
	}
	sr.stored = readStoredMeta(r, sr.bodies[extStored], sr.maxDoc, fileName(sr.info.Name, extStored), sr.storedVersion >= 2)
	if r.err == nil && r.off != len(r.b) {
		r.fail("%d trailing bytes", len(r.b)-r.off)
	}
	return r.err
}

func (f *fieldReader) readTermsMeta(r *reader) error {
	if r.byte1() == 0 {
		return r.err
	}
	f.hasTerms = true
	f.numTerms = int64(r.uint(math.MaxInt64, "term count"))
	f.docCount = r.uint(f.seg.maxDoc, "doc count")
	f.sumDocFreq = int64(r.uvarint())
	f.sumTTF = int64(r.uvarint())
	tim := f.seg.bodies[extTerms]
	f.termMeta = r.region(tim, "term metadata")
	fstBytes := r.region(tim, "FST")
	if r.err != nil {
		return r.err
	}
	if f.sumDocFreq < f.numTerms || f.sumTTF < f.sumDocFreq || f.sumDocFreq > f.numTerms*int64(f.seg.maxDoc) {
		r.fail("field %q: inconsistent term statistics", f.info.Name)
		return r.err
	}
	fst, err := loadFST(fstBytes)
	if err != nil {
		return corruptf(fileName(f.seg.info.Name, extTerms), 0, "field %q: FST: %v", f.info.Name, err)
	}
	if int64(fst.Len()) != f.numTerms {
		return corruptf(fileName(f.seg.info.Name, extTerms), 0, "field %q: FST has %d terms, metadata says %d", f.info.Name, fst.Len(), f.numTerms)
	}
	f.fst = fst
	f.seg.heapEst += 512
	return nil
}

// loadFST wraps vellum.Load (which reads the mmap'd bytes in place) with a
// last-line recover: the bytes were checksummed, so this only guards
// against a vellum bug on unusual input.
func loadFST(b []byte) (fst *vellum.FST, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("decode: %v", p)
		}
	}()
	return vellum.Load(b)
}

// Info implements index.SegmentReader.
func (sr *segmentReader) Info() *index.SegmentInfo { return sr.info }

// RAMBytesUsed implements index.SegmentReader (an estimate of the small
// per-field structures; file bytes are mmap'd).
func (sr *segmentReader) RAMBytesUsed() int64 { return sr.heapEst }

// Close implements index.SegmentReader.
func (sr *segmentReader) Close() error {
	var first error
	for _, in := range sr.inputs {
		if err := in.Close(); err != nil && first == nil {
			first = err
		}
	}
	sr.inputs = nil
	return first
}

// FieldInfos implements index.LeafReader.
func (sr *segmentReader) FieldInfos() *index.FieldInfos { return sr.fis }

// MaxDoc implements index.LeafReader.
func (sr *segmentReader) MaxDoc() int { return sr.maxDoc }

// Terms implements index.LeafReader.
func (sr *segmentReader) Terms(field string) index.Terms {
	if f := sr.fields[field]; f != nil && f.hasTerms {
		return f
	}
	return nil
}

// Norms implements index.LeafReader.
func (sr *segmentReader) Norms(field string) index.NormsReader {
	if f := sr.fields[field]; f != nil {
		return f.norms
	}
	return nil
}

// NumericDocValues implements index.LeafReader.
func (sr *segmentReader) NumericDocValues(field string) index.NumericDocValues {
	if f := sr.fields[field]; f != nil && f.numeric != nil {
		return f.numeric
	}
	return nil
}

// SortedDocValues implements index.LeafReader.
func (sr *segmentReader) SortedDocValues(field string) index.SortedDocValues {
	if f := sr.fields[field]; f != nil && f.sorted != nil {
		return f.sorted
	}
	return nil
}

// StoredFields implements index.LeafReader.
func (sr *segmentReader) StoredFields() index.StoredFieldsReader {
	return &storedReader{m: &sr.stored, block: -1}
}

// Document implements index.DocumentReader: one doc through a pooled
// stored-fields reader, whose block buffer is reused and whose cached
// block serves the next read of a doc in it.
func (sr *segmentReader) Document(doc int, dst *index.StoredDoc) error {
	s, _ := sr.storedPool.Get().(*storedReader)
	if s == nil {
		s = &storedReader{m: &sr.stored, block: -1}
	}
	err := s.Document(doc, dst)
	sr.storedPool.Put(s)
	return err
}

// Terms implementation.

func (f *fieldReader) Size() int64                      { return f.numTerms }
func (f *fieldReader) DocCount() int                    { return f.docCount }
func (f *fieldReader) SumDocFreq() int64                { return f.sumDocFreq }
func (f *fieldReader) SumTotalTermFreq() int64          { return f.sumTTF }
func (f *fieldReader) IndexOptions() index.IndexOptions { return f.info.IndexOptions }

func (f *fieldReader) Iterator() index.TermsEnum { return &termsEnum{f: f} }
