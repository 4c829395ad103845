package translog

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// recover opens the generations the checkpoint references and checks every
// record. Generations before the current one were fsynced when they were
// rolled, and must be exactly what the next generation's header says; the
// current one was fsynced up to the checkpoint's offset before the
// checkpoint was. A bad record in any of that is corruption. Past the
// offset nothing was acknowledged as durable, so the first bad record there
// and everything after it is a torn tail and truncated. When the offset is
// only a lower bound (a version 1 checkpoint, or the newest checkpoint slot
// damaged) every record of the current generation must be valid except an
// incomplete last one or a zeroed end, which a crash mid-write leaves.
func (t *Translog) recover(ctx context.Context, lc *loadedCheckpoint, gens []uint64) error {
	ckp := &lc.Checkpoint
	t.uuid, t.ckp = ckp.UUID, *ckp
	if lc.damaged != "" {
		t.log.Warn("translog: checkpoint slot damaged; using the other one, and no torn tail is allowed",
			"file", filepath.Join(t.dir, checkpointName), "damaged", lc.damaged, "offset", ckp.Offset)
	}
	for _, g := range gens {
		name := filepath.Join(t.dir, genFileName(g))
		switch {
		case g < ckp.MinGeneration:
			// Trimmed by a checkpoint whose deletions did not finish.
			if err := os.Remove(name); err != nil {
				return fmt.Errorf("translog: %w", err)
			}
		case g > ckp.Generation:
			// A roll that crashed before its checkpoint: the new file
			// can only hold its header.
			if fileSize(name) > fileHeaderSize {
				return fmt.Errorf("%w: %s: generation %d is newer than the checkpoint's %d and holds data", ErrCorrupt, name, g, ckp.Generation)
			}
			if err := os.Remove(name); err != nil {
				return fmt.Errorf("translog: %w", err)
			}
		}
	}
	var prev *genInfo
	for g := ckp.MinGeneration; g <= ckp.Generation; g++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		info, err := t.recoverGeneration(g, lc, prev)
		if err != nil {
			return err
		}
		if g < ckp.Generation {
			t.old = append(t.old, info)
			prev = &t.old[len(t.old)-1]
		} else {
			t.cur = info
		}
	}
	name := filepath.Join(t.dir, genFileName(ckp.Generation))
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("translog: %w", err)
	}
	t.file, t.written = f, t.cur.size
	// Records past the old checkpoint are kept (and replayed) but may
	// never have been fsynced: make them durable before a checkpoint
	// claims them.
	if err := f.Sync(); err != nil {
		return fmt.Errorf("translog: fsync %s: %w", name, err)
	}
	t.dataSynced = t.pointLocked()
	// A version 1 checkpoint is replaced by a new file on this write
	// (ckpFile.create); a current one is written in place from now on.
	if !lc.v1 {
		cf, err := os.OpenFile(filepath.Join(t.dir, checkpointName), os.O_RDWR, 0)
		if err != nil {
			return fmt.Errorf("translog: %w", err)
		}
		t.ckpf.f, t.ckpf.seq, t.ckpf.slot = cf, lc.seq, lc.slot
	}
	return t.writeCheckpointLocked()
}

