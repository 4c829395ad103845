// Package filewatch keeps what a process read from files current with the
// files on disk — certificates, keys files — as Kubernetes rewrites a
// mounted Secret and cert-manager renews one. It checks on use rather than
// from a goroutine: a caller asks Refresh before using what was read, and
// the files' modification times and sizes are compared at most once per
// interval. What does not load (a secret half written) leaves what was
// loaded before in force, and is logged; the next check tries again.
package filewatch

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// Watch re-runs a load function when its files change.
type Watch struct {
	what     string
	names    []string
	interval time.Duration
	load     func() error
	log      *slog.Logger

	mu      sync.Mutex
	checked time.Time
	stamp   string // modification times and sizes at the last load
}

// New loads once (its error is returned) and returns a Watch that loads
// again when one of names changes; what names the files in logs, and
// empty names are skipped.
func New(what string, interval time.Duration, log *slog.Logger, load func() error, names ...string) (*Watch, error) {
	w := &Watch{what: what, names: names, interval: interval, load: load, log: log}
	stamp, err := w.stampFiles()
	if err != nil {
		return nil, err
	}
	if err := load(); err != nil {
		return nil, err
	}
	w.stamp, w.checked = stamp, time.Now()
	return w, nil
}

// stampFiles identifies the files' contents cheaply.
func (w *Watch) stampFiles() (string, error) {
	var b bytes.Buffer
	for _, name := range w.names {
		if name == "" {
			b.WriteString("-;")
			continue
		}
		fi, err := os.Stat(name)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "%d/%d;", fi.ModTime().UnixNano(), fi.Size())
	}
	return b.String(), nil
}

// Refresh loads again if the last check is older than the interval and
// the files changed since the last load.
func (w *Watch) Refresh() {
	w.mu.Lock()
	if time.Since(w.checked) < w.interval {
		w.mu.Unlock()
		return
	}
	w.checked = time.Now()
	old := w.stamp
	w.mu.Unlock()
	stamp, err := w.stampFiles()
	if err != nil {
		w.log.Warn(w.what+" unreadable; keeping the loaded ones", "files", w.names, "err", err)
		return
	}
	if stamp == old {
		return
	}
	if err := w.load(); err != nil {
		w.log.Warn(w.what+" changed but do not load; keeping the loaded ones", "err", err)
		return
	}
	w.mu.Lock()
	w.stamp = stamp
	w.mu.Unlock()
	w.log.Info(w.what+" reloaded", "files", w.names)
}
