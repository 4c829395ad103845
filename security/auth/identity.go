package auth

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/sluice-search/sluice/cluster/rpc"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// Identity is an authenticated caller.
type Identity struct {
	// Principal names the caller: "api_key:<id>" or "cert:<common name>".
	Principal string
	// Roles are the role names the caller holds: an API key's, or a client
	// certificate's Organization values (as Kubernetes reads groups).
	Roles []string
	// KeyName is an API key's name.
	KeyName string
}

type identityKey struct{}

// FromContext returns the caller a guarded call was authenticated as.
func FromContext(ctx context.Context) (*Identity, bool) {
	id, ok := ctx.Value(identityKey{}).(*Identity)
	return id, ok
}

func withIdentity(ctx context.Context, id *Identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// errUnauthenticated is why a call was not authenticated; the text is the
// caller's to read and never holds a secret.
type errUnauthenticated struct{ reason string }

func (e *errUnauthenticated) Error() string { return e.reason }

// DefaultCacheTTL bounds how long a revoked key, a changed role or a
// deleted one keeps working on a coordinator that saw it before.
const DefaultCacheTTL = 5 * time.Second

// maxCachedKeys bounds the key cache: a flood of made-up ids would
// otherwise grow it without limit (each costs an etcd read, once per TTL).
const maxCachedKeys = 10000

// authenticator finds the caller of a call and its roles, with key and
// role lookups cached for ttl.
type authenticator struct {
	store *Store
	file  *fileRealm // nil without a keys file
	ttl   time.Duration
	now   func() time.Time

	mu      sync.Mutex
	keys    map[string]cachedKey
	roles   map[string]*sluicev1.Role
	rolesAt time.Time
}

type cachedKey struct {
	key *storedKey // nil: no such key
	at  time.Time
}

// storedKey is what a cached key needs.
type storedKey struct {
	hash    []byte
	roles   []string
	name    string
	expires time.Time // zero: never
}

func newAuthenticator(store *Store, ttl time.Duration) *authenticator {
	if ttl <= 0 {
		ttl = DefaultCacheTTL
	}
	return &authenticator{store: store, ttl: ttl, now: time.Now, keys: map[string]cachedKey{}}
}

// authenticate returns the caller: an API key in the authorization header
// (which, when present, decides, certificate or not), else a verified
// client certificate. In-process calls carry no peer of their own: they
// are authenticated by their header, or by the client certificate their
// in-process caller verified for them (rpc.WithClientCertificate).
func (a *authenticator) authenticate(ctx context.Context) (*Identity, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	if hs := md.Get("authorization"); len(hs) > 0 {
		if len(hs) > 1 {
			return nil, &errUnauthenticated{"more than one authorization header"}
		}
		cred, err := ParseAuthorization(hs[0])
		if err != nil {
			return nil, &errUnauthenticated{err.Error()}
		}
		return a.apiKey(ctx, cred)
	}
	if rpc.InProcess(ctx) {
		// No TLS peer of its own: a certificate counts only if the
		// in-process caller verified it for the network caller it serves
		// (the HTTP API).
		if leaf, ok := rpc.ClientCertificate(ctx); ok {
			return certIdentity(leaf)
		}
	} else if p, ok := peer.FromContext(ctx); ok {
		if ti, ok := p.AuthInfo.(credentials.TLSInfo); ok && len(ti.State.VerifiedChains) > 0 {
			return certIdentity(ti.State.VerifiedChains[0][0])
		}
	}
	return nil, &errUnauthenticated{`no credentials: send "authorization: ApiKey <key>" over TLS, or a client certificate of the cluster CA`}
}

// certIdentity is the caller a verified client certificate names: its
// Common Name, with its Organization values as roles.
func certIdentity(leaf *x509.Certificate) (*Identity, error) {
	if leaf.Subject.CommonName == "" {
		return nil, &errUnauthenticated{"client certificate has no common name"}
	}
	return &Identity{Principal: "cert:" + leaf.Subject.CommonName, Roles: leaf.Subject.Organization}, nil
}

func (a *authenticator) apiKey(ctx context.Context, cred Credential) (*Identity, error) {
	k, err := a.key(ctx, cred.ID)
	if err != nil {
		return nil, err
	}
	// One answer for a missing key and a wrong secret: the caller learns
	// nothing about which ids exist.
	if k == nil || !secretMatches(cred.Secret, k.hash) {
		return nil, &errUnauthenticated{"invalid API key"}
	}
	if !k.expires.IsZero() && !a.now().Before(k.expires) {
		return nil, &errUnauthenticated{"API key expired"}
	}
	return &Identity{Principal: "api_key:" + cred.ID, Roles: k.roles, KeyName: k.name}, nil
}

// key returns a key: the keys file's, else etcd's, from the cache while
// fresh; nil if there is none.
func (a *authenticator) key(ctx context.Context, id string) (*storedKey, error) {
	if k := a.file.key(id); k != nil {
		return k, nil
	}
	now := a.now()
	a.mu.Lock()
	c, ok := a.keys[id]
	a.mu.Unlock()
	if ok && now.Sub(c.at) < a.ttl {
		return c.key, nil
	}
	st, err := a.store.Key(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("authenticate: %w", err)
	}
	var k *storedKey
	if st != nil {
		k = &storedKey{hash: st.GetSecretSha256(), roles: st.GetKey().GetRoles(), name: st.GetKey().GetName()}
		if e := st.GetKey().GetExpiration(); e != nil {
			k.expires = e.AsTime()
		}
	}
	a.mu.Lock()
	if len(a.keys) >= maxCachedKeys {
		clear(a.keys)
	}
	a.keys[id] = cachedKey{key: k, at: now}
	a.mu.Unlock()
	return k, nil
}

// forget drops a key from the cache (revoked here: refused at once here,
// within the TTL elsewhere).
func (a *authenticator) forget(id string) {
	a.mu.Lock()
	delete(a.keys, id)
	a.mu.Unlock()
}

// rolesOf returns the roles of names that exist: the keys file's, else
// from a snapshot of etcd's at most ttl old.
func (a *authenticator) rolesOf(ctx context.Context, names []string) ([]*sluicev1.Role, error) {
	now := a.now()
	a.mu.Lock()
	roles, fresh := a.roles, now.Sub(a.rolesAt) < a.ttl
	a.mu.Unlock()
	if !fresh {
		all, err := a.store.Roles(ctx)
		if err != nil {
			return nil, fmt.Errorf("authorize: %w", err)
		}
		a.mu.Lock()
		a.roles, a.rolesAt = all, now
		a.mu.Unlock()
		roles = all
	}
	out := make([]*sluicev1.Role, 0, len(names))
	for _, n := range names {
		if r := a.file.role(n); r != nil {
			out = append(out, r)
		} else if r, ok := roles[n]; ok {
			out = append(out, r)
		}
	}
	return out, nil
}

// invalidateRoles makes the next call read the roles again.
func (a *authenticator) invalidateRoles() {
	a.mu.Lock()
	a.rolesAt = time.Time{}
	a.mu.Unlock()
}

// isUnauthenticated says whether err is a refusal of credentials rather
// than a failure to check them.
func isUnauthenticated(err error) bool {
	var u *errUnauthenticated
	return errors.As(err, &u)
}

// matches says whether an index name pattern covers name: "*" covers all,
// "p*" names starting with p, anything else only itself. A cluster-wide
// need is the name "*", which only the pattern "*" covers.
func matches(pattern, name string) bool {
	if pattern == "*" {
		return true
	}
	if p, ok := strings.CutSuffix(pattern, "*"); ok {
		return name != "*" && strings.HasPrefix(name, p)
	}
	return pattern == name
}

// allowed says whether roles grant p on the index (or cluster-wide, "*")
// name. Manage implies monitor; admin implies everything.
func allowed(roles []*sluicev1.Role, p sluicev1.Privilege, name string) bool {
	for _, r := range roles {
		if r.GetAdmin() {
			return true
		}
		for _, ip := range r.GetIndices() {
			granted := false
			for _, g := range ip.GetPrivileges() {
				granted = granted || g == p || (p == sluicev1.Privilege_PRIVILEGE_MONITOR && g == sluicev1.Privilege_PRIVILEGE_MANAGE)
			}
			if !granted {
				continue
			}
			for _, pat := range ip.GetNames() {
				if matches(pat, name) {
					return true
				}
			}
		}
	}
	return false
}

func isAdmin(roles []*sluicev1.Role) bool {
	for _, r := range roles {
		if r.GetAdmin() {
			return true
		}
	}
	return false
}
