package codec

import (
	"encoding/binary"
	"fmt"
	"strconv"

	"github.com/sluice-search/sluice/node/engine/document"
	"github.com/sluice-search/sluice/node/engine/index"
	"github.com/sluice-search/sluice/node/engine/store"
)

// extDVUpdates is a segment's in-place doc-values updates generation.
const extDVUpdates = "dvu"

// DocValuesUpdatesFileName is the file of doc-values updates generation gen
// of a segment.
func DocValuesUpdatesFileName(segment string, gen int64) string {
	return segment + "_" + strconv.FormatInt(gen, 36) + "." + extDVUpdates
}

// WriteDocValuesUpdates implements index.Codec. Layout, after the header
// (format version 4):
//
//	maxDoc u32 | fields uvarint | per field:
//	  name length uvarint, name, type byte, count uvarint,
//	  count docs u32 (ascending, each < maxDoc), count values u64
//	  keyword fields: terms uvarint, per term: length uvarint, bytes
//	    (values index the terms)
//
// then the footer (CRC32 of everything before it). Small by design: one
// entry per updated doc, not per doc of the segment; fixed width so that
// OpenDocValuesUpdates serves the arrays where they lie (mmap'd), off the
// heap. Versions 1-3 wrote docs as uvarint deltas (the first from -1) and
// values as zig-zag varints; they are still read, onto the heap.
func (c *Codec) WriteDocValuesUpdates(dir store.Directory, info *index.SegmentInfo, gen int64, fields []index.FixedNumericUpdates, ioctx store.IOContext) (string, error) {
	name := DocValuesUpdatesFileName(info.Name, gen)
	for _, f := range fields {
		if err := checkUpdates(&f, info.MaxDoc); err != nil {
			return "", fmt.Errorf("codec: doc-values updates of %s: %w", info.Name, err)
		}
	}
	o, err := newOutput(dir, name, extDVUpdates, info.ID, ioctx)
	if err != nil {
		return "", fmt.Errorf("codec: doc-values updates: %w", err)
	}
	o.u32(uint32(info.MaxDoc))
	o.uvarint(uint64(len(fields)))
	for _, f := range fields {
		o.uvarint(uint64(len(f.Field)))
		o.write([]byte(f.Field))
		o.byte1(byte(f.Type))
		o.uvarint(uint64(f.Len()))
		if f.Each != nil {
			if err := writeStreamed(o, &f, info.MaxDoc); err != nil {
				o.abort()
				dir.DeleteFile(name)
				return "", fmt.Errorf("codec: doc-values updates of %s: %w", info.Name, err)
			}
		} else {
			o.write(f.Docs)
			o.write(f.Values)
		}
		if f.Type == document.Keyword {
			o.uvarint(uint64(len(f.Terms)))
			for _, t := range f.Terms {
				o.uvarint(uint64(len(t)))
				o.write(t)
			}
		}
	}
	if err := o.finish(); err != nil {
		dir.DeleteFile(name)
		return "", fmt.Errorf("codec: doc-values updates: %w", err)
	}
	return name, nil
}

// writeStreamed writes a streamed field's docs, then its values, each a
// pass over f.Each, checking them as checkUpdates does.
func writeStreamed(o *output, f *index.FixedNumericUpdates, maxDoc int) error {
	n, prev, bad := 0, int32(-1), error(nil)
	f.Each(func(doc int32, val int64) {
		switch {
		case bad != nil:
		case doc <= prev || int(doc) >= maxDoc:
			bad = fmt.Errorf("field %s: doc %d out of order or range (max doc %d)", f.Field, doc, maxDoc)
		case f.Type == document.Keyword && uint64(val) >= uint64(len(f.Terms)):
			bad = fmt.Errorf("field %s: term %d of %d", f.Field, val, len(f.Terms))
		default:
			o.u32(uint32(doc))
			o.maybeFlush()
			prev = doc
			n++
		}
	})
	if bad == nil && n != f.N {
		bad = fmt.Errorf("field %s: %d entries, said %d", f.Field, n, f.N)
	}
	if bad != nil {
		return bad
	}
	f.Each(func(_ int32, val int64) {
		o.u64(uint64(val))
		o.maybeFlush()
	})
	return nil
}

