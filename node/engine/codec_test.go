package engine

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/sluice-search/sluice/node/engine/document"
	"github.com/sluice-search/sluice/node/engine/dwpt"
	"github.com/sluice-search/sluice/node/engine/index"
	"github.com/sluice-search/sluice/node/engine/store"
)

// dwptCodec is a codec for the engine's tests that does not depend on the
// on-disk format: WriteSegment re-inverts the source LeafReader into a fresh
// DWPT (which is itself a LeafReader) kept in memory, and writes one small
// file per segment so that file reference counting is observable in the
// Directory. It exercises the writer's paths independently of the codec.
type dwptCodec struct {
	mu   sync.Mutex
	segs map[string]*dwpt.DWPT
}

func newDWPTCodec() *dwptCodec { return &dwptCodec{segs: map[string]*dwpt.DWPT{}} }

func (c *dwptCodec) Name() string { return "dwpt-test" }

func (c *dwptCodec) WriteSegment(ctx context.Context, dir store.Directory, info *index.SegmentInfo, src index.LeafReader, ioctx store.IOContext) error {
	out := dwpt.New(nil)
	if _, err := reinvertInto(out, src, nil); err != nil {
		return err
	}
	name := info.Name + ".seg"
	o, err := dir.CreateOutput(name, ioctx)
	if err != nil {
		return err
	}
	if _, err := o.Write([]byte(info.Name)); err != nil {
		return err
	}
	if err := o.Close(); err != nil {
		return err
	}
	info.Files = []string{name}
	c.mu.Lock()
	c.segs[info.Name] = out
	c.mu.Unlock()
	return nil
}

func (c *dwptCodec) OpenSegment(dir store.Directory, info *index.SegmentInfo) (index.SegmentReader, error) {
	c.mu.Lock()
	d := c.segs[info.Name]
	c.mu.Unlock()
	if d == nil {
		return nil, fmt.Errorf("segment %s: %w", info.Name, index.ErrCorrupt)
	}
	in, err := dir.OpenInput(info.Name + ".seg")
	if err != nil {
		return nil, err
	}
	return &dwptSegment{DWPT: d, info: info, in: in}, nil
}

func (c *dwptCodec) WriteLiveDocs(dir store.Directory, info *index.SegmentInfo, gen int64, live *index.FixedBitSet, ioctx store.IOContext) (string, error) {
	name := fmt.Sprintf("%s_%d.liv", info.Name, gen)
	o, err := dir.CreateOutput(name, ioctx)
	if err != nil {
		return "", err
	}
	for _, w := range live.Words() {
		if _, err := o.Write(binary.LittleEndian.AppendUint64(nil, w)); err != nil {
			return "", err
		}
	}
	return name, o.Close()
}

func (c *dwptCodec) ReadLiveDocs(dir store.Directory, info *index.SegmentInfo, gen int64) (*index.FixedBitSet, error) {
	in, err := dir.OpenInput(fmt.Sprintf("%s_%d.liv", info.Name, gen))
	if err != nil {
		return nil, err
	}
	defer in.Close()
	b := in.Bytes()
	words := make([]uint64, len(b)/8)
	for i := range words {
		words[i] = binary.LittleEndian.Uint64(b[i*8:])
	}
	return index.FixedBitSetFromWords(words, info.MaxDoc), nil
}

type dwptSegment struct {
	*dwpt.DWPT
	info   *index.SegmentInfo
	in     store.IndexInput
	closed bool
}

func (s *dwptSegment) Info() *index.SegmentInfo { return s.info }
func (s *dwptSegment) RAMBytesUsed() int64      { return s.DWPT.RAMBytesUsed() }
func (s *dwptSegment) Close() error {
	if s.closed {
		return fmt.Errorf("segment %s closed twice", s.info.Name)
	}
	s.closed = true
	return s.in.Close()
}

func testCodec(t testing.TB) index.Codec { return newDWPTCodec() }

// reinvertInto adds src's docs that are live (live nil: all) to out, by
// rebuilding each document's fields from the postings, doc values and stored
// fields, and returns the new doc id of each src doc (-1 if skipped).
func reinvertInto(out *dwpt.DWPT, src index.LeafReader, live *index.FixedBitSet) ([]int, error) {
	docs := make([]document.Document, src.MaxDoc())
	fis := src.FieldInfos()
	for n := range fis.Len() {
		fi := fis.ByNumber(n)
		if fi.Name == index.IDField {
			continue
		}
		for d := range docs {
			docs[d].Fields = append(docs[d].Fields, document.Field{Name: fi.Name, Type: fi.Type})
		}
		if t := src.Terms(fi.Name); t != nil {
			te := t.Iterator()
			var pe index.PostingsEnum
			for te.Next() {
				term := slices.Clone(te.Term())
				pe = te.Postings(pe, index.PostingsPositions)
				for d := pe.NextDoc(); d != index.NoMoreDocs; d = pe.NextDoc() {
					f := &docs[d].Fields[len(docs[d].Fields)-1]
					for range pe.Freq() {
						pos := 0
						if fi.IndexOptions.HasPositions() {
							pos = pe.NextPosition()
						}
						f.Tokens = append(f.Tokens, document.Token{Term: term, Position: int32(pos)})
					}
				}
			}
		}
		if dv := src.NumericDocValues(fi.Name); dv != nil {
			for d := range docs {
				if v, ok := dv.Get(d); ok {
					f := &docs[d].Fields[len(docs[d].Fields)-1]
					f.Numerics = append(f.Numerics, v)
				}
			}
		}
		if dv := src.SortedDocValues(fi.Name); dv != nil {
			for d := range docs {
				if o := dv.Ord(d); o >= 0 {
					f := &docs[d].Fields[len(docs[d].Fields)-1]
					f.Keywords = append(f.Keywords, slices.Clone(dv.LookupOrd(o)))
				}
			}
		}
	}
	docMap := make([]int, len(docs))
	sf := src.StoredFields()
	var sd index.StoredDoc
	for d := range docs {
		if err := sf.Document(d, &sd); err != nil {
			return nil, err
		}
		doc := &docs[d]
		doc.ID, doc.Source = slices.Clone(sd.ID), slices.Clone(sd.Source)
		fields := doc.Fields[:0]
		for _, f := range doc.Fields {
			if len(f.Tokens) > 0 || len(f.Numerics) > 0 || len(f.Keywords) > 0 {
				slices.SortStableFunc(f.Tokens, func(a, b document.Token) int { return int(a.Position - b.Position) })
				fields = append(fields, f)
			}
		}
		doc.Fields = fields
		if live != nil && !live.Get(d) {
			docMap[d] = -1
			continue
		}
		nd, err := out.AddDocument(doc)
		if err != nil {
			return nil, fmt.Errorf("re-invert doc %d: %w", d, err)
		}
		docMap[d] = nd
	}
	return docMap, nil
}

// testMerger is a SegmentMerger for the engine's tests: it re-inverts the
// inputs' live docs into one DWPT.
func testMerger(ctx context.Context, inputs []MergeInput) (index.LeafReader, DocMap, error) {
	out := dwpt.New(nil)
	maps := make([][]int, len(inputs))
	for i, in := range inputs {
		m, err := reinvertInto(out, in.Reader, in.Live)
		if err != nil {
			return nil, nil, err
		}
		maps[i] = m
	}
	return out, func(input, doc int) int { return maps[input][doc] }, nil
}
