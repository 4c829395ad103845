package translog

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"

	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ErrCorrupt marks translog damage that recovery must not repair: a bad
// record followed by valid data, a record below the last checkpoint, a
// broken chain, a bad header or checkpoint. Errors wrap it with the file
// and offset.
var ErrCorrupt = errors.New("translog corrupt")

// UUID identifies one translog; every generation file carries it so files
// of another shard's translog are never replayed.
type UUID [16]byte

func (u UUID) String() string { return hex.EncodeToString(u[:]) }

// Generation file header, little endian:
//
//	magic "SLTG" | version u32 | generation u64 | uuid [16] | crc u32
const (
	fileMagic      = "SLTG"
	fileVersion    = 1
	fileHeaderSize = 4 + 4 + 8 + 16 + 4
	filePrefix     = "translog-"
	fileSuffix     = ".tlog"
	checkpointName = "translog.ckp"
)

func genFileName(gen uint64) string { return fmt.Sprintf("%s%d%s", filePrefix, gen, fileSuffix) }

// parseGenFileName returns the generation of a translog file name.
func parseGenFileName(name string) (uint64, bool) {
	s, ok := strings.CutPrefix(name, filePrefix)
	if !ok {
		return 0, false
	}
	if s, ok = strings.CutSuffix(s, fileSuffix); !ok {
		return 0, false
	}
	gen, err := strconv.ParseUint(s, 10, 64)
	return gen, err == nil && gen > 0
}

// fileHeader returns a generation file's header and its crc, which seeds
// the record chain.
func fileHeader(gen uint64, uuid UUID) ([]byte, uint32) {
	h := make([]byte, 0, fileHeaderSize)
	h = append(h, fileMagic...)
	h = binary.LittleEndian.AppendUint32(h, fileVersion)
	h = binary.LittleEndian.AppendUint64(h, gen)
	h = append(h, uuid[:]...)
	crc := crc32.Checksum(h, castagnoli)
	return binary.LittleEndian.AppendUint32(h, crc), crc
}

// readFileHeader checks the header of f against gen and uuid and returns its
// crc.
func readFileHeader(f *os.File, gen uint64, uuid UUID) (uint32, error) {
	var h [fileHeaderSize]byte
	if _, err := f.ReadAt(h[:], 0); err != nil {
		return 0, fmt.Errorf("%w: %s: reading header: %v", ErrCorrupt, f.Name(), err)
	}
	want, crc := fileHeader(gen, uuid)
	if string(h[:]) != string(want) {
		return 0, fmt.Errorf("%w: %s: header is not generation %d of translog %s", ErrCorrupt, f.Name(), gen, uuid)
	}
	return crc, nil
}

// checkpoint is the translog's durable state, rewritten atomically on
// create, roll, trim and close (not on every sync: the generation files
// themselves are the record of what was synced, see recover.go).
type checkpoint struct {
	UUID UUID
	// Generation is the current (writable) generation and Offset its size
	// when the checkpoint was written: everything below is durable, so a
	// bad record there is corruption, never a torn write.
	Generation uint64
	Offset     int64
	// MinGeneration is the oldest generation still needed.
	MinGeneration uint64
	// MinSeqNo and MaxSeqNo span the retained ops (MinSeqNo > MaxSeqNo
	// when there are none); TrimmedBelow is the last TrimBelow argument.
	MinSeqNo, MaxSeqNo, TrimmedBelow uint64
}

const checkpointSize = 4 + 4 + 16 + 8*6 + 4

func (c *checkpoint) marshal() []byte {
	b := make([]byte, 0, checkpointSize)
	b = append(b, "SLCK"...)
	b = binary.LittleEndian.AppendUint32(b, fileVersion)
	b = append(b, c.UUID[:]...)
	for _, v := range [...]uint64{c.Generation, uint64(c.Offset), c.MinGeneration, c.MinSeqNo, c.MaxSeqNo, c.TrimmedBelow} {
		b = binary.LittleEndian.AppendUint64(b, v)
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

func (c *checkpoint) unmarshal(b []byte) error {
	if len(b) != checkpointSize || string(b[:4]) != "SLCK" ||
		binary.LittleEndian.Uint32(b[4:]) != fileVersion ||
		crc32.Checksum(b[:len(b)-4], castagnoli) != binary.LittleEndian.Uint32(b[len(b)-4:]) {
		return fmt.Errorf("%w: %s: bad checkpoint", ErrCorrupt, checkpointName)
	}
	copy(c.UUID[:], b[8:24])
	v := func(i int) uint64 { return binary.LittleEndian.Uint64(b[24+8*i:]) }
	c.Generation, c.Offset, c.MinGeneration = v(0), int64(v(1)), v(2)
	c.MinSeqNo, c.MaxSeqNo, c.TrimmedBelow = v(3), v(4), v(5)
	if c.MinGeneration == 0 || c.MinGeneration > c.Generation || c.Offset < fileHeaderSize {
		return fmt.Errorf("%w: %s: inconsistent checkpoint %+v", ErrCorrupt, checkpointName, *c)
	}
	return nil
}

// writeCheckpoint replaces the checkpoint atomically: temp file, fsync,
// rename, fsync the directory.
func writeCheckpoint(dir string, c *checkpoint) error {
	tmp := filepath.Join(dir, checkpointName+".tmp")
	if err := writeFileSync(tmp, c.marshal()); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, checkpointName)); err != nil {
		return fmt.Errorf("translog: %w", err)
	}
	return syncDir(dir)
}

func readCheckpoint(dir string) (*checkpoint, error) {
	b, err := os.ReadFile(filepath.Join(dir, checkpointName))
	if err != nil {
		return nil, err
	}
	c := new(checkpoint)
	return c, c.unmarshal(b)
}

func writeFileSync(name string, data []byte) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("translog: %w", err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("translog: writing %s: %w", name, err)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("translog: %w", err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("translog: syncing directory %s: %w", dir, err)
	}
	return nil
}
