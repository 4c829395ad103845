package codec

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strconv"

	"github.com/sluice-search/sluice/node/engine/index"
	"github.com/sluice-search/sluice/node/engine/store"
)

// Compression is the stored-fields block compressor.
type Compression uint8

const (
	// CompressionZstd is zstd at its fastest level: ratio 2.3 vs 1.55 for
	// S2 on corpus _source blocks, but ~2.7x slower to compress and ~2x
	// slower to decompress (BenchmarkStoredCompression). The
	// "best_compression" choice.
	CompressionZstd Compression = iota + 1
	// CompressionS2 is Snappy-compatible S2, the default: like Lucene's LZ4
	// default it keeps flushes and fetches cheap at a lower ratio.
	CompressionS2
)

// Options configure the codec's writers; readers need none (everything is
// recorded in the files).
type Options struct {
	// StoredCompression compresses _id/_source blocks; default S2.
	StoredCompression Compression
	// StoredBlockSize is the uncompressed size at which a stored-fields
	// block is closed; default 16 KiB.
	StoredBlockSize int
}

// SetDefaults fills zero fields.
func (o *Options) SetDefaults() {
	if o.StoredCompression == 0 {
		o.StoredCompression = CompressionS2
	}
	if o.StoredBlockSize <= 0 {
		o.StoredBlockSize = 16 << 10
	}
}

// Codec is the Sluice10 format.
type Codec struct {
	opts Options
}

var _ index.Codec = (*Codec)(nil)

// New returns the codec with opts (zero values take defaults).
func New(opts Options) *Codec {
	opts.SetDefaults()
	return &Codec{opts: opts}
}

// Name implements index.Codec.
func (c *Codec) Name() string { return Name }

// WriteSegment implements index.Codec.
func (c *Codec) WriteSegment(ctx context.Context, dir store.Directory, info *index.SegmentInfo, src index.LeafReader, ioctx store.IOContext) error {
	if src.MaxDoc() != info.MaxDoc {
		return fmt.Errorf("codec: segment %s: source has %d docs, info says %d", info.Name, src.MaxDoc(), info.MaxDoc)
	}
	w := &segmentWriter{opts: &c.opts, ctx: ctx, dir: dir, info: info, src: src, ioctx: ioctx,
		writerScratch: scratchPool.Get().(*writerScratch)}
	defer scratchPool.Put(w.writerScratch)
	if err := w.write(); err != nil {
		w.cleanup()
		return fmt.Errorf("codec: write segment %s: %w", info.Name, err)
	}
	info.Codec = Name
	info.Files = w.files
	return nil
}

// OpenSegment implements index.Codec.
func (c *Codec) OpenSegment(dir store.Directory, info *index.SegmentInfo) (index.SegmentReader, error) {
	return openSegment(dir, info)
}

// LiveDocsFileName is the file of live-docs generation gen of a segment.
func LiveDocsFileName(segment string, gen int64) string {
	return segment + "_" + strconv.FormatInt(gen, 36) + "." + extLiveDocs
}

// WriteLiveDocs implements index.Codec: header, maxDoc u32, the bitset's
// words little-endian, footer.
func (c *Codec) WriteLiveDocs(dir store.Directory, info *index.SegmentInfo, gen int64, live *index.FixedBitSet, ioctx store.IOContext) (string, error) {
	if live.Len() != info.MaxDoc {
		return "", fmt.Errorf("codec: live docs of %s: %d bits for %d docs", info.Name, live.Len(), info.MaxDoc)
	}
	name := LiveDocsFileName(info.Name, gen)
	o, err := newOutput(dir, name, extLiveDocs, info.ID, ioctx)
	if err != nil {
		return "", fmt.Errorf("codec: live docs: %w", err)
	}
	o.u32(uint32(info.MaxDoc))
	for _, w := range live.Words() {
		o.u64(w)
		o.maybeFlush()
	}
	if err := o.finish(); err != nil {
		dir.DeleteFile(name)
		return "", fmt.Errorf("codec: live docs: %w", err)
	}
	return name, nil
}

// ReadLiveDocs implements index.Codec; the whole file is checksummed (it is
// small: one bit per doc).
func (c *Codec) ReadLiveDocs(dir store.Directory, info *index.SegmentInfo, gen int64) (*index.FixedBitSet, error) {
	name := LiveDocsFileName(info.Name, gen)
	in, err := dir.OpenInput(name)
	if err != nil {
		return nil, fmt.Errorf("codec: live docs: %w", err)
	}
	defer in.Close()
	data := in.Bytes()
	body, _, err := checkHeader(data, name, extLiveDocs, info.ID)
	if err != nil {
		return nil, err
	}
	if err := verifyChecksum(data, name); err != nil {
		return nil, err
	}
	nwords := (info.MaxDoc + 63) / 64
	if len(body) != 4+8*nwords || int(binary.LittleEndian.Uint32(body)) != info.MaxDoc {
		return nil, corruptf(name, headerLen(extLiveDocs), "live docs for %d docs has %d bytes", info.MaxDoc, len(body))
	}
	words := make([]uint64, nwords)
	for i := range words {
		words[i] = binary.LittleEndian.Uint64(body[4+8*i:])
	}
	return index.FixedBitSetFromWords(words, info.MaxDoc), nil
}

// CheckIntegrity verifies every file of a segment end to end: headers,
// footers, full checksums, and a decode of every structure (each term's
// postings, doc values, stored blocks). Used by tests and by recovery, where
// a silently corrupt segment must fail the shard.
func (c *Codec) CheckIntegrity(dir store.Directory, info *index.SegmentInfo) error {
	sr, err := openSegment(dir, info)
	if err != nil {
		return err
	}
	defer sr.Close()
	return sr.CheckIntegrity()
}

// FooterChecksum returns the CRC32 a file's codec footer records, reading
// only its header magic and footer (Lucene's CodecUtil.retrieveChecksum):
// what replication compares files by without re-hashing them. A file
// that is not one of this codec's is an error wrapping index.ErrCorrupt.
func (c *Codec) FooterChecksum(name string, data []byte) (uint32, error) {
	_, want, err := checksumFooter(data, name)
	return want, err
}

// VerifyChecksum checks the CRC32 footer of a file this codec wrote
// against the whole file, decoding nothing: Lucene's
// CodecUtil.checksumEntireFile. It reads data in chunks of at most chunk
// bytes (<= 0: at once) and calls pace, if not nil, with each chunk's size
// before reading it; pace may sleep (a scrubber's throttle) and an error it
// returns is returned as is. Damage is an error wrapping index.ErrCorrupt
// that names the file.
func (c *Codec) VerifyChecksum(name string, data []byte, chunk int, pace func(n int) error) error {
	covered, want, err := checksumFooter(data, name)
	if err != nil {
		return err
	}
	if chunk <= 0 {
		chunk = covered
	}
	var crc uint32
	for off := 0; off < covered; off += chunk {
		b := data[off:min(off+chunk, covered)]
		if pace != nil {
			if err := pace(len(b)); err != nil {
				return err
			}
		}
		crc = crc32.Update(crc, crc32.IEEETable, b)
	}
	return checkCRC(name, covered, want, crc)
}
