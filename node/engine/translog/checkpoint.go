package translog

import (
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
)

// ckpFile writes translog.ckp. The caller serializes writes (syncSem).
type ckpFile struct {
	dir  string
	f    *os.File // open for in-place writes; nil: create the file first
	seq  uint64   // of the newest durable slot
	slot int      // where the next write goes
	// syncs counts fdatasyncs of the checkpoint (Stats.CheckpointSyncs).
	syncs atomic.Int64
	buf   []byte
}

// write makes c the durable checkpoint: one pwrite into the older slot and
// one fdatasync. In-place overwrites of a file that keeps its size change
// no metadata fdatasync must flush (only mtime), so the journal is not
// committed: about one device cache flush per sync, as Elasticsearch's
// Checkpoint.write, not the three of a temp file, rename and directory
// fsync.
func (cf *ckpFile) write(c *Checkpoint) error {
	if cf.f == nil {
		return cf.create(c)
	}
	name := cf.f.Name()
	cf.buf = c.appendSlot(cf.buf[:0], cf.seq+1)
	if _, err := cf.f.WriteAt(cf.buf, int64(cf.slot)*ckpSlotSize); err != nil {
		return fmt.Errorf("translog: writing %s: %w", name, err)
	}
	cf.syncs.Add(1)
	if err := fdatasync(cf.f); err != nil {
		return fmt.Errorf("translog: fdatasync %s: %w", name, err)
	}
	cf.seq++
	cf.slot ^= 1
	return nil
}

// create writes a new checkpoint file holding c in both slots (temp file,
// fsync, rename, fsync the directory), so that a bad slot is always
// damage, never a slot not yet written. Used when the translog is created
// and to replace a version 1 file.
func (cf *ckpFile) create(c *Checkpoint) error {
	name := filepath.Join(cf.dir, checkpointName)
	b := make([]byte, ckpFileSize)
	c.appendSlot(b[:0], cf.seq+1)
	c.appendSlot(b[ckpSlotSize:ckpSlotSize], cf.seq+2)
	tmp := name + ".tmp"
	if err := writeFileSync(tmp, b); err != nil {
		return err
	}
	if err := os.Rename(tmp, name); err != nil {
		return fmt.Errorf("translog: %w", err)
	}
	if err := syncDir(cf.dir); err != nil {
		return err
	}
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("translog: %w", err)
	}
	cf.f, cf.seq, cf.slot = f, cf.seq+2, 0
	return nil
}

func (cf *ckpFile) close() error {
	if cf.f == nil {
		return nil
	}
	err := cf.f.Close()
	cf.f = nil
	return err
}
