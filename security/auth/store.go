package auth

import (
	"context"
	"crypto/rand"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sluice-search/sluice/cluster/state"
	statev1 "github.com/sluice-search/sluice/proto/sluice/state/v1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// Store keeps API keys (hashed) and roles in etcd, under the cluster's
// prefix: auth/keys/<id>, auth/roles/<name>, and auth/pit-key (the key
// that binds point-in-time ids to their creators).
type Store struct {
	c      *clientv3.Client
	prefix string
}

// NewStore returns the store of the cluster under prefix ("" = the
// default prefix).
func NewStore(c *clientv3.Client, prefix string) *Store {
	return &Store{c: c, prefix: state.NewKeys(prefix).Prefix + "auth/"}
}

func (s *Store) keyKey(id string) string    { return s.prefix + "keys/" + id }
func (s *Store) roleKey(name string) string { return s.prefix + "roles/" + name }
func (s *Store) pitKey() string             { return s.prefix + "pit-key" }
func (s *Store) keysPrefix() string         { return s.prefix + "keys/" }
func (s *Store) rolesPrefix() string        { return s.prefix + "roles/" }
func (s *Store) get(ctx context.Context, key string, m proto.Message) (bool, error) {
	resp, err := s.c.Get(ctx, key)
	if err != nil {
		return false, fmt.Errorf("auth store: %w", err)
	}
	if len(resp.Kvs) == 0 {
		return false, nil
	}
	return true, state.Unmarshal(resp.Kvs[0].Value, m)
}

// CreateKey stores a new key granting roles (which must exist) and
// returns it with its credential, the only time the secret is known.
func (s *Store) CreateKey(ctx context.Context, name string, roles []string, ttl time.Duration, creator string) (*sluicev1.ApiKey, Credential, error) {
	if name == "" {
		return nil, Credential{}, state.InvalidFieldf("name", "name: required")
	}
	if len(roles) == 0 {
		return nil, Credential{}, state.InvalidFieldf("roles", "roles: at least one")
	}
	if ttl < 0 {
		return nil, Credential{}, state.InvalidFieldf("expiration", "expiration must not be negative")
	}
	known, err := s.Roles(ctx)
	if err != nil {
		return nil, Credential{}, err
	}
	for _, r := range roles {
		if _, ok := known[r]; !ok {
			return nil, Credential{}, state.InvalidFieldf("roles", "no such role [%s]", r)
		}
	}
	cred := newCredential()
	now := time.Now()
	k := &sluicev1.ApiKey{Id: cred.ID, Name: name, Roles: roles, Creator: creator, Created: timestamppb.New(now)}
	if ttl > 0 {
		k.Expiration = timestamppb.New(now.Add(ttl))
	}
	v, err := state.Marshal(&statev1.StoredApiKey{Key: k, SecretSha256: hashSecret(cred.Secret)})
	if err != nil {
		return nil, Credential{}, err
	}
	key := s.keyKey(cred.ID)
	resp, err := s.c.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).Then(clientv3.OpPut(key, v)).Commit()
	if err != nil {
		return nil, Credential{}, fmt.Errorf("auth store: %w", err)
	}
	if !resp.Succeeded {
		return nil, Credential{}, fmt.Errorf("auth store: key id collision (retry)")
	}
	return k, cred, nil
}

// Key returns the stored key of id, nil if there is none.
func (s *Store) Key(ctx context.Context, id string) (*statev1.StoredApiKey, error) {
	k := &statev1.StoredApiKey{}
	ok, err := s.get(ctx, s.keyKey(id), k)
	if err != nil || !ok {
		return nil, err
	}
	return k, nil
}

// Keys lists the keys by id.
func (s *Store) Keys(ctx context.Context) ([]*sluicev1.ApiKey, error) {
	resp, err := s.c.Get(ctx, s.keysPrefix(), clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("auth store: %w", err)
	}
	out := make([]*sluicev1.ApiKey, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		k := &statev1.StoredApiKey{}
		if err := state.Unmarshal(kv.Value, k); err != nil {
			return nil, err
		}
		out = append(out, k.GetKey())
	}
	return out, nil
}

// RevokeKey deletes a key; state.ErrNotFound if there is none.
func (s *Store) RevokeKey(ctx context.Context, id string) error {
	resp, err := s.c.Delete(ctx, s.keyKey(id))
	if err != nil {
		return fmt.Errorf("auth store: %w", err)
	}
	if resp.Deleted == 0 {
		return state.NotFoundf("no such API key [%s]", id)
	}
	return nil
}

