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
// rolled, and the current one up to the checkpoint's offset, so any bad
// record there is corruption. Past that offset a bad record is a torn
// write — truncated — unless tornTail finds it is followed by valid data.
func (t *Translog) recover(ctx context.Context, ckp *checkpoint, gens []uint64) error {
	t.uuid, t.ckp = ckp.UUID, *ckp
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
	for g := ckp.MinGeneration; g <= ckp.Generation; g++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		info, err := t.recoverGeneration(g, g == ckp.Generation, ckp.Offset)
		if err != nil {
			return err
		}
		if g < ckp.Generation {
			t.old = append(t.old, info)
		} else {
			t.cur = info
		}
	}
	f, err := os.OpenFile(filepath.Join(t.dir, genFileName(ckp.Generation)), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("translog: %w", err)
	}
	t.file, t.written = f, t.cur.size
	t.synced = Location{Generation: t.cur.gen, Offset: t.cur.size}
	return t.writeCheckpoint()
}

// recoverGeneration validates one generation file and returns its summary;
// for the current generation it truncates a torn tail (and fsyncs).
func (t *Translog) recoverGeneration(gen uint64, current bool, durable int64) (genInfo, error) {
	name := filepath.Join(t.dir, genFileName(gen))
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		return genInfo{}, fmt.Errorf("%w: generation %d: %v", ErrCorrupt, gen, err)
	}
	defer f.Close()
	size := fileSize(name)
	if size < fileHeaderSize {
		return genInfo{}, fmt.Errorf("%w: %s: %d bytes, shorter than a header", ErrCorrupt, name, size)
	}
	if current && size < durable {
		return genInfo{}, fmt.Errorf("%w: %s: %d bytes, the checkpoint says %d are durable", ErrCorrupt, name, size, durable)
	}
	rr, err := newRecordReader(f, gen, t.uuid, size)
	if err != nil {
		return genInfo{}, err
	}
	for {
		_, err := rr.next()
		if err == nil {
			continue
		}
		if err == io.EOF {
			return rr.info, nil
		}
		bad, ok := asBad(err)
		if !ok {
			return genInfo{}, err
		}
		if !current || bad.off < durable {
			return genInfo{}, fmt.Errorf("%w: %s at offset %d: %s (below the durable offset %d)", ErrCorrupt, name, bad.off, bad.reason, durable)
		}
		torn, reason, err := tornTail(f, bad.off, size, bad)
		if err != nil {
			return genInfo{}, err
		}
		if !torn {
			return genInfo{}, fmt.Errorf("%w: %s at offset %d: %s", ErrCorrupt, name, bad.off, reason)
		}
		if err := f.Truncate(bad.off); err != nil {
			return genInfo{}, fmt.Errorf("translog: truncating %s: %w", name, err)
		}
		if err := f.Sync(); err != nil {
			return genInfo{}, fmt.Errorf("translog: %w", err)
		}
		t.truncated += size - bad.off
		t.log.Warn("translog: truncated a torn tail", "file", name, "offset", bad.off, "bytes", size-bad.off, "reason", reason)
		return rr.info, nil
	}
}
