package store

import (
	"errors"
	"fmt"
	"os"
)

// osPath returns the OS path of name when d keeps it as a plain file (an
// FSDirectory, or an NRTCachingDirectory's delegate when the file is not
// held in RAM).
func osPath(d Directory, name string) (string, bool) {
	switch d := d.(type) {
	case *FSDirectory:
		p, err := d.file(name)
		return p, err == nil
	case *NRTCachingDirectory:
		if d.cache.FileExists(name) {
			return "", false
		}
		return osPath(d.delegate, name)
	}
	return "", false
}

// LinkOrCopy makes dstName in dst a file with the bytes of srcName in src:
// a hard link when both are plain files on one file system (no bytes move;
// files are write-once, so the two names share nothing that can change),
// else a byte copy — across file systems (EXDEV), from or into RAM. linked
// says which. The new file is not synced: a commit that references it syncs
// it, as for any segment file.
func LinkOrCopy(src Directory, srcName string, dst Directory, dstName string) (linked bool, err error) {
	if from, ok := osPath(src, srcName); ok {
		if to, ok := osPath(dst, dstName); ok {
			lerr := os.Link(from, to)
			if lerr == nil {
				return true, nil
			}
			if errors.Is(lerr, os.ErrExist) {
				return false, fmt.Errorf("store: link %s: %w", dstName, lerr)
			}
			// EXDEV, EPERM (file systems without hard links): copy.
		}
	}
	in, err := src.OpenInput(srcName)
	if err != nil {
		return false, err
	}
	defer in.Close()
	out, err := dst.CreateOutput(dstName, IOContext{Kind: IODefault, EstimatedSize: int64(len(in.Bytes()))})
	if err != nil {
		return false, err
	}
	if _, err := out.Write(in.Bytes()); err != nil {
		out.Close()
		dst.DeleteFile(dstName)
		return false, fmt.Errorf("store: copy %s to %s: %w", srcName, dstName, err)
	}
	if err := out.Close(); err != nil {
		dst.DeleteFile(dstName)
		return false, fmt.Errorf("store: copy %s to %s: %w", srcName, dstName, err)
	}
	return false, nil
}
