package codec

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"reflect"
	"testing"

	"github.com/sluice-search/sluice/node/engine/codec/codectest"
	"github.com/sluice-search/sluice/node/engine/document"
	"github.com/sluice-search/sluice/node/engine/index"
	"github.com/sluice-search/sluice/node/engine/store"
)

func TestDocValuesUpdatesRoundTrip(t *testing.T) {
	r := codectest.Rand(t)
	c := New(Options{})
	dir := store.NewRAMDirectory()
	info := newInfo(r, "_7", 1000)
	fields := []index.NumericUpdates{
		{Field: "price", Type: document.Double, Docs: []int32{0, 5, 999}, Values: []int64{document.SortableFloat64(-1.5), 7, -1 << 62}},
		{Field: "a.b", Type: document.Long, Docs: []int32{3}, Values: []int64{42}},
		{Field: "empty", Type: document.Date},
		{Field: "tag", Type: document.Keyword, Docs: []int32{1, 7, 8}, Values: []int64{1, 0, 1}, Terms: [][]byte{[]byte("a"), []byte("bc"), []byte("")}},
	}
	name, err := c.WriteDocValuesUpdates(dir, info, 9, fixed(fields), store.IOContext{})
	if err != nil {
		t.Fatal(err)
	}
	if name != "_7_9.dvu" {
		t.Fatalf("name %s", name)
	}
	got, err := c.ReadDocValuesUpdates(dir, info, 9)
	if err != nil {
		t.Fatal(err)
	}
	fields[2].Docs, fields[2].Values = []int32{}, []int64{}
	if !reflect.DeepEqual(got, fields) {
		t.Fatalf("read %+v, want %+v", got, fields)
	}
	in, _ := dir.OpenInput(name)
	data := append([]byte(nil), in.Bytes()...)
	in.Close()
	for i := range data {
		bad := append([]byte(nil), data...)
		bad[i] ^= 0x10
		if _, err := DecodeDocValuesUpdates(bad, name, info); !errors.Is(err, index.ErrCorrupt) {
			t.Fatalf("flipped byte %d: err %v", i, err)
		}
	}
	other := newInfo(r, "_7", 1000)
	if _, err := DecodeDocValuesUpdates(data, name, other); !errors.Is(err, index.ErrCorrupt) {
		t.Fatalf("other segment's id: err %v", err)
	}
	// A streamed field writes as its arrays would; a bad stream writes
	// nothing.
	stream := func(docs []int32, vals []int64) index.FixedNumericUpdates {
		return index.FixedNumericUpdates{Field: "price", Type: document.Double, N: len(docs), Each: func(yield func(int32, int64)) {
			for i, d := range docs {
				yield(d, vals[i])
			}
		}}
	}
	streamed := []index.FixedNumericUpdates{stream(fields[0].Docs, fields[0].Values), stream(fields[3].Docs, fields[3].Values)}
	streamed[1].Field, streamed[1].Type, streamed[1].Terms = "tag", document.Keyword, fields[3].Terms
	if _, err := c.WriteDocValuesUpdates(dir, info, 11, streamed, store.IOContext{}); err != nil {
		t.Fatal(err)
	}
	if got, err := c.ReadDocValuesUpdates(dir, info, 11); err != nil || !reflect.DeepEqual(got, []index.NumericUpdates{fields[0], fields[3]}) {
		t.Fatalf("streamed: read %+v, %v; want %+v", got, err, []index.NumericUpdates{fields[0], fields[3]})
	}
	for _, bad := range []index.FixedNumericUpdates{stream([]int32{3, 2}, []int64{1, 1}), stream([]int32{1000}, []int64{1}), {Field: "x", Type: document.Long, N: 2, Each: func(yield func(int32, int64)) { yield(1, 1) }}} {
		if _, err := c.WriteDocValuesUpdates(dir, info, 12, []index.FixedNumericUpdates{bad}, store.IOContext{}); err == nil {
			t.Fatalf("wrote a bad stream")
		}
		if _, err := dir.FileLength(DocValuesUpdatesFileName(info.Name, 12)); err == nil {
			t.Fatalf("a bad stream left its file")
		}
	}
	for _, bad := range [][]index.NumericUpdates{
		{{Field: "x", Type: document.Long, Docs: []int32{2, 2}, Values: []int64{1, 2}}},
		{{Field: "x", Type: document.Long, Docs: []int32{1000}, Values: []int64{1}}},
		{{Field: "x", Type: document.Keyword, Docs: []int32{1}, Values: []int64{1}, Terms: [][]byte{[]byte("a")}}},
		{{Field: "x", Type: document.Long, Docs: []int32{1}, Values: []int64{0}, Terms: [][]byte{[]byte("a")}}},
		{{Field: "x", Type: document.Text, Docs: []int32{1}, Values: []int64{0}}},
		{{Field: "x", Type: document.Long, Docs: []int32{1}}},
	} {
		if _, err := c.WriteDocValuesUpdates(dir, info, 10, fixed(bad), store.IOContext{}); err == nil {
			t.Fatalf("wrote %+v", bad)
		}
	}
}

