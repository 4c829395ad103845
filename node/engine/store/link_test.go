package store

import (
	"bytes"
	"testing"
)

// TestLinkOrCopy: between plain files it links (one inode, no bytes
// moved); from or into RAM it copies; either way the new name reads the
// same bytes and an existing name is an error.
func TestLinkOrCopy(t *testing.T) {
	newFS := func(t *testing.T) Directory {
		d, err := NewFSDirectory(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	newNRT := func(t *testing.T) Directory { return NewNRTCachingDirectory(newFS(t), 1<<20, 1<<20) }
	newRAM := func(*testing.T) Directory { return NewRAMDirectory() }
	for _, tc := range []struct {
		name       string
		src, dst   func(*testing.T) Directory
		cached     bool // source file written into the NRT cache
		wantLinked bool
	}{
		{"fs to fs", newFS, newFS, false, true},
		{"nrt on disk to nrt", newNRT, newNRT, false, true},
		{"nrt cached to fs", newNRT, newFS, true, false},
		{"ram to fs", newRAM, newFS, false, false},
		{"fs to ram", newFS, newRAM, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, dst := tc.src(t), tc.dst(t)
			ctx := IOContext{Kind: IODefault}
			if tc.cached {
				ctx = IOContext{Kind: IOFlush, EstimatedSize: 10}
			}
			out, err := src.CreateOutput("_1.fdt", ctx)
			if err != nil {
				t.Fatal(err)
			}
			want := []byte("segment bytes")
			out.Write(want)
			if err := out.Close(); err != nil {
				t.Fatal(err)
			}
			linked, err := LinkOrCopy(src, "_1.fdt", dst, "_7.fdt")
			if err != nil || linked != tc.wantLinked {
				t.Fatalf("linked=%v err=%v, want linked=%v", linked, err, tc.wantLinked)
			}
			in, err := dst.OpenInput("_7.fdt")
			if err != nil {
				t.Fatal(err)
			}
			defer in.Close()
			if !bytes.Equal(in.Bytes(), want) {
				t.Fatalf("read %q", in.Bytes())
			}
			if _, err := LinkOrCopy(src, "_1.fdt", dst, "_7.fdt"); err == nil {
				t.Fatal("linking onto an existing name succeeded")
			}
		})
	}
}
