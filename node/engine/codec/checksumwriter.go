package codec

import (
	"hash/crc32"
	"io"
)

// ChecksumWriter checksums a file of this codec as its bytes are written
// elsewhere — a file a replica fetches from its primary — so that it need
// not be read back to be verified (Elasticsearch's
// Store.VerifyingIndexOutput). Write every byte of the file, in order, to
// the writer; then check returns the checksum the footer records once the
// file's length, header magic, footer and CRC32 are checked as
// VerifyChecksum checks them, or an error wrapping index.ErrCorrupt that
// names the file.
func (c *Codec) ChecksumWriter(name string, length int64) (io.Writer, func() (uint32, error)) {
	w := &checksumWriter{name: name, length: length}
	return w, w.check
}

type checksumWriter struct {
	name   string
	length int64
	n      int64 // bytes written
	crc    uint32
	head   [4]byte
	foot   [footerLen]byte
}

func (w *checksumWriter) Write(b []byte) (int, error) {
	at, covered, footAt := w.n, w.length-8, w.length-footerLen
	w.n += int64(len(b))
	// Each byte goes where its offset says: the header magic, the CRC
	// (all but the last 8 bytes), the footer. Bytes past length count
	// only toward n.
	if at < 4 {
		copy(w.head[at:], b)
	}
	if at < covered {
		w.crc = crc32.Update(w.crc, crc32.IEEETable, b[:min(int64(len(b)), covered-at)])
	}
	if end := at + int64(len(b)); end > footAt && at < w.length {
		from := max(footAt, at)
		copy(w.foot[from-footAt:], b[from-at:min(end, w.length)-at])
	}
	return len(b), nil
}

func (w *checksumWriter) check() (uint32, error) {
	if w.n != w.length || w.length < 4+footerLen {
		return 0, corruptf(w.name, 0, "got %d bytes, want %d (at least %d)", w.n, w.length, 4+footerLen)
	}
	covered, want, err := checkFooter(w.name, int(w.length), w.head[:], w.foot[:])
	if err != nil {
		return 0, err
	}
	return want, checkCRC(w.name, covered, want, w.crc)
}