func checkUpdates(f *index.FixedNumericUpdates, maxDoc int) error {
	if !updatableType(f.Type) {
		return fmt.Errorf("field %s: type %s is not numeric or keyword", f.Field, f.Type)
	}
	if f.Type != document.Keyword && f.Terms != nil {
		return fmt.Errorf("field %s: terms for a %s field", f.Field, f.Type)
	}
	if f.Each != nil {
		return nil // checked as it is written
	}
	n := f.Len()
	if len(f.Docs) != 4*n || len(f.Values) != 8*n {
		return fmt.Errorf("field %s: %d bytes of docs, %d of values", f.Field, len(f.Docs), len(f.Values))
	}
	prev := int32(-1)
	for i := range n {
		d := f.Doc(i)
		if d <= prev || int(d) >= maxDoc {
			return fmt.Errorf("field %s: doc %d out of order or range (max doc %d)", f.Field, d, maxDoc)
		}
		prev = d
		if f.Type == document.Keyword && uint64(f.Value(i)) >= uint64(len(f.Terms)) {
			return fmt.Errorf("field %s: term %d of %d", f.Field, f.Value(i), len(f.Terms))
		}
	}
	return nil
}

// ReadDocValuesUpdates implements index.Codec; the whole file is
// checksummed before it is decoded.
func (c *Codec) ReadDocValuesUpdates(dir store.Directory, info *index.SegmentInfo, gen int64) ([]index.NumericUpdates, error) {
	name := DocValuesUpdatesFileName(info.Name, gen)
	in, err := dir.OpenInput(name)
	if err != nil {
		return nil, fmt.Errorf("codec: doc-values updates: %w", err)
	}
	defer in.Close()
	return DecodeDocValuesUpdates(in.Bytes(), name, info)
}

// OpenDocValuesUpdates implements index.Codec: the file is checksummed
// and checked in full (O(entries), as the checksum is), then its arrays
// are served from the input's bytes until Close. A file of format version
// 1-3 is decoded onto the heap instead.
func (c *Codec) OpenDocValuesUpdates(dir store.Directory, info *index.SegmentInfo, gen int64) (*index.DocValuesUpdatesFile, error) {
	name := DocValuesUpdatesFileName(info.Name, gen)
	in, err := dir.OpenInput(name)
	if err != nil {
		return nil, fmt.Errorf("codec: doc-values updates: %w", err)
	}
	fields, inPlace, err := decodeDocValuesUpdates(in.Bytes(), name, info)
	if err != nil || !inPlace {
		in.Close()
		if err != nil {
			return nil, err
		}
		return &index.DocValuesUpdatesFile{Fields: fields, Close: func() error { return nil }}, nil
	}
	return &index.DocValuesUpdatesFile{Fields: fields, Close: in.Close}, nil
}

// DecodeDocValuesUpdates checks and decodes the bytes of a doc-values
// updates file of segment info; damage is an error wrapping
// index.ErrCorrupt. The result does not alias data.
func DecodeDocValuesUpdates(data []byte, name string, info *index.SegmentInfo) ([]index.NumericUpdates, error) {
	fields, _, err := decodeDocValuesUpdates(data, name, info)
	if err != nil {
		return nil, err
	}
	out := make([]index.NumericUpdates, len(fields))
	for i := range fields {
		out[i] = fields[i].Numeric()
	}
	return out, nil
}

