package codec

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
)

// One zstd encoder and decoder per process: EncodeAll/DecodeAll are safe for
// concurrent use and pool their internal state, so block (de)compression
// allocates nothing per call beyond the destination.
var (
	zstdOnce sync.Once
	zstdEnc  *zstd.Encoder
	zstdDec  *zstd.Decoder
)

func initZstd() {
	var err error
	zstdEnc, err = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest),
		zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)), zstd.WithLowerEncoderMem(true))
	if err != nil {
		panic(err) // static options
	}
	zstdDec, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(maxStoredBlock))
	if err != nil {
		panic(err)
	}
}

// maxStoredBlock bounds a block's uncompressed size (a block holds at least
// one document, so this is also the largest _source the format stores).
const maxStoredBlock = 1 << 28

func compress(c Compression, dst, src []byte) ([]byte, error) {
	switch c {
	case CompressionZstd:
		zstdOnce.Do(initZstd)
		return zstdEnc.EncodeAll(src, dst), nil
	case CompressionS2:
		return s2.Encode(dst[:cap(dst)], src), nil
	}
	return nil, fmt.Errorf("unknown stored-fields compression %d", c)
}

// decompress decodes src into dst[:0] (grown as needed) and checks the
// length against rawLen.
func decompress(c Compression, dst, src []byte, rawLen int) ([]byte, error) {
	var out []byte
	var err error
	switch c {
	case CompressionZstd:
		zstdOnce.Do(initZstd)
		if cap(dst) < rawLen {
			// Bounded by the compressed size so a corrupt length cannot
			// force a huge allocation; DecodeAll grows it if needed.
			dst = make([]byte, 0, min(rawLen, 64*len(src)+4096))
		}
		out, err = zstdDec.DecodeAll(src, dst[:0])
	case CompressionS2:
		n, lerr := s2.DecodedLen(src)
		if lerr != nil {
			return dst, lerr
		}
		if n != rawLen {
			return dst, fmt.Errorf("block decodes to %d bytes, want %d", n, rawLen)
		}
		if cap(dst) < rawLen {
			dst = make([]byte, rawLen)
		}
		out, err = s2.Decode(dst[:cap(dst)], src)
	default:
		return dst, fmt.Errorf("unknown compression %d", c)
	}
	if err != nil {
		return dst, err
	}
	if len(out) != rawLen {
		return out, fmt.Errorf("block decodes to %d bytes, want %d", len(out), rawLen)
	}
	return out, nil
}