// sealDocValuesUpdates frames body as a doc-values updates file of info
// with format version v, with a valid checksum, so the fuzzer reaches the
// decoder past the CRC.
func sealDocValuesUpdates(info *index.SegmentInfo, v uint32, body []byte) []byte {
	data := appendHeader(nil, info.ID, extDVUpdates)
	binary.LittleEndian.PutUint32(data[5+len(Name):], v)
	data = append(data, body...)
	data = binary.LittleEndian.AppendUint32(data, footerMagic)
	data = binary.LittleEndian.AppendUint32(data, 0)
	return binary.LittleEndian.AppendUint64(data, uint64(crc32.ChecksumIEEE(data)))
}

// FuzzDocValuesUpdates decodes arbitrary bodies, of the current format
// (fixed-width arrays read in place) or of version 3 (varints): no panics,
// and what decodes is valid (ascending docs below maxDoc, numeric types),
// opens in place as it decodes, writes back, and reads back equal.
func FuzzDocValuesUpdates(f *testing.F) {
	info := &index.SegmentInfo{Name: "_f", MaxDoc: 100}
	le := binary.LittleEndian
	v4 := le.AppendUint32(nil, 100)
	v4 = append(v4, 1, 1, 'x', 3, 2)
	v4 = le.AppendUint32(le.AppendUint32(v4, 1), 4)
	v4 = le.AppendUint64(le.AppendUint64(v4, 2), ^uint64(2))
	f.Add(uint16(100), false, v4)
	kw := le.AppendUint32(nil, 10)
	kw = append(kw, 1, 1, 'k', byte(document.Keyword), 2)
	kw = le.AppendUint32(le.AppendUint32(kw, 3), 9)
	kw = le.AppendUint64(le.AppendUint64(kw, 1), 0)
	kw = append(kw, 2, 1, 'a', 2, 'b', 'c')
	f.Add(uint16(10), false, kw)
	f.Add(uint16(5), false, []byte{5, 0, 0, 0, 0})
	f.Add(uint16(100), true, []byte{100, 0, 0, 0, 1, 1, 'x', 3, 2, 1, 4, 2, 3})
	f.Add(uint16(1), true, []byte{1, 0, 0, 0, 2, 1, 'a', 3, 0, 1, 'b', 4, 1, 1, 0x7f})
	f.Fuzz(func(t *testing.T, maxDoc uint16, old bool, body []byte) {
		info.MaxDoc = int(maxDoc)
		v := uint32(formatVersion)
		if old {
			v = 3
		}
		data := sealDocValuesUpdates(info, v, body)
		got, err := DecodeDocValuesUpdates(data, "_f_1.dvu", info)
		if err != nil {
			if !errors.Is(err, index.ErrCorrupt) {
				t.Fatalf("error not ErrCorrupt: %v", err)
			}
			return
		}
		dir := store.NewRAMDirectory()
		out, _ := dir.CreateOutput("_f_2.dvu", store.IOContext{})
		out.Write(data)
		out.Close()
		c := New(Options{})
		file, err := c.OpenDocValuesUpdates(dir, info, 2)
		if err != nil {
			t.Fatalf("decodes but does not open: %v", err)
		}
		for i, f := range file.Fields {
			if n := f.Numeric(); !reflect.DeepEqual(n, got[i]) {
				t.Fatalf("field %d opens as %+v, decodes as %+v", i, n, got[i])
			}
		}
		file.Close()
		name, err := c.WriteDocValuesUpdates(dir, info, 1, fixed(got), store.IOContext{})
		if err != nil {
			t.Fatalf("decoded updates do not write back: %v", err)
		}
		in, _ := dir.OpenInput(name)
		defer in.Close()
		again, err := DecodeDocValuesUpdates(in.Bytes(), name, info)
		if err != nil || !reflect.DeepEqual(again, got) {
			t.Fatalf("re-encoded updates read back as %+v, %v; want %+v", again, err, got)
		}
	})
}

func fixed(fields []index.NumericUpdates) []index.FixedNumericUpdates {
	out := make([]index.FixedNumericUpdates, len(fields))
	for i := range fields {
		out[i] = fields[i].Fixed()
	}
	return out
}
