// Package dirlock takes an exclusive lock on a data directory, so two
// processes never use one directory at once: a second `sluice node` or
// `sluice dev` on the same directory fails at start, naming the process
// that holds it, instead of corrupting data or (etcd's bolt database waits
// for its own lock without a timeout) hanging silently.
//
// The lock is flock(2) on a file in the directory; the kernel releases it
// when the holder closes it or dies, so a crash leaves no stale lock. The
// file holds the holder's process id, for the error message only.
package dirlock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// ErrLocked matches (errors.Is) the error of a directory another process
// holds; the error's text names the directory and the process.
var ErrLocked = errors.New("locked by another process")

type lockedError struct{ dir, path, holder string }

func (e *lockedError) Error() string {
	return fmt.Sprintf("data dir %s is in use by %s, which holds %s", e.dir, e.holder, e.path)
}

func (e *lockedError) Is(target error) bool { return target == ErrLocked }

// Lock is a held directory lock.
type Lock struct {
	f *os.File
}

// Acquire creates dir if needed and locks dir/name without waiting.
func Acquire(dir, name string) (*Lock, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	path := filepath.Join(dir, name)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("data dir lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("data dir lock %s: %w", path, err)
		}
		holder := "another process"
		if b, err := os.ReadFile(path); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
				holder = "process " + strconv.Itoa(pid)
			}
		}
		return nil, &lockedError{dir: dir, path: path, holder: holder}
	}
	// Best effort: the pid only improves the message above.
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &Lock{f: f}, nil
}

// Release gives the lock up. Safe on a nil Lock.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}