var roleName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// BuiltInRoles are the roles every cluster has; they cannot be changed.
func BuiltInRoles() []*sluicev1.Role {
	all := func(ps ...sluicev1.Privilege) []*sluicev1.IndexPrivileges {
		return []*sluicev1.IndexPrivileges{{Names: []string{"*"}, Privileges: ps}}
	}
	return []*sluicev1.Role{
		{Name: "admin", Admin: true, BuiltIn: true},
		{Name: "read_all", Indices: all(sluicev1.Privilege_PRIVILEGE_READ, sluicev1.Privilege_PRIVILEGE_MONITOR), BuiltIn: true},
		{Name: "write_all", Indices: all(sluicev1.Privilege_PRIVILEGE_WRITE, sluicev1.Privilege_PRIVILEGE_READ, sluicev1.Privilege_PRIVILEGE_MONITOR), BuiltIn: true},
		{Name: "monitor", Indices: all(sluicev1.Privilege_PRIVILEGE_MONITOR), BuiltIn: true},
	}
}

// PutRole creates or replaces a role.
func (s *Store) PutRole(ctx context.Context, r *sluicev1.Role) error {
	if err := validateRole(r); err != nil {
		return err
	}
	r = proto.CloneOf(r)
	r.BuiltIn = false
	v, err := state.Marshal(&statev1.StoredRole{Role: r})
	if err != nil {
		return err
	}
	if _, err := s.c.Put(ctx, s.roleKey(r.GetName()), v); err != nil {
		return fmt.Errorf("auth store: %w", err)
	}
	return nil
}

// validateRole checks a role given to PutRole or in a keys file.
func validateRole(r *sluicev1.Role) error {
	if r == nil {
		return state.InvalidFieldf("role", "role: required")
	}
	if !roleName.MatchString(r.GetName()) {
		return state.InvalidFieldf("role.name", "role name [%s]: 1 to 64 letters, digits, '-', '_' or '.'", r.GetName())
	}
	if isBuiltIn(r.GetName()) {
		return state.InvalidFieldf("role.name", "role [%s] is built in and cannot be changed", r.GetName())
	}
	for i, ip := range r.GetIndices() {
		if len(ip.GetNames()) == 0 || len(ip.GetPrivileges()) == 0 {
			return state.InvalidFieldf(fmt.Sprintf("role.indices[%d]", i), "role.indices[%d]: names and privileges required", i)
		}
		for _, p := range ip.GetPrivileges() {
			if p == sluicev1.Privilege_PRIVILEGE_UNSPECIFIED {
				return state.InvalidFieldf(fmt.Sprintf("role.indices[%d].privileges", i), "role.indices[%d].privileges: unspecified privilege", i)
			}
		}
	}
	return nil
}

// DeleteRole deletes a role; state.ErrNotFound if there is none.
func (s *Store) DeleteRole(ctx context.Context, name string) error {
	if isBuiltIn(name) {
		return state.InvalidFieldf("name", "role [%s] is built in and cannot be deleted", name)
	}
	resp, err := s.c.Delete(ctx, s.roleKey(name))
	if err != nil {
		return fmt.Errorf("auth store: %w", err)
	}
	if resp.Deleted == 0 {
		return state.NotFoundf("no such role [%s]", name)
	}
	return nil
}

// Roles returns every role by name, the built-in ones included.
func (s *Store) Roles(ctx context.Context) (map[string]*sluicev1.Role, error) {
	resp, err := s.c.Get(ctx, s.rolesPrefix(), clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("auth store: %w", err)
	}
	out := map[string]*sluicev1.Role{}
	for _, kv := range resp.Kvs {
		r := &statev1.StoredRole{}
		if err := state.Unmarshal(kv.Value, r); err != nil {
			return nil, err
		}
		out[r.GetRole().GetName()] = r.GetRole()
	}
	for _, r := range BuiltInRoles() {
		out[r.GetName()] = r
	}
	return out, nil
}

// SortedRoles lists roles by name.
func SortedRoles(m map[string]*sluicev1.Role) []*sluicev1.Role {
	out := make([]*sluicev1.Role, 0, len(m))
	for _, r := range m {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GetName() < out[j].GetName() })
	return out
}

func isBuiltIn(name string) bool {
	return slices.ContainsFunc(BuiltInRoles(), func(r *sluicev1.Role) bool { return r.GetName() == name })
}

// PITKey returns the cluster's point-in-time binding key, made by the
// first coordinator that asks.
func (s *Store) PITKey(ctx context.Context) ([]byte, error) {
	fresh := make([]byte, 32)
	_, _ = rand.Read(fresh)
	key := s.pitKey()
	resp, err := s.c.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, string(fresh))).Else(clientv3.OpGet(key)).Commit()
	if err != nil {
		return nil, fmt.Errorf("auth store: %w", err)
	}
	if resp.Succeeded {
		return fresh, nil
	}
	return resp.Responses[0].GetResponseRange().Kvs[0].Value, nil
}
