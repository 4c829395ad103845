package auth

import (
	"context"
	"log/slog"
	"strings"

	"google.golang.org/grpc"

	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// Service implements sluicev1.AuthServer over the store; the guard in
// front of it has authenticated the caller and checked admin.
type Service struct {
	sluicev1.UnimplementedAuthServer
	store *Store
	guard *Guard
}

// NewService returns the Auth service of a guarded server.
func NewService(store *Store, guard *Guard) *Service { return &Service{store: store, guard: guard} }

// Register registers the service on g.
func (s *Service) Register(g grpc.ServiceRegistrar) { sluicev1.RegisterAuthServer(g, s) }

func caller(ctx context.Context) string {
	if id, ok := FromContext(ctx); ok {
		return id.Principal
	}
	return ""
}

// Authenticate reports the caller.
func (s *Service) Authenticate(ctx context.Context, _ *sluicev1.AuthenticateRequest) (*sluicev1.AuthenticateResponse, error) {
	id, _ := FromContext(ctx)
	if id == nil {
		return &sluicev1.AuthenticateResponse{}, nil
	}
	return &sluicev1.AuthenticateResponse{Principal: id.Principal, Roles: id.Roles, ApiKeyName: id.KeyName}, nil
}

// CreateApiKey makes a key.
func (s *Service) CreateApiKey(ctx context.Context, req *sluicev1.CreateApiKeyRequest) (*sluicev1.CreateApiKeyResponse, error) {
	k, cred, err := s.store.CreateKey(ctx, req.GetName(), req.GetRoles(), req.GetExpiration().AsDuration(), caller(ctx))
	if err != nil {
		return nil, err
	}
	s.guard.Audit(ctx, "api_key_created", slog.String("principal", caller(ctx)), slog.String("key_id", k.Id),
		slog.String("key_name", k.Name), slog.String("roles", strings.Join(k.Roles, ",")))
	return &sluicev1.CreateApiKeyResponse{Key: k, Secret: cred.Secret, Encoded: cred.Encoded()}, nil
}

// ListApiKeys lists keys.
func (s *Service) ListApiKeys(ctx context.Context, _ *sluicev1.ListApiKeysRequest) (*sluicev1.ListApiKeysResponse, error) {
	ks, err := s.store.Keys(ctx)
	if err != nil {
		return nil, err
	}
	return &sluicev1.ListApiKeysResponse{Keys: ks}, nil
}

// RevokeApiKey deletes a key; this coordinator refuses it at once.
func (s *Service) RevokeApiKey(ctx context.Context, req *sluicev1.RevokeApiKeyRequest) (*sluicev1.RevokeApiKeyResponse, error) {
	if err := s.store.RevokeKey(ctx, req.GetId()); err != nil {
		return nil, err
	}
	s.guard.authn.forget(req.GetId())
	s.guard.Audit(ctx, "api_key_revoked", slog.String("principal", caller(ctx)), slog.String("key_id", req.GetId()))
	return &sluicev1.RevokeApiKeyResponse{}, nil
}

// PutRole creates or replaces a role.
func (s *Service) PutRole(ctx context.Context, req *sluicev1.PutRoleRequest) (*sluicev1.PutRoleResponse, error) {
	if err := s.store.PutRole(ctx, req.GetRole()); err != nil {
		return nil, err
	}
	s.guard.authn.invalidateRoles()
	s.guard.Audit(ctx, "role_put", slog.String("principal", caller(ctx)), slog.String("role", req.GetRole().GetName()))
	return &sluicev1.PutRoleResponse{}, nil
}

// DeleteRole deletes a role.
func (s *Service) DeleteRole(ctx context.Context, req *sluicev1.DeleteRoleRequest) (*sluicev1.DeleteRoleResponse, error) {
	if err := s.store.DeleteRole(ctx, req.GetName()); err != nil {
		return nil, err
	}
	s.guard.authn.invalidateRoles()
	s.guard.Audit(ctx, "role_deleted", slog.String("principal", caller(ctx)), slog.String("role", req.GetName()))
	return &sluicev1.DeleteRoleResponse{}, nil
}

// ListRoles lists roles.
func (s *Service) ListRoles(ctx context.Context, _ *sluicev1.ListRolesRequest) (*sluicev1.ListRolesResponse, error) {
	rs, err := s.store.Roles(ctx)
	if err != nil {
		return nil, err
	}
	return &sluicev1.ListRolesResponse{Roles: SortedRoles(rs)}, nil
}
