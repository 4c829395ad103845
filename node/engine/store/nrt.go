package store

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"sync"
)

// NRTCachingDirectory wraps a delegate Directory and keeps small new files in
// RAM (Lucene's NRTCachingDirectory): outputs written for a flush or a merge
// whose IOContext.EstimatedSize is at most maxMergeSizeBytes go to an
// in-memory cache while the cache holds at most maxCachedBytes. Frequent
// refreshes then create no OS files until the segment is merged away or
// committed: Sync writes cached files through to the delegate, fsyncs them
// and drops them from RAM.
//
// A flush with an unknown size (EstimatedSize 0) is cached when there is room:
// flushes are bounded by the indexing RAM budget. A merge of unknown size is
// not cached.
type NRTCachingDirectory struct {
	delegate        Directory
	cache           *RAMDirectory
	maxMergeSize    int64
	maxCachedBytes  int64
	uncacheMu       sync.Mutex // serialises write-through of cached files
	mu              sync.Mutex // guards the cache/delegate choice in CreateOutput
	cachedOutputs   int64      // stats
	uncachedOutputs int64
}

// NewNRTCachingDirectory wraps delegate. Lucene's javadoc example uses 5 MB
// and 60 MB.
func NewNRTCachingDirectory(delegate Directory, maxMergeSizeBytes, maxCachedBytes int64) *NRTCachingDirectory {
	return &NRTCachingDirectory{
		delegate:       delegate,
		cache:          NewRAMDirectory(),
		maxMergeSize:   maxMergeSizeBytes,
		maxCachedBytes: maxCachedBytes,
	}
}

// Delegate is the wrapped directory.
func (d *NRTCachingDirectory) Delegate() Directory { return d.delegate }

// CacheStats describes the RAM cache.
type CacheStats struct {
	CachedBytes     int64    // bytes currently held in RAM
	CachedFiles     []string // names currently held in RAM, sorted
	CachedOutputs   int64    // outputs created in RAM so far
	UncachedOutputs int64    // outputs created in the delegate so far
}

// Stats reports what the cache holds.
func (d *NRTCachingDirectory) Stats() CacheStats {
	names, _ := d.cache.ListAll()
	d.mu.Lock()
	defer d.mu.Unlock()
	return CacheStats{
		CachedBytes:     d.cache.SizeInBytes(),
		CachedFiles:     names,
		CachedOutputs:   d.cachedOutputs,
		UncachedOutputs: d.uncachedOutputs,
	}
}

func (d *NRTCachingDirectory) doCache(ctx IOContext) bool {
	var size int64
	switch ctx.Kind {
	case IOFlush:
		size = ctx.EstimatedSize
	case IOMerge:
		if ctx.EstimatedSize <= 0 {
			return false
		}
		size = ctx.EstimatedSize
	default:
		return false
	}
	return size <= d.maxMergeSize && d.cache.SizeInBytes()+size <= d.maxCachedBytes
}

// CreateOutput implements Directory.
func (d *NRTCachingDirectory) CreateOutput(name string, ctx IOContext) (IndexOutput, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cache.FileExists(name) {
		return nil, fmt.Errorf("store: create %s: %w", name, fs.ErrExist)
	}
	if d.doCache(ctx) {
		if _, err := d.delegate.FileLength(name); err == nil {
			return nil, fmt.Errorf("store: create %s: %w", name, fs.ErrExist)
		}
		d.cachedOutputs++
		return d.cache.CreateOutput(name, ctx)
	}
	d.uncachedOutputs++
	return d.delegate.CreateOutput(name, ctx)
}

// OpenInput implements Directory: the RAM copy if cached, else the delegate.
func (d *NRTCachingDirectory) OpenInput(name string) (IndexInput, error) {
	in, err := d.cache.OpenInput(name)
	if err == nil {
		return in, nil
	}
	return d.delegate.OpenInput(name)
}

// DeleteFile implements Directory.
func (d *NRTCachingDirectory) DeleteFile(name string) error {
	if err := d.cache.DeleteFile(name); err == nil {
		return nil
	}
	return d.delegate.DeleteFile(name)
}

// ListAll implements Directory: the union of cache and delegate.
func (d *NRTCachingDirectory) ListAll() ([]string, error) {
	cached, _ := d.cache.ListAll()
	onDisk, err := d.delegate.ListAll()
	if err != nil {
		return nil, err
	}
	all := append(cached, onDisk...)
	slices.Sort(all)
	return slices.Compact(all), nil
}

// FileLength implements Directory.
func (d *NRTCachingDirectory) FileLength(name string) (int64, error) {
	if n, err := d.cache.FileLength(name); err == nil {
		return n, nil
	}
	return d.delegate.FileLength(name)
}

// Sync implements Directory: cached files are written through to the
// delegate and dropped from RAM, then everything is fsync'd.
func (d *NRTCachingDirectory) Sync(names []string) error {
	for _, n := range names {
		if err := d.uncache(n); err != nil {
			return err
		}
	}
	return d.delegate.Sync(names)
}

// uncache copies a cached file to the delegate, then drops the RAM copy. The
// delegate copy is complete before the cached one disappears, so a
// concurrent OpenInput always finds the file in one of them.
func (d *NRTCachingDirectory) uncache(name string) error {
	d.uncacheMu.Lock()
	defer d.uncacheMu.Unlock()
	in, err := d.cache.OpenInput(name)
	if err != nil {
		return nil // not cached (or already written through)
	}
	out, err := d.delegate.CreateOutput(name, IOContext{Kind: IOCommit})
	if err != nil {
		return fmt.Errorf("store: write through %s: %w", name, err)
	}
	if _, err := out.Write(in.Bytes()); err != nil {
		out.Close()
		return fmt.Errorf("store: write through %s: %w", name, err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("store: write through %s: %w", name, err)
	}
	if err := d.cache.DeleteFile(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// Rename implements Directory; a cached source is written through first
// (renames publish commit points, which must be durable files).
func (d *NRTCachingDirectory) Rename(from, to string) error {
	if err := d.uncache(from); err != nil {
		return err
	}
	return d.delegate.Rename(from, to)
}

// SyncMetaData implements Directory.
func (d *NRTCachingDirectory) SyncMetaData() error { return d.delegate.SyncMetaData() }

// Close writes every cached file through (as Lucene does, so nothing is lost
// by closing) and closes the delegate.
func (d *NRTCachingDirectory) Close() error {
	names, _ := d.cache.ListAll()
	for _, n := range names {
		if err := d.uncache(n); err != nil {
			return err
		}
	}
	return d.delegate.Close()
}
