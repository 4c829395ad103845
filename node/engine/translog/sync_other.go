//go:build !linux

package translog

import "os"

// fdatasync is fsync where the platform lacks fdatasync.
func fdatasync(f *os.File) error { return f.Sync() }
