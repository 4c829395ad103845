package codec

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"

	"github.com/sluice-search/sluice/node/engine/index"
	"github.com/sluice-search/sluice/node/engine/store"
)

// Name is the codec name written into SegmentInfo.Codec and every header.
const Name = "Sluice10"

const (
	// formatVersion is written into every header; readers accept
	// minFormatVersion..formatVersion. 2: stored-fields docs may carry a
	// _routing (flag bit in the _id length). 3: postings keep each block's
	// competitive impacts (skip entries grow an impacts offset; one-block
	// terms' metadata holds the impacts instead of maxFreq, minNorm).
	// 4: doc-values updates files hold fixed-width arrays (docs u32,
	// values u64) that are read in place instead of decoded onto the heap.
	formatVersion    = 4
	minFormatVersion = 1
	headerMagic      = 0x534c4331 // "SLC1"
	footerMagic      = ^uint32(headerMagic)
	footerLen        = 16 // magic u32, algorithm u32 (0 = CRC32 IEEE), checksum u64
)

// File extensions of a segment's files.
const (
	extMeta     = "smt" // field infos, per-field stats, pointers into the other files
	extTerms    = "tim" // per field: term metadata block + FST (term -> metadata offset)
	extDocs     = "doc" // doc deltas and freqs in packed blocks, skip entries
	extPos      = "pos" // positions, vint deltas per doc
	extNorms    = "nvd" // norms
	extDV       = "dvd" // doc values
	extStored   = "fdt" // stored fields blocks and their index
	extLiveDocs = "liv"
)

func fileName(seg, ext string) string { return seg + "." + ext }

func corruptf(file string, off int, format string, args ...any) error {
	return fmt.Errorf("%w: %s at offset %d: %s", index.ErrCorrupt, file, off, fmt.Sprintf(format, args...))
}

// headerLen is the encoded length of a header for ext.
func headerLen(ext string) int { return 4 + 1 + len(Name) + 4 + 16 + 1 + len(ext) }

func appendHeader(b []byte, id index.SegmentID, ext string) []byte {
	b = binary.LittleEndian.AppendUint32(b, headerMagic)
	b = append(b, byte(len(Name)))
	b = append(b, Name...)
	b = binary.LittleEndian.AppendUint32(b, formatVersion)
	b = append(b, id[:]...)
	b = append(b, byte(len(ext)))
	return append(b, ext...)
}

// checkHeader verifies the header and the footer's framing (not the
// checksum) and returns the body, the bytes between them, and the file's
// format version.
func checkHeader(data []byte, file, ext string, id index.SegmentID) (body []byte, version int, err error) {
	hl := headerLen(ext)
	if len(data) < hl+footerLen {
		return nil, 0, corruptf(file, 0, "file too short (%d bytes)", len(data))
	}
	if m := binary.LittleEndian.Uint32(data); m != headerMagic {
		return nil, 0, corruptf(file, 0, "bad header magic %#x", m)
	}
	if int(data[4]) != len(Name) || string(data[5:5+len(Name)]) != Name {
		return nil, 0, corruptf(file, 4, "codec name is not %s", Name)
	}
	off := 5 + len(Name)
	v := binary.LittleEndian.Uint32(data[off:])
	if v < minFormatVersion || v > formatVersion {
		return nil, 0, corruptf(file, off, "unsupported format version %d (this build reads %d to %d)", v, minFormatVersion, formatVersion)
	}
	off += 4
	if string(data[off:off+16]) != string(id[:]) {
		return nil, 0, corruptf(file, off, "segment ID mismatch (file from another segment)")
	}
	off += 16
	if int(data[off]) != len(ext) || string(data[off+1:off+1+len(ext)]) != ext {
		return nil, 0, corruptf(file, off, "suffix is not %q", ext)
	}
	end := len(data) - footerLen
	if m := binary.LittleEndian.Uint32(data[end:]); m != footerMagic {
		return nil, 0, corruptf(file, end, "bad footer magic %#x", m)
	}
	if a := binary.LittleEndian.Uint32(data[end+4:]); a != 0 {
		return nil, 0, corruptf(file, end+4, "unknown checksum algorithm %d", a)
	}
	if binary.LittleEndian.Uint64(data[end+8:])>>32 != 0 {
		return nil, 0, corruptf(file, end+8, "checksum has high bits set")
	}
	return data[hl:end], int(v), nil
}

// verifyChecksum checks the CRC32 footer over the whole file.
func verifyChecksum(data []byte, file string) error {
	end, want, err := checksumFooter(data, file)
	if err != nil {
		return err
	}
	return checkCRC(file, end, want, crc32.ChecksumIEEE(data[:end]))
}

// checksumFooter checks what a file's checksum can be trusted with — its
// length, header magic, footer magic and algorithm — and returns how many
// leading bytes the CRC covers and the CRC the footer records.
func checksumFooter(data []byte, file string) (covered int, want uint32, err error) {
	if len(data) < 4+footerLen {
		return 0, 0, corruptf(file, 0, "file too short (%d bytes)", len(data))
	}
	return checkFooter(file, len(data), data[:4], data[len(data)-footerLen:])
}

// checkFooter is checksumFooter of a file of length bytes known by its
// first 4 bytes (head) and its footer (foot, footerLen bytes).
func checkFooter(file string, length int, head, foot []byte) (covered int, want uint32, err error) {
	if m := binary.LittleEndian.Uint32(head); m != headerMagic {
		return 0, 0, corruptf(file, 0, "bad header magic %#x", m)
	}
	end := length - footerLen
	if m := binary.LittleEndian.Uint32(foot); m != footerMagic {
		return 0, 0, corruptf(file, end, "bad footer magic %#x", m)
	}
	if a := binary.LittleEndian.Uint32(foot[4:]); a != 0 {
		return 0, 0, corruptf(file, end+4, "unknown checksum algorithm %d", a)
	}
	stored := binary.LittleEndian.Uint64(foot[8:])
	if stored>>32 != 0 {
		return 0, 0, corruptf(file, end+8, "checksum has high bits set")
	}
	return end + 8, uint32(stored), nil
}