// recoverGeneration validates one generation file against the checkpoint
// (and, for an older one, against prev, the generation before it) and
// returns its summary; for the current generation it truncates a torn
// tail (and fsyncs).
func (t *Translog) recoverGeneration(gen uint64, lc *loadedCheckpoint, prev *genInfo) (genInfo, error) {
	ckp := &lc.Checkpoint
	current := gen == ckp.Generation
	name := filepath.Join(t.dir, genFileName(gen))
	corrupt := func(format string, args ...any) (genInfo, error) {
		return genInfo{}, fmt.Errorf("%w: %s: %s", ErrCorrupt, name, fmt.Sprintf(format, args...))
	}
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		return genInfo{}, fmt.Errorf("%w: generation %d: %v", ErrCorrupt, gen, err)
	}
	defer f.Close()
	size := fileSize(name)
	if size < fileHeaderSizeV1 {
		return corrupt("%d bytes, shorter than a header", size)
	}
	durable := size // an older generation: all of it
	if current {
		durable = ckp.Offset
		if size < durable {
			return corrupt("%d bytes, but %s records %d as synced", size, checkpointName, durable)
		}
	}
	rr, err := newRecordReader(f, gen, t.uuid, size)
	if err != nil {
		return genInfo{}, err
	}
	if p := prev; p != nil && rr.hdr.prevSize >= 0 && (p.size != rr.hdr.prevSize || p.ops != rr.hdr.prevOps) {
		return genInfo{}, fmt.Errorf("%w: %s: %d bytes with %d records, but generation %d was started after %d bytes with %d records",
			ErrCorrupt, filepath.Join(t.dir, genFileName(p.gen)), p.size, p.ops, gen, rr.hdr.prevSize, rr.hdr.prevOps)
	}
	checked := !current
	for {
		if !checked && rr.off >= durable {
			if err := t.checkSyncPoint(rr, ckp); err != nil {
				return genInfo{}, fmt.Errorf("%w: %s: %v", ErrCorrupt, name, err)
			}
			checked = true
		}
		off := rr.off
		op, err := rr.next()
		if err == nil {
			if op.Type == OpTrim {
				t.trims = append(t.trims, trimPoint{gen: gen, off: off, term: op.PrimaryTerm, above: op.SeqNo})
			}
			continue
		}
		if err == io.EOF {
			return rr.info, nil
		}
		bad, ok := asBad(err)
		if !ok {
			return genInfo{}, err
		}
		if bad.off < durable {
			if current {
				return corrupt("at offset %d: %s (below offset %d, which %s records as synced)", bad.off, bad.reason, durable, checkpointName)
			}
			return corrupt("at offset %d: %s (an older generation, complete when the translog rolled)", bad.off, bad.reason)
		}
		if !lc.exact {
			zero, err := zeroToEnd(f, bad.off, size)
			if err != nil {
				return genInfo{}, err
			}
			if !bad.incomplete && !zero {
				return corrupt("at offset %d: %s (%s holds no exact sync offset, so only an incomplete or zeroed last record is a torn write)",
					bad.off, bad.reason, checkpointName)
			}
		}
		if err := f.Truncate(bad.off); err != nil {
			return genInfo{}, fmt.Errorf("translog: truncating %s: %w", name, err)
		}
		if err := f.Sync(); err != nil {
			return genInfo{}, fmt.Errorf("translog: %w", err)
		}
		t.truncated += size - bad.off
		t.log.Warn("translog: truncated a torn tail past the last sync", "file", name, "offset", bad.off,
			"bytes", size-bad.off, "synced_offset", durable, "reason", bad.reason)
		return rr.info, nil
	}
}

// checkSyncPoint runs once reading the current generation reaches the
// checkpoint's offset: the offset must fall between records, and the
// records up to it, with the older generations', must be those the
// checkpoint counted.
func (t *Translog) checkSyncPoint(rr *recordReader, ckp *Checkpoint) error {
	if rr.off != ckp.Offset {
		return fmt.Errorf("%s records offset %d as synced, inside the record that ends at %d", checkpointName, ckp.Offset, rr.off)
	}
	if ckp.Ops < 0 {
		return nil // a version 1 checkpoint counts nothing
	}
	minSeq, maxSeq := rr.info.minSeq, rr.info.maxSeq
	for _, g := range t.old {
		minSeq, maxSeq = min(minSeq, g.minSeq), max(maxSeq, g.maxSeq)
	}
	if rr.info.ops != ckp.Ops || minSeq != ckp.MinSeqNo || maxSeq != ckp.MaxSeqNo {
		return fmt.Errorf("%d records (seq_no %d..%d) up to offset %d, but %s records %d (seq_no %d..%d)",
			rr.info.ops, minSeq, maxSeq, rr.off, checkpointName, ckp.Ops, ckp.MinSeqNo, ckp.MaxSeqNo)
	}
	return nil
}