// decodeDocValuesUpdates checks data and returns its fields, aliasing
// data (inPlace) for format version 4, decoded onto the heap before.
func decodeDocValuesUpdates(data []byte, name string, info *index.SegmentInfo) (fields []index.FixedNumericUpdates, inPlace bool, err error) {
	body, version, err := checkHeader(data, name, extDVUpdates, info.ID)
	if err != nil {
		return nil, false, err
	}
	if err := verifyChecksum(data, name); err != nil {
		return nil, false, err
	}
	base := headerLen(extDVUpdates)
	p := body
	bad := func(format string, args ...any) error {
		return corruptf(name, base+len(body)-len(p), format, args...)
	}
	if len(p) < 4 || int(binary.LittleEndian.Uint32(p)) != info.MaxDoc {
		return nil, false, bad("max doc is not %d", info.MaxDoc)
	}
	p = p[4:]
	next := func() (uint64, bool) {
		v, n := binary.Uvarint(p)
		if n <= 0 {
			return 0, false
		}
		p = p[n:]
		return v, true
	}
	nf, ok := next()
	// Every field takes at least three bytes.
	if !ok || nf > uint64(len(p)/3) {
		return nil, false, bad("bad field count")
	}
	out := make([]index.FixedNumericUpdates, 0, nf)
	seen := map[string]bool{}
	for range nf {
		nl, ok := next()
		if !ok || nl == 0 || nl > uint64(len(p)) {
			return nil, false, bad("bad field name length")
		}
		f := index.FixedNumericUpdates{Field: string(p[:nl])}
		p = p[nl:]
		if seen[f.Field] {
			return nil, false, bad("field %s twice", f.Field)
		}
		seen[f.Field] = true
		if len(p) == 0 {
			return nil, false, bad("missing type")
		}
		f.Type, p = document.FieldType(p[0]), p[1:]
		if !f.Type.Numeric() && (version < 4 || f.Type != document.Keyword) {
			return nil, false, bad("field %s: type %d is not numeric or keyword", f.Field, f.Type)
		}
		n, ok := next()
		if version < 4 {
			// Every entry takes at least two bytes; no more entries than docs.
			if !ok || n > uint64(len(p)/2) || n > uint64(info.MaxDoc) {
				return nil, false, bad("field %s: bad count", f.Field)
			}
			if f, err = decodeVarintUpdates(f, int(n), info.MaxDoc, &p, bad); err != nil {
				return nil, false, err
			}
			out = append(out, f)
			continue
		}
		if !ok || n > uint64(len(p)/12) || n > uint64(info.MaxDoc) {
			return nil, false, bad("field %s: bad count", f.Field)
		}
		f.Docs, f.Values, p = p[:4*n], p[4*n:12*n], p[12*n:]
		prev := int32(-1)
		for i := range int(n) {
			d := f.Doc(i)
			if d <= prev || int(d) >= info.MaxDoc {
				return nil, false, bad("field %s: doc %d out of order or range", f.Field, d)
			}
			prev = d
		}
		if f.Type == document.Keyword {
			if f.Terms, err = decodeTerms(&p, bad, f.Field); err != nil {
				return nil, false, err
			}
			for i := range int(n) {
				if v := uint64(f.Value(i)); v >= uint64(len(f.Terms)) {
					return nil, false, bad("field %s: term %d of %d", f.Field, v, len(f.Terms))
				}
			}
		}
		out = append(out, f)
	}
	if len(p) != 0 {
		return nil, false, bad("%d trailing bytes", len(p))
	}
	return out, version >= 4, nil
}

// decodeVarintUpdates decodes n entries of a version 1-3 file from *p
// into f's arrays, on the heap.
func decodeVarintUpdates(f index.FixedNumericUpdates, n, maxDoc int, p *[]byte, bad func(string, ...any) error) (index.FixedNumericUpdates, error) {
	f.Docs, f.Values = make([]byte, 0, 4*n), make([]byte, 0, 8*n)
	doc := int64(-1)
	for range n {
		d, k := binary.Uvarint(*p)
		if k <= 0 || d == 0 || d > uint64(maxDoc) || doc+int64(d) >= int64(maxDoc) {
			return f, bad("field %s: bad doc delta", f.Field)
		}
		*p = (*p)[k:]
		doc += int64(d)
		f.Docs = binary.LittleEndian.AppendUint32(f.Docs, uint32(doc))
	}
	for range n {
		v, k := binary.Varint(*p)
		if k <= 0 {
			return f, bad("field %s: bad value", f.Field)
		}
		*p = (*p)[k:]
		f.Values = binary.LittleEndian.AppendUint64(f.Values, uint64(v))
	}
	return f, nil
}

// updatableType: the types a generation file holds.
func updatableType(t document.FieldType) bool { return t.Numeric() || t == document.Keyword }

// decodeTerms decodes a keyword field's term table from *p onto the heap.
func decodeTerms(p *[]byte, bad func(string, ...any) error, field string) ([][]byte, error) {
	n, k := binary.Uvarint(*p)
	// Every term takes at least a byte.
	if k <= 0 || n > uint64(len(*p)-k) {
		return nil, bad("field %s: bad term count", field)
	}
	*p = (*p)[k:]
	terms := make([][]byte, n)
	for i := range terms {
		l, k := binary.Uvarint(*p)
		if k <= 0 || l > uint64(len(*p)-k) {
			return nil, bad("field %s: bad term length", field)
		}
		terms[i] = append([]byte{}, (*p)[k:k+int(l)]...)
		*p = (*p)[k+int(l):]
	}
	return terms, nil
}
