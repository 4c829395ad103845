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

// WriteDocValuesUpdates implements index.Codec. Layout, after the header:
//
//	maxDoc u32 | fields uvarint | per field:
//	  name length uvarint, name, type byte, count uvarint,
//	  count doc deltas uvarint (the first from -1, every one >= 1),
//	  count values zig-zag varint
//
// then the footer (CRC32 of everything before it). Small by design: one
// entry per updated doc, not per doc of the segment.
func (c *Codec) WriteDocValuesUpdates(dir store.Directory, info *index.SegmentInfo, gen int64, fields []index.NumericUpdates, ioctx store.IOContext) (string, error) {
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
		o.uvarint(uint64(len(f.Docs)))
		prev := int32(-1)
		for _, d := range f.Docs {
			o.uvarint(uint64(d - prev))
			prev = d
			o.maybeFlush()
		}
		for _, v := range f.Values {
			o.buf = binary.AppendVarint(o.buf, v)
			o.maybeFlush()
		}
	}
	if err := o.finish(); err != nil {
		dir.DeleteFile(name)
		return "", fmt.Errorf("codec: doc-values updates: %w", err)
	}
	return name, nil
}

func checkUpdates(f *index.NumericUpdates, maxDoc int) error {
	if len(f.Docs) != len(f.Values) {
		return fmt.Errorf("field %s: %d docs, %d values", f.Field, len(f.Docs), len(f.Values))
	}
	if !f.Type.Numeric() {
		return fmt.Errorf("field %s: type %s is not numeric", f.Field, f.Type)
	}
	for i, d := range f.Docs {
		if d < 0 || int(d) >= maxDoc || i > 0 && d <= f.Docs[i-1] {
			return fmt.Errorf("field %s: doc %d out of order or range (max doc %d)", f.Field, d, maxDoc)
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

// DecodeDocValuesUpdates checks and decodes the bytes of a doc-values
// updates file of segment info; damage is an error wrapping
// index.ErrCorrupt. The result does not alias data.
func DecodeDocValuesUpdates(data []byte, name string, info *index.SegmentInfo) ([]index.NumericUpdates, error) {
	body, _, err := checkHeader(data, name, extDVUpdates, info.ID)
	if err != nil {
		return nil, err
	}
	if err := verifyChecksum(data, name); err != nil {
		return nil, err
	}
	base := headerLen(extDVUpdates)
	p := body
	bad := func(format string, args ...any) error {
		return corruptf(name, base+len(body)-len(p), format, args...)
	}
	if len(p) < 4 || int(binary.LittleEndian.Uint32(p)) != info.MaxDoc {
		return nil, bad("max doc is not %d", info.MaxDoc)
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
		return nil, bad("bad field count")
	}
	out := make([]index.NumericUpdates, 0, nf)
	seen := map[string]bool{}
	for range nf {
		nl, ok := next()
		if !ok || nl == 0 || nl > uint64(len(p)) {
			return nil, bad("bad field name length")
		}
		f := index.NumericUpdates{Field: string(p[:nl])}
		p = p[nl:]
		if seen[f.Field] {
			return nil, bad("field %s twice", f.Field)
		}
		seen[f.Field] = true
		if len(p) == 0 {
			return nil, bad("missing type")
		}
		f.Type, p = document.FieldType(p[0]), p[1:]
		if !f.Type.Numeric() {
			return nil, bad("field %s: type %d is not numeric", f.Field, f.Type)
		}
		n, ok := next()
		// Every entry takes at least two bytes; no more entries than docs.
		if !ok || n > uint64(len(p)/2) || n > uint64(info.MaxDoc) {
			return nil, bad("field %s: bad count", f.Field)
		}
		f.Docs, f.Values = make([]int32, n), make([]int64, n)
		doc := int64(-1)
		for i := range f.Docs {
			d, ok := next()
			if !ok || d == 0 || d > uint64(info.MaxDoc) || doc+int64(d) >= int64(info.MaxDoc) {
				return nil, bad("field %s: bad doc delta", f.Field)
			}
			doc += int64(d)
			f.Docs[i] = int32(doc)
		}
		for i := range f.Values {
			v, n := binary.Varint(p)
			if n <= 0 {
				return nil, bad("field %s: bad value", f.Field)
			}
			f.Values[i], p = v, p[n:]
		}
		out = append(out, f)
	}
	if len(p) != 0 {
		return nil, bad("%d trailing bytes", len(p))
	}
	return out, nil
}
