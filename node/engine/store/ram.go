package store

import (
	"fmt"
	"hash/crc32"
	"io/fs"
	"slices"
	"sync"
)

// RAMDirectory keeps files on the Go heap. Used by tests and, inside
// NRTCachingDirectory, for small new segments. A file's bytes are never
// modified once its output is closed, so inputs share them without copying
// and keep them alive after DeleteFile.
type RAMDirectory struct {
	mu    sync.RWMutex
	files map[string]*ramFile
	size  int64 // bytes of complete and in-progress files
}

type ramFile struct {
	data     []byte
	size     int64 // bytes written so far, counted in the directory's size
	complete bool
}

// NewRAMDirectory returns an empty in-memory directory.
func NewRAMDirectory() *RAMDirectory {
	return &RAMDirectory{files: make(map[string]*ramFile)}
}

// SizeInBytes is the total size of the files held.
func (d *RAMDirectory) SizeInBytes() int64 {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.size
}

// FileExists reports whether name exists (complete or being written).
func (d *RAMDirectory) FileExists(name string) bool {
	d.mu.RLock()
	defer d.mu.RUnlock()
	_, ok := d.files[name]
	return ok
}

// CreateOutput implements Directory.
func (d *RAMDirectory) CreateOutput(name string, ctx IOContext) (IndexOutput, error) {
	if name == "" {
		return nil, fmt.Errorf("store: bad file name %q", name)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.files[name]; ok {
		return nil, fmt.Errorf("store: create %s: %w", name, fs.ErrExist)
	}
	f := &ramFile{}
	d.files[name] = f
	return &ramOutput{dir: d, name: name, file: f, throttle: ctx.Throttle}, nil
}

type ramOutput struct {
	dir      *RAMDirectory
	name     string
	file     *ramFile
	buf      []byte
	crc      uint32
	throttle func(n int) error
	closed   bool
}

func (o *ramOutput) Name() string       { return o.name }
func (o *ramOutput) FilePointer() int64 { return int64(len(o.buf)) }
func (o *ramOutput) Checksum() uint32   { return o.crc }

func (o *ramOutput) Write(p []byte) (int, error) {
	if o.closed {
		return 0, fmt.Errorf("store: write %s: %w", o.name, fs.ErrClosed)
	}
	if o.throttle != nil {
		if err := o.throttle(len(p)); err != nil {
			return 0, fmt.Errorf("store: write %s: %w", o.name, err)
		}
	}
	o.buf = append(o.buf, p...)
	o.crc = crc32.Update(o.crc, crcTable, p)
	o.dir.mu.Lock()
	if o.dir.files[o.name] == o.file {
		o.file.size += int64(len(p))
		o.dir.size += int64(len(p))
	}
	o.dir.mu.Unlock()
	return len(p), nil
}

func (o *ramOutput) Close() error {
	if o.closed {
		return nil
	}
	o.closed = true
	o.dir.mu.Lock()
	defer o.dir.mu.Unlock()
	// Deleted while being written: drop it.
	if cur, ok := o.dir.files[o.name]; ok && cur == o.file {
		o.file.data = o.buf
		o.file.complete = true
	}
	return nil
}

// OpenInput implements Directory.
func (d *RAMDirectory) OpenInput(name string) (IndexInput, error) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	f, ok := d.files[name]
	if !ok || !f.complete {
		return nil, fmt.Errorf("store: open %s: %w", name, fs.ErrNotExist)
	}
	return &ramInput{name: name, data: f.data}, nil
}

type ramInput struct {
	name string
	data []byte
}

func (in *ramInput) Name() string  { return in.name }
func (in *ramInput) Bytes() []byte { return in.data }
func (in *ramInput) Close() error  { return nil }

// DeleteFile implements Directory.
func (d *RAMDirectory) DeleteFile(name string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	f, ok := d.files[name]
	if !ok {
		return fmt.Errorf("store: delete %s: %w", name, fs.ErrNotExist)
	}
	delete(d.files, name)
	d.size -= f.size
	return nil
}

// ListAll implements Directory.
func (d *RAMDirectory) ListAll() ([]string, error) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	names := make([]string, 0, len(d.files))
	for n := range d.files {
		names = append(names, n)
	}
	slices.Sort(names)
	return names, nil
}

// FileLength implements Directory.
func (d *RAMDirectory) FileLength(name string) (int64, error) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	f, ok := d.files[name]
	if !ok || !f.complete {
		return 0, fmt.Errorf("store: length of %s: %w", name, fs.ErrNotExist)
	}
	return int64(len(f.data)), nil
}

// Sync implements Directory; RAM files are as durable as they get.
func (d *RAMDirectory) Sync(names []string) error {
	d.mu.RLock()
	defer d.mu.RUnlock()
	for _, n := range names {
		if _, ok := d.files[n]; !ok {
			return fmt.Errorf("store: sync %s: %w", n, fs.ErrNotExist)
		}
	}
	return nil
}

// Rename implements Directory (replacing to, as a POSIX rename does).
func (d *RAMDirectory) Rename(from, to string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	f, ok := d.files[from]
	if !ok || !f.complete {
		return fmt.Errorf("store: rename %s: %w", from, fs.ErrNotExist)
	}
	if old, ok := d.files[to]; ok {
		d.size -= old.size
	}
	delete(d.files, from)
	d.files[to] = f
	return nil
}

// SyncMetaData implements Directory (nothing to do).
func (d *RAMDirectory) SyncMetaData() error { return nil }

// Close implements Directory; open inputs stay valid.
func (d *RAMDirectory) Close() error { return nil }
