package auth

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/sluice-search/sluice/client"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
	"github.com/sluice-search/sluice/security/filewatch"
)

// A keys file declares API keys and roles outside etcd, as Elasticsearch's
// file realm declares users: a deployment (the Helm chart) bootstraps its
// admin and operator keys without a running cluster to ask, and without
// the coordinator ever seeing a secret, since the file holds only each
// secret's SHA-256. Its keys and roles are read-only through the API
// (neither listed nor revocable there): change the file, which is re-read
// when it changes on disk, at most FileCheckInterval stale. A file that
// changes but does not load keeps the previous one in force, and is
// logged.
//
//	{"roles": [{"name": "sluice-operator", "indices": ["*:manage,read,write"]}],
//	 "keys":  [{"id": "k1", "name": "operator", "roles": ["sluice-operator"],
//	            "secretSha256": "<64 hex digits>"}]}
type KeysFile struct {
	Roles []FileRole `json:"roles"`
	Keys  []FileKey  `json:"keys"`
}

// FileRole is a role of a keys file; indices are as `sluice auth put-role
// --index` takes them, "patterns:privileges".
type FileRole struct {
	Name    string   `json:"name"`
	Indices []string `json:"indices"`
	Admin   bool     `json:"admin,omitempty"`
}

// FileKey is an API key of a keys file.
type FileKey struct {
	ID           string   `json:"id"`
	Name         string   `json:"name"`
	Roles        []string `json:"roles"`
	SecretSHA256 string   `json:"secretSha256"`
}

// FileCheckInterval is how stale a coordinator's view of its keys file
// may be.
const FileCheckInterval = time.Second

// ParseIndexPrivileges reads "pattern[,pattern]:privilege[,privilege]",
// privileges by name ("read", "monitor").
func ParseIndexPrivileges(spec string) (*sluicev1.IndexPrivileges, error) {
	names, privs, ok := strings.Cut(spec, ":")
	if !ok || names == "" || privs == "" {
		return nil, fmt.Errorf("%q: want PATTERNS:PRIVILEGES, e.g. 'logs-*:read,monitor'", spec)
	}
	ip := &sluicev1.IndexPrivileges{Names: strings.Split(names, ",")}
	for _, p := range strings.Split(privs, ",") {
		v, err := client.ParseEnum[sluicev1.Privilege]("privilege", p)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", spec, err)
		}
		ip.Privileges = append(ip.Privileges, v)
	}
	return ip, nil
}

// fileRealm is a keys file, kept current.
type fileRealm struct {
	path  string
	watch *filewatch.Watch

	mu    sync.Mutex
	keys  map[string]*storedKey
	roles map[string]*sluicev1.Role
}

// loadFileRealm reads path once, failing on a file that does not load.
func loadFileRealm(path string, log *slog.Logger) (*fileRealm, error) {
	f := &fileRealm{path: path}
	var err error
	if f.watch, err = filewatch.New("keys file", FileCheckInterval, log, f.load, path); err != nil {
		return nil, fmt.Errorf("keys file: %w", err)
	}
	return f, nil
}

func (f *fileRealm) load() error {
	b, err := os.ReadFile(f.path)
	if err != nil {
		return err
	}
	keys, roles, err := parseKeysFile(b)
	if err != nil {
		return fmt.Errorf("%s: %w", f.path, err)
	}
	f.mu.Lock()
	f.keys, f.roles = keys, roles
	f.mu.Unlock()
	return nil
}

// parseKeysFile checks a keys file whole: a file with one bad entry is
// refused, rather than half applied.
func parseKeysFile(b []byte) (map[string]*storedKey, map[string]*sluicev1.Role, error) {
	var kf KeysFile
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&kf); err != nil {
		return nil, nil, err
	}
	roles := map[string]*sluicev1.Role{}
	for i, fr := range kf.Roles {
		r := &sluicev1.Role{Name: fr.Name, Admin: fr.Admin}
		for _, spec := range fr.Indices {
			ip, err := ParseIndexPrivileges(spec)
			if err != nil {
				return nil, nil, fmt.Errorf("roles[%d].indices: %w", i, err)
			}
			r.Indices = append(r.Indices, ip)
		}
		if err := validateRole(r); err != nil {
			return nil, nil, fmt.Errorf("roles[%d]: %w", i, err)
		}
		if _, dup := roles[r.Name]; dup {
			return nil, nil, fmt.Errorf("roles[%d]: role [%s] given twice", i, r.Name)
		}
		roles[r.Name] = r
	}
	keys := map[string]*storedKey{}
	for i, fk := range kf.Keys {
		switch {
		case !validPart(fk.ID):
			return nil, nil, fmt.Errorf("keys[%d].id: 1 to 64 letters, digits, '-' or '_'", i)
		case keys[fk.ID] != nil:
			return nil, nil, fmt.Errorf("keys[%d].id: key [%s] given twice", i, fk.ID)
		case fk.Name == "":
			return nil, nil, fmt.Errorf("keys[%d].name: required", i)
		case len(fk.Roles) == 0:
			return nil, nil, fmt.Errorf("keys[%d].roles: at least one", i)
		}
		hash, err := hex.DecodeString(fk.SecretSHA256)
		if err != nil || len(hash) != 32 {
			return nil, nil, fmt.Errorf("keys[%d].secretSha256: want the SHA-256 of the secret, 64 hex digits", i)
		}
		keys[fk.ID] = &storedKey{hash: hash, roles: fk.Roles, name: fk.Name}
	}
	return keys, roles, nil
}

// current returns the file's keys and roles, re-read if it changed;
// none without a file.
func (f *fileRealm) current() (map[string]*storedKey, map[string]*sluicev1.Role) {
	if f == nil {
		return nil, nil
	}
	f.watch.Refresh()
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.keys, f.roles
}

// key returns the file's key of id, nil if it has none.
func (f *fileRealm) key(id string) *storedKey {
	keys, _ := f.current()
	return keys[id]
}

// role returns the file's role of name, nil if it has none.
func (f *fileRealm) role(name string) *sluicev1.Role {
	_, roles := f.current()
	return roles[name]
}
