package node

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/uuid"

	"github.com/sluice-search/sluice/cluster/dirlock"
)

const (
	nodeIDFile = "node.id"
	lockFile   = "node.lock"
)

// lockDataDir takes an exclusive lock on the data directory, so two
// processes never serve the same node id and disk.
func lockDataDir(dir string) (*dirlock.Lock, error) {
	return dirlock.Acquire(dir, lockFile)
}

// loadNodeID returns the node id stored in the data dir. If there is none it
// stores want, or a new random id when want is empty; a stored id that
// differs from a non-empty want is an error (the disk belongs to another
// node).
func loadNodeID(dir, want string) (string, error) {
	path := filepath.Join(dir, nodeIDFile)
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		id := strings.TrimSpace(string(b))
		if want != "" && want != id {
			return "", fmt.Errorf("data dir %s belongs to node %q, not %q", dir, id, want)
		}
		return id, nil
	case !errors.Is(err, os.ErrNotExist):
		return "", fmt.Errorf("read node id: %w", err)
	}
	id := want
	if id == "" {
		id = uuid.NewString()[:13]
	}
	if strings.ContainsAny(id, "/ ") {
		return "", fmt.Errorf("invalid node id %q", id)
	}
	// Write then rename, so a crash never leaves an empty id file.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(id+"\n"), 0o644); err != nil {
		return "", fmt.Errorf("write node id: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", fmt.Errorf("write node id: %w", err)
	}
	return id, nil
}
