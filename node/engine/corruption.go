package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/sluice-search/sluice/node/engine/index"
	"github.com/sluice-search/sluice/node/engine/store"
)

// ErrFailed is wrapped by every error of an engine that failed (Failure):
// a damaged file was found while it was open. It stays failed; a store
// failed for damage is marked corrupted and refuses to open again.
var ErrFailed = errors.New("engine failed")

// ErrMarkedCorrupted is wrapped by Open's error when the store holds a
// corruption marker (a corrupted_<uuid> file, Elasticsearch's
// Store.markStoreCorrupted): an earlier run found a damaged file. It wraps
// index.ErrCorrupt. The marker goes with the shard's data, when the shard
// is deleted or restored from elsewhere.
var ErrMarkedCorrupted = fmt.Errorf("store marked corrupted: %w", index.ErrCorrupt)

// corruptionMarkerPrefix starts a corruption marker's name. It is not one
// of the engine's index files (isIndexFile), so no cleanup deletes it.
const corruptionMarkerPrefix = "corrupted_"

// corruptionMarker is a marker's content: why and when the store was
// marked, readable with cat.
type corruptionMarker struct {
	Reason string    `json:"reason"`
	Time   time.Time `json:"time"`
}

// Failure returns why the engine failed (an error wrapping ErrFailed and
// the cause, index.ErrCorrupt for a damaged file, naming it), or nil.
func (e *Engine) Failure() error {
	if p := e.failure.Load(); p != nil {
		return *p
	}
	return nil
}

// fail fails the engine for good (Elasticsearch's failEngine): every later
// write, refresh, commit, get and AcquireReader returns the failure, merges
// that were running cannot publish, and — when the cause is a damaged file
// — the store is marked corrupted so that Open refuses it after a restart
// too. Options.OnFailure hears of it once. source says which check found
// it (scrub, verify, merge).
func (e *Engine) fail(source string, cause error) {
	err := fmt.Errorf("%w (%s): %w", ErrFailed, source, cause)
	if !e.failure.CompareAndSwap(nil, &err) {
		return
	}
	e.opts.Logger.Error("engine: failed; refusing reads and writes", "source", source, "err", cause)
	if errors.Is(cause, index.ErrCorrupt) {
		if name, merr := markStoreCorrupted(e.dir, cause); merr != nil {
			e.opts.Logger.Error("engine: could not write the corruption marker", "err", merr)
		} else {
			e.opts.Logger.Error("engine: store marked corrupted", "marker", name)
		}
	}
	e.w.onTragicEvent(err)
	if f := e.opts.OnFailure; f != nil {
		f(err)
	}
}

// failOnCorruption counts a damaged file and fails the engine if err
// reports one (a merge's input, a segment Verify decoded).
func (e *Engine) failOnCorruption(source string, err error) {
	if errors.Is(err, index.ErrCorrupt) {
		e.checks.corrupt.Add(1)
		e.fail(source, err)
	}
}

// markStoreCorrupted writes a corruption marker into dir and makes it
// durable, returning its name.
func markStoreCorrupted(dir store.Directory, cause error) (string, error) {
	name := corruptionMarkerPrefix + uuid.NewString()
	data, err := json.Marshal(corruptionMarker{Reason: cause.Error(), Time: time.Now().UTC()})
	if err != nil {
		return "", err
	}
	out, err := dir.CreateOutput(name, store.IOContext{Kind: store.IOCommit})
	if err != nil {
		return "", err
	}
	if _, err := out.Write(append(data, '\n')); err != nil {
		out.Close()
		return "", err
	}
	if err := out.Close(); err != nil {
		return "", err
	}
	if err := dir.Sync([]string{name}); err != nil {
		return "", err
	}
	return name, dir.SyncMetaData()
}

// checkCorruptionMarkers returns an error wrapping ErrMarkedCorrupted,
// with the original reason, if dir holds a corruption marker.
func checkCorruptionMarkers(dir store.Directory) error {
	names, err := dir.ListAll()
	if err != nil {
		return fmt.Errorf("engine: list index files: %w", err)
	}
	for _, name := range names {
		if !strings.HasPrefix(name, corruptionMarkerPrefix) {
			continue
		}
		reason := "unreadable marker"
		var at time.Time
		if in, err := dir.OpenInput(name); err == nil {
			var m corruptionMarker
			if err := json.Unmarshal(in.Bytes(), &m); err == nil {
				reason, at = m.Reason, m.Time
			}
			in.Close()
		} else if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		return fmt.Errorf("engine: %w (%s, written %s): %s", ErrMarkedCorrupted, name, at.Format(time.RFC3339), reason)
	}
	return nil
}
