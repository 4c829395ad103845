// Package store is where segment and commit files live: a Directory of
// write-once files read through mmap (so the index stays off the Go heap), an
// in-RAM directory, and the NRT caching directory that keeps small new
// segments in memory until they are merged or committed.
//
// Files are written once and never modified; every codec file carries a
// header and a CRC32 footer (see the codec package) so corruption is detected
// — at open, before a merge copies a file, and at rest by the engine's
// scrubber — rather than served.
package store

import "io"

// IOKind says why a file is being written, so a Directory can choose where to
// put it (NRT caching keeps small flushes and merges in RAM) and the engine
// can throttle merge IO.
type IOKind uint8

const (
	IODefault IOKind = iota
	IOFlush          // a refresh or flush writing a new segment
	IOMerge          // a merge writing its output
	IOCommit         // commit points and other small metadata
)

// IOContext accompanies every CreateOutput.
type IOContext struct {
	Kind IOKind
	// EstimatedSize of the file or segment being written, if known (0 if not).
	EstimatedSize int64
	// Throttle, if non-nil, is called before each write with the number of
	// bytes about to be written; it may sleep (merge IO rate limiting) and
	// returns an error to abort the write (an aborted merge).
	Throttle func(n int) error
}

// Directory is a flat namespace of write-once files.
// Implementations are safe for concurrent use.
type Directory interface {
	// CreateOutput creates a new file. It is an error if name exists.
	CreateOutput(name string, ctx IOContext) (IndexOutput, error)
	// OpenInput opens a complete file (one whose output was closed).
	OpenInput(name string) (IndexInput, error)
	// DeleteFile removes a file. Readers holding an open input keep reading
	// it (mmap and RAM inputs stay valid until closed).
	DeleteFile(name string) error
	// ListAll lists file names, sorted.
	ListAll() ([]string, error)
	// FileLength returns the size of a complete file.
	FileLength(name string) (int64, error)
	// Sync makes the named files durable (fsync; RAM-cached files are
	// written through first).
	Sync(names []string) error
	// Rename atomically renames a file (used to publish commit points).
	Rename(from, to string) error
	// SyncMetaData makes renames, creations and deletions durable (fsync of
	// the directory itself).
	SyncMetaData() error
	Close() error
}

// IndexOutput is a file being written, append-only.
type IndexOutput interface {
	io.Writer
	Name() string
	// FilePointer is the number of bytes written so far.
	FilePointer() int64
	// Checksum is the CRC32 (IEEE) of all bytes written so far; codecs write
	// it as the file's footer.
	Checksum() uint32
	// Close completes the file; only then may it be opened for reading.
	Close() error
}

// IndexInput is a complete file opened for reading. Bytes returns the whole
// file (mmap'd or in RAM); slices of it stay valid until Close.
type IndexInput interface {
	Name() string
	Bytes() []byte
	Close() error
}