// checkCRC compares a computed CRC with the one a footer records.
func checkCRC(file string, covered int, want, got uint32) error {
	if got != want {
		return corruptf(file, covered, "checksum mismatch: stored %#x, computed %#x", want, got)
	}
	return nil
}

// output writes one codec file: header, body through a local buffer (so the
// hot write path appends to a slice rather than calling an interface per
// value), footer with the checksum.
type output struct {
	out  store.IndexOutput
	buf  []byte
	base int64 // FilePointer of out when buf is empty
	err  error
	hl   int
}

const outputFlushAt = 32 << 10

func newOutput(dir store.Directory, name, ext string, id index.SegmentID, ioctx store.IOContext) (*output, error) {
	out, err := dir.CreateOutput(name, ioctx)
	if err != nil {
		return nil, err
	}
	o := &output{out: out, buf: make([]byte, 0, outputFlushAt+4096)}
	o.buf = appendHeader(o.buf, id, ext)
	o.hl = len(o.buf)
	return o, nil
}

// pos is the offset in the file's body (after the header).
func (o *output) pos() int { return int(o.base) + len(o.buf) - o.hl }

func (o *output) maybeFlush() {
	if len(o.buf) >= outputFlushAt {
		o.flush()
	}
}

func (o *output) flush() {
	if o.err != nil || len(o.buf) == 0 {
		o.buf = o.buf[:0]
		return
	}
	if _, err := o.out.Write(o.buf); err != nil {
		o.err = err
	}
	o.base += int64(len(o.buf))
	o.buf = o.buf[:0]
}

func (o *output) uvarint(v uint64) { o.buf = binary.AppendUvarint(o.buf, v) }
func (o *output) byte1(b byte)     { o.buf = append(o.buf, b) }
func (o *output) u32(v uint32)     { o.buf = binary.LittleEndian.AppendUint32(o.buf, v) }
func (o *output) u64(v uint64)     { o.buf = binary.LittleEndian.AppendUint64(o.buf, v) }
func (o *output) write(b []byte) {
	if len(b) > outputFlushAt {
		o.flush()
		if o.err == nil {
			if _, err := o.out.Write(b); err != nil {
				o.err = err
			}
		}
		o.base += int64(len(b))
		return
	}
	o.buf = append(o.buf, b...)
	o.maybeFlush()
}

// finish writes the footer and closes the file.
func (o *output) finish() error {
	o.u32(footerMagic)
	o.u32(0)
	o.flush()
	if o.err != nil {
		o.out.Close()
		return o.err
	}
	o.u64(uint64(o.out.Checksum()))
	o.flush()
	if err := o.out.Close(); err != nil {
		return err
	}
	return o.err
}

// abort closes the file without a footer (the caller deletes it).
func (o *output) abort() { o.out.Close() }

// reader decodes trusted-but-verified metadata with bounds checks: any
// overrun records a corruption error naming the file and offset instead of
// panicking. Callers check err once after a run of reads.
type reader struct {
	b    []byte
	off  int
	file string
	base int // offset of b[0] in the file, for error messages
	err  error
}

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = corruptf(r.file, r.base+r.off, format, args...)
	}
	r.off = len(r.b)
}

func (r *reader) uvarint() uint64 {
	if r.off >= len(r.b) {
		r.fail("unexpected end")
		return 0
	}
	if c := r.b[r.off]; c < 0x80 {
		r.off++
		return uint64(c)
	}
	v, n := binary.Uvarint(r.b[r.off:])
	if n <= 0 {
		r.fail("bad varint")
		return 0
	}
	r.off += n
	return v
}

// uint returns a uvarint that must be <= max.
func (r *reader) uint(max int, what string) int {
	v := r.uvarint()
	if v > uint64(max) {
		r.fail("%s %d out of range (max %d)", what, v, max)
		return 0
	}
	return int(v)
}

func (r *reader) byte1() byte {
	if r.off >= len(r.b) {
		r.fail("unexpected end")
		return 0
	}
	r.off++
	return r.b[r.off-1]
}

func (r *reader) u64() uint64 {
	if len(r.b)-r.off < 8 {
		r.fail("unexpected end")
		return 0
	}
	r.off += 8
	return binary.LittleEndian.Uint64(r.b[r.off-8:])
}

func (r *reader) bytes(n int) []byte {
	if n < 0 || len(r.b)-r.off < n {
		r.fail("unexpected end (want %d bytes)", n)
		return nil
	}
	r.off += n
	return r.b[r.off-n : r.off]
}

func (r *reader) str() string { return string(r.bytes(r.uint(math.MaxInt32, "string length"))) }

// region is a [off, off+len) slice of a file body, validated at open.
func (r *reader) region(body []byte, what string) []byte {
	off := r.uint(len(body), what+" offset")
	n := r.uint(len(body)-off, what+" length")
	if r.err != nil {
		return nil
	}
	return body[off : off+n]
}

// uvarintAt is the postings hot path's varint read: no error object, n <= 0
// on overrun or overflow.
func uvarintAt(b []byte, off int) (uint64, int) {
	if off < len(b) && b[off] < 0x80 {
		return uint64(b[off]), 1
	}
	if off >= len(b) {
		return 0, 0
	}
	return binary.Uvarint(b[off:])
}
