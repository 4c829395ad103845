// Package bitflip damages index files on disk for tests of the checks that
// must find the damage (scrub, verification, merges, replication): a byte
// flipped in place through the file system, as a bit flip on the disk
// looks to the page cache once read.
package bitflip

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Largest flips a byte in the middle of the largest regular file of dir
// whose name ends with suffix (or starts with it, for "segments_") and
// returns the file's name.
func Largest(t testing.TB, dir, suffix string) string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var name string
	var size int64
	for _, de := range ents {
		info, err := de.Info()
		if err != nil || !info.Mode().IsRegular() {
			continue
		}
		if (strings.HasSuffix(de.Name(), suffix) || strings.HasPrefix(de.Name(), suffix)) && info.Size() > size {
			name, size = de.Name(), info.Size()
		}
	}
	if name == "" {
		t.Fatalf("no %s file in %s", suffix, dir)
	}
	At(t, filepath.Join(dir, name), size/2)
	return name
}

// At flips a byte of the file at off (negative: from the end), in place.
func At(t testing.TB, path string, off int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if off < 0 {
		info, err := f.Stat()
		if err != nil {
			t.Fatal(err)
		}
		off += info.Size()
	}
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x5a
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}
