package translog

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ErrCorrupt marks translog damage that recovery must not repair: a bad
// record below the offset the checkpoint records as synced, a generation
// that does not match what its successor's header recorded, a broken
// chain, a bad header or checkpoint. Errors wrap it with the file and
// offset.
var ErrCorrupt = errors.New("translog corrupt")

// UUID identifies one translog; every generation file carries it so files
// of another shard's translog are never replayed.
type UUID [16]byte

func (u UUID) String() string { return hex.EncodeToString(u[:]) }

// Generation file header, little endian:
//
//	magic "SLTG" | version u32 | generation u64 | uuid [16] | prevSize u64 | prevOps u64 | crc u32
//
// prevSize and prevOps are the final size and record count of generation-1:
// a roll writes this header after fsyncing its predecessor, so recovery can
// tell a retained older generation that lost records at a record boundary.
// Version 1 headers (written before checkpoints on every sync) end after
// the uuid and are still read. Version 3 (the same layout as 2) marks
// generations whose records carry primary terms and may hold trim records
// (OpTrim): a build that reads only version 2 refuses the file instead of
// taking a trim record for damage — and, past the checkpoint's offset,
// cutting it and what follows as a torn tail. In version 1 and 2 files a
// record's term 0 reads as 1 (see Op.PrimaryTerm). Version 4 (the same
// layout) marks generations that may hold OpUpdateDocValues records, so a
// build that does not know them refuses the file the same way.
const (
	fileMagic        = "SLTG"
	fileVersion      = 4
	firstTermVersion = 3 // the first version whose records carry terms
	fileHeaderSizeV1 = 4 + 4 + 8 + 16 + 4
	fileHeaderSize   = fileHeaderSizeV1 + 8 + 8
	filePrefix       = "translog-"
	fileSuffix       = ".tlog"
	checkpointName   = "translog.ckp"
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

// fileHeader returns the header of generation gen, whose predecessor ended
// at prevSize bytes with prevOps records, and its crc, which seeds the
// record chain.
func fileHeader(gen uint64, uuid UUID, prevSize, prevOps int64) ([]byte, uint32) {
	h := make([]byte, 0, fileHeaderSize)
	h = append(h, fileMagic...)
	h = binary.LittleEndian.AppendUint32(h, fileVersion)
	h = binary.LittleEndian.AppendUint64(h, gen)
	h = append(h, uuid[:]...)
	h = binary.LittleEndian.AppendUint64(h, uint64(prevSize))
	h = binary.LittleEndian.AppendUint64(h, uint64(prevOps))
	crc := crc32.Checksum(h, castagnoli)
	return binary.LittleEndian.AppendUint32(h, crc), crc
}

// genHeader is what a generation file's header says.
type genHeader struct {
	size int64  // of the header: records start here
	crc  uint32 // the chain's seed
	// prevSize and prevOps describe the previous generation; -1 in
	// version 1 headers.
	prevSize, prevOps int64
	version           uint32
}

// readFileHeader checks the header of f against gen and uuid.
func readFileHeader(f *os.File, gen uint64, uuid UUID) (genHeader, error) {
	var h [fileHeaderSize]byte
	n, err := f.ReadAt(h[:], 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return genHeader{}, fmt.Errorf("translog: reading %s: %w", f.Name(), err)
	}
	bad := func(format string, args ...any) (genHeader, error) {
		return genHeader{}, fmt.Errorf("%w: %s: header: %s", ErrCorrupt, f.Name(), fmt.Sprintf(format, args...))
	}
	if n < 8 || string(h[:4]) != fileMagic {
		return bad("not a translog generation file")
	}
	hdr := genHeader{size: fileHeaderSize, prevSize: -1, prevOps: -1, version: binary.LittleEndian.Uint32(h[4:])}
	switch hdr.version {
	case 1:
		hdr.size = fileHeaderSizeV1
	case 2, firstTermVersion, fileVersion:
	default:
		return bad("unsupported version %d", hdr.version)
	}
	if int64(n) < hdr.size {
		return bad("%d bytes, want %d", n, hdr.size)
	}
	body := h[:hdr.size-4]
	hdr.crc = binary.LittleEndian.Uint32(h[hdr.size-4:])
	if crc32.Checksum(body, castagnoli) != hdr.crc {
		return bad("checksum mismatch")
	}
	if g := binary.LittleEndian.Uint64(body[8:]); g != gen || string(body[16:32]) != string(uuid[:]) {
		return bad("is generation %d of translog %x, want generation %d of %s", g, body[16:32], gen, uuid)
	}
	if hdr.size == fileHeaderSize {
		hdr.prevSize = int64(binary.LittleEndian.Uint64(body[32:]))
		hdr.prevOps = int64(binary.LittleEndian.Uint64(body[40:]))
	}
	return hdr, nil
}

// Checkpoint is the translog's durable state (translog.ckp), rewritten on
// every sync (see writeCheckpoint) and on create, roll, trim and close.
type Checkpoint struct {
	UUID UUID
	// Generation is the current (writable) generation; Offset is its size
	// at the last sync and Ops the records below Offset (-1: unknown, in a
	// version 1 checkpoint). Everything below Offset was fsynced before the
	// checkpoint was, so a bad record there is corruption, never a torn
	// write.
	Generation uint64
	Offset     int64
	Ops        int64
	// MinGeneration is the oldest generation still needed.
	MinGeneration uint64
	// MinSeqNo and MaxSeqNo span the synced ops of the retained
	// generations (MinSeqNo > MaxSeqNo when there are none); TrimmedBelow is
	// the last TrimBelow argument.
	MinSeqNo, MaxSeqNo, TrimmedBelow uint64
}

// Checkpoint file layout: two slots of ckpSlotSize bytes, written in turn
// in place (pwrite + fdatasync; the file never changes size), each
//
//	magic "SLCK" | version u32 | seq u64 | uuid [16] | generation u64 | offset u64 | ops u64 |
//	minGeneration u64 | minSeqNo u64 | maxSeqNo u64 | trimmedBelow u64 | crc u32
//
// The valid slot with the higher seq is the checkpoint. A write goes to the
// other slot, so the previous checkpoint survives a torn write; each slot
// starts a page and is shorter than a 512-byte sector, so one write touches
// one sector. Version 1 checkpoints (ckpSizeV1 bytes, one record replaced by
// rename) are still read. The slot layout is version 2 (ckpVersion),
// whatever the generation files' version.
const (
	ckpMagic    = "SLCK"
	ckpVersion  = 2
	ckpSlotSize = 4096
	ckpFileSize = 2 * ckpSlotSize
	ckpSize     = 4 + 4 + 8 + 16 + 8*7 + 4
	ckpSizeV1   = 4 + 4 + 16 + 8*6 + 4
)

// appendSlot appends c as a slot with sequence number seq to b.
func (c *Checkpoint) appendSlot(b []byte, seq uint64) []byte {
	b = append(b, ckpMagic...)
	b = binary.LittleEndian.AppendUint32(b, ckpVersion)
	b = binary.LittleEndian.AppendUint64(b, seq)
	b = append(b, c.UUID[:]...)
	for _, v := range [...]uint64{c.Generation, uint64(c.Offset), uint64(c.Ops), c.MinGeneration, c.MinSeqNo, c.MaxSeqNo, c.TrimmedBelow} {
		b = binary.LittleEndian.AppendUint64(b, v)
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// unmarshalSlot parses one slot; it returns the slot's seq, or why the slot
// is not a checkpoint.
func (c *Checkpoint) unmarshalSlot(b []byte) (uint64, error) {
	b = b[:ckpSize]
	switch {
	case string(b[:4]) != ckpMagic:
		return 0, errors.New("bad magic")
	case binary.LittleEndian.Uint32(b[4:]) != ckpVersion:
		return 0, fmt.Errorf("unsupported version %d", binary.LittleEndian.Uint32(b[4:]))
	case crc32.Checksum(b[:ckpSize-4], castagnoli) != binary.LittleEndian.Uint32(b[ckpSize-4:]):
		return 0, errors.New("checksum mismatch")
	}
	seq := binary.LittleEndian.Uint64(b[8:])
	copy(c.UUID[:], b[16:32])
	v := func(i int) uint64 { return binary.LittleEndian.Uint64(b[32+8*i:]) }
	c.Generation, c.Offset, c.Ops, c.MinGeneration = v(0), int64(v(1)), int64(v(2)), v(3)
	c.MinSeqNo, c.MaxSeqNo, c.TrimmedBelow = v(4), v(5), v(6)
	return seq, c.check()
}

// unmarshalV1 parses a version 1 checkpoint file.
func (c *Checkpoint) unmarshalV1(b []byte) error {
	if string(b[:4]) != ckpMagic || binary.LittleEndian.Uint32(b[4:]) != 1 ||
		crc32.Checksum(b[:ckpSizeV1-4], castagnoli) != binary.LittleEndian.Uint32(b[ckpSizeV1-4:]) {
		return errors.New("bad version 1 checkpoint")
	}
	copy(c.UUID[:], b[8:24])
	v := func(i int) uint64 { return binary.LittleEndian.Uint64(b[24+8*i:]) }
	c.Generation, c.Offset, c.Ops, c.MinGeneration = v(0), int64(v(1)), -1, v(2)
	c.MinSeqNo, c.MaxSeqNo, c.TrimmedBelow = v(3), v(4), v(5)
	return c.check()
}

func (c *Checkpoint) check() error {
	if c.MinGeneration == 0 || c.MinGeneration > c.Generation || c.Offset < fileHeaderSizeV1 || c.Ops < -1 {
		return fmt.Errorf("inconsistent checkpoint %+v", *c)
	}
	return nil
}

// loadedCheckpoint is a checkpoint as Open found it.
type loadedCheckpoint struct {
	Checkpoint
	seq  uint64 // of the slot it came from
	slot int    // where the next write goes: the other slot
	// exact: Offset is the last sync's. Otherwise (a version 1 file, or the
	// newest slot damaged) it is only a lower bound.
	exact bool
	// v1: the file has the old layout and must be recreated.
	v1 bool
	// damaged says which slot was unreadable and why (exact is false).
	damaged string
}

// ReadCheckpoint reads the checkpoint in dir (for inspection and tests):
// the newest valid slot.
func ReadCheckpoint(dir string) (Checkpoint, error) {
	lc, err := readCheckpoint(dir)
	if err != nil {
		return Checkpoint{}, err
	}
	return lc.Checkpoint, nil
}

func readCheckpoint(dir string) (*loadedCheckpoint, error) {
	name := filepath.Join(dir, checkpointName)
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	lc := new(loadedCheckpoint)
	switch len(b) {
	case ckpSizeV1:
		if err := lc.unmarshalV1(b); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, name, err)
		}
		lc.v1 = true
		return lc, nil
	case ckpFileSize:
	default:
		return nil, fmt.Errorf("%w: %s: %d bytes, want %d", ErrCorrupt, name, len(b), ckpFileSize)
	}
	var slots [2]Checkpoint
	var seqs [2]uint64
	var errs [2]error
	for i := range slots {
		seqs[i], errs[i] = slots[i].unmarshalSlot(b[i*ckpSlotSize:])
	}
	switch {
	case errs[0] != nil && errs[1] != nil:
		return nil, fmt.Errorf("%w: %s: both slots damaged (at offset 0: %v; at offset %d: %v)",
			ErrCorrupt, name, errs[0], ckpSlotSize, errs[1])
	case errs[0] == nil && errs[1] == nil:
		if slots[0].UUID != slots[1].UUID {
			return nil, fmt.Errorf("%w: %s: slots name translogs %s and %s", ErrCorrupt, name, slots[0].UUID, slots[1].UUID)
		}
		newest := 0
		if seqs[1] > seqs[0] {
			newest = 1
		}
		lc.Checkpoint, lc.seq, lc.slot, lc.exact = slots[newest], seqs[newest], 1-newest, true
	default:
		good := 0
		if errs[0] != nil {
			good = 1
		}
		lc.Checkpoint, lc.seq, lc.slot = slots[good], seqs[good], 1-good
		lc.damaged = fmt.Sprintf("slot at offset %d: %v", (1-good)*ckpSlotSize, errs[1-good])
	}
	return lc, nil
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
