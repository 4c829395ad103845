package auth

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/sluice-search/sluice/cluster/state"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// Config configures a Guard.
type Config struct {
	// Store holds keys and roles. Required.
	Store *Store
	// Cache is the cluster state, to resolve aliases before checking.
	// Required.
	Cache *state.Cache
	// CacheTTL bounds how long a revoked key or changed role is still
	// honoured. Default DefaultCacheTTL.
	CacheTTL time.Duration
	// OpenHealth and OpenReflection serve the health and reflection
	// services without authentication (load balancer probes, grpcurl).
	OpenHealth, OpenReflection bool
	// KeysFile, if set, names a keys file (file.go) whose API keys and
	// roles are honoured beside etcd's.
	KeysFile string
	// Audit receives the audit log: refused credentials, denied calls,
	// key and role changes, index deletions. Default slog.Default().
	Audit *slog.Logger
}

// Guard authenticates and authorizes every call of a coordinator's
// public server (rpc.Options.Unary and Stream).
type Guard struct {
	cfg    Config
	authn  *authenticator
	pitKey []byte
}

// NewGuard returns a guard; Start must run before it serves.
func NewGuard(cfg Config) *Guard {
	if cfg.Audit == nil {
		cfg.Audit = slog.Default()
	}
	return &Guard{cfg: cfg, authn: newAuthenticator(cfg.Store, cfg.CacheTTL)}
}

// Start loads the keys file, if any, and the cluster's point-in-time
// binding key (made by the first coordinator to start).
func (g *Guard) Start(ctx context.Context) error {
	if g.cfg.KeysFile != "" {
		f, err := loadFileRealm(g.cfg.KeysFile, g.cfg.Audit)
		if err != nil {
			return err
		}
		g.authn.file = f
	}
	k, err := g.cfg.Store.PITKey(ctx)
	if err != nil {
		return err
	}
	g.pitKey = k
	return nil
}

// AuthenticateTimeout bounds the key and role lookups of Authenticate: it
// runs on the connection's reader (a gRPC tap), where a cache miss holds
// the connection's other calls until etcd answers.
const AuthenticateTimeout = time.Second

// Authenticate checks a call's credentials before any of its messages is
// read (rpc.Options.Admit): the coordinator refuses an unauthenticated
// bulk this way before it takes room in the bulk budget, so callers
// without credentials cannot hold the budget that authenticated writers
// need, nor have their requests received. The interceptors then check the
// call as any other (the lookups are cached by then). Authorization waits
// for the request: it names the indices.
func (g *Guard) Authenticate(ctx context.Context, method string) error {
	ctx, cancel := context.WithTimeout(ctx, AuthenticateTimeout)
	defer cancel()
	_, _, _, err := g.admit(ctx, method)
	return err
}

// Unary is the guard's unary interceptor.
func (g *Guard) Unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	ctx, id, roles, err := g.admit(ctx, info.FullMethod)
	if err != nil {
		return nil, err
	}
	if id != nil {
		if err := g.authorize(ctx, info.FullMethod, id, roles, req); err != nil {
			return nil, err
		}
	}
	resp, err := h(ctx, req)
	if err != nil || id == nil {
		return resp, err
	}
	return g.answer(ctx, info.FullMethod, id, roles, req, resp)
}

// Stream is the guard's stream interceptor: each message received is
// authorized as a request of its own.
func (g *Guard) Stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	ctx, id, roles, err := g.admit(ss.Context(), info.FullMethod)
	if err != nil {
		return err
	}
	if id == nil {
		return h(srv, ss)
	}
	return h(srv, &guardedStream{ServerStream: ss, ctx: ctx, check: func(m any) error {
		return g.authorize(ctx, info.FullMethod, id, roles, m)
	}, bind: func(m any) {
		if r, ok := m.(*sluicev1.ScrollResponse); ok && len(r.Cursor) > 0 {
			r.Cursor = g.bindCursor(id, r.Cursor)
		}
	}})
}

type guardedStream struct {
	grpc.ServerStream
	ctx   context.Context
	check func(any) error
	bind  func(any)
}

// SendMsg binds what the message hands out (scroll cursors) to the caller.
func (s *guardedStream) SendMsg(m any) error {
	s.bind(m)
	return s.ServerStream.SendMsg(m)
}

func (s *guardedStream) Context() context.Context { return s.ctx }

func (s *guardedStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	return s.check(m)
}

// admit authenticates a call: it returns the caller and its roles, or no
// caller for an open method.
func (g *Guard) admit(ctx context.Context, method string) (context.Context, *Identity, []*sluicev1.Role, error) {
	rule, known := rules[method]
	if known && rule.open != nil && rule.open(g.cfg) {
		return ctx, nil, nil, nil
	}
	id, err := g.authn.authenticate(ctx)
	if err != nil {
		if !isUnauthenticated(err) {
			return nil, nil, nil, status.Errorf(codes.Unavailable, "cannot check credentials now: %v", err)
		}
		g.audit(ctx, "authentication_failed", slog.String("method", method), slog.String("peer", peerAddr(ctx)), slog.String("reason", err.Error()))
		return nil, nil, nil, status.Error(codes.Unauthenticated, err.Error())
	}
	roles, err := g.authn.rolesOf(ctx, id.Roles)
	if err != nil {
		return nil, nil, nil, status.Errorf(codes.Unavailable, "cannot check privileges now: %v", err)
	}
	if !known {
		return nil, nil, nil, g.deny(ctx, method, id, "no access rule for this method", "", "")
	}
	if rule.admin && !isAdmin(roles) {
		return nil, nil, nil, g.deny(ctx, method, id, "admin", "", "")
	}
	return withIdentity(ctx, id), id, roles, nil
}

// authorize checks a request's needs (PIT ids first: bound to creators).
func (g *Guard) authorize(ctx context.Context, method string, id *Identity, roles []*sluicev1.Role, req any) error {
	m, ok := req.(proto.Message)
	if !ok {
		return nil
	}
	if err := g.unbindPIT(ctx, method, id, m); err != nil {
		return err
	}
	rule := rules[method]
	if rule.needs == nil {
		return nil
	}
	st := g.cfg.Cache.State()
	for _, n := range rule.needs(m) {
		for _, name := range resolveNames(st, n) {
			if !allowed(roles, n.priv, name) {
				return g.deny(ctx, method, id, privName(n.priv), name, "")
			}
		}
	}
	return nil
}

// resolveNames turns a need's names into what is checked: aliases to the
// indices they stand for, no names to every index. A name that is neither
// index nor alias is checked as given, so a caller without the privilege
// is denied whether it exists or not.
func resolveNames(st *state.Snapshot, n need) []string {
	names := n.names
	if n.mode == literal || st == nil {
		return names
	}
	if len(names) == 0 && n.mode == resolveRead {
		names = st.IndexNames("")
	}
	var out []string
	for _, name := range names {
		if _, ok := st.Aliases[name]; !ok {
			out = append(out, name)
			continue
		}
		if n.mode == resolveWrite {
			if x, err := st.ResolveWrite(name); err == nil {
				out = append(out, x.Name())
				continue
			}
		}
		xs, _ := st.Resolve(name)
		for _, x := range xs {
			out = append(out, x.Name())
		}
	}
	return out
}

// answer binds point-in-time ids to the caller, filters lists to what it
// may see, and audits deletions.
func (g *Guard) answer(ctx context.Context, method string, id *Identity, roles []*sluicev1.Role, req, resp any) (any, error) {
	switch r := resp.(type) {
	case *sluicev1.OpenPointInTimeResponse:
		r.Id = g.bindPIT(id, r.Id)
	case *sluicev1.SearchResponse:
		if r.PitId != "" {
			r.PitId = g.bindPIT(id, r.PitId)
		}
	case *sluicev1.ListIndicesResponse:
		kept := r.Indices[:0]
		for _, x := range r.Indices {
			if allowed(roles, monitor, x.GetName()) {
				kept = append(kept, x)
			}
		}
		r.Indices = kept
	case *sluicev1.ListAliasesResponse:
		kept := r.Aliases[:0]
		for _, a := range r.Aliases {
			ok := true
			for _, x := range a.GetIndices() {
				ok = ok && allowed(roles, monitor, x)
			}
			if ok {
				kept = append(kept, a)
			}
		}
		r.Aliases = kept
	case *sluicev1.DeleteIndexResponse:
		g.audit(ctx, "index_deleted", slog.String("principal", id.Principal), slog.String("index", req.(*sluicev1.DeleteIndexRequest).GetName()), slog.String("uuid", r.GetUuid()))
	}
	return resp, nil
}

// deny audits and returns PERMISSION_DENIED naming the missing privilege
// (in the message and an ErrorInfo detail).
func (g *Guard) deny(ctx context.Context, method string, id *Identity, privilege, index, why string) error {
	g.audit(ctx, "access_denied", slog.String("principal", id.Principal), slog.String("method", method),
		slog.String("privilege", privilege), slog.String("index", index), slog.String("reason", why))
	msg := fmt.Sprintf("%s lacks the [%s] privilege", id.Principal, privilege)
	if index == "*" {
		msg += " on all indices"
	} else if index != "" {
		msg += fmt.Sprintf(" on index [%s]", index)
	}
	if why != "" {
		msg = why
	}
	st := status.New(codes.PermissionDenied, msg+" for "+method)
	md := map[string]string{"privilege": privilege}
	if index != "" {
		md["index"] = index
	}
	if d, err := st.WithDetails(&errdetails.ErrorInfo{Reason: "MISSING_PRIVILEGE", Domain: "sluice", Metadata: md}); err == nil {
		st = d
	}
	return st.Err()
}

func (g *Guard) audit(ctx context.Context, event string, attrs ...slog.Attr) {
	g.cfg.Audit.LogAttrs(ctx, slog.LevelWarn, "audit", append([]slog.Attr{slog.String("event", event)}, attrs...)...)
}

// Audit logs a security event of the Auth service.
func (g *Guard) Audit(ctx context.Context, event string, attrs ...slog.Attr) {
	g.cfg.Audit.LogAttrs(ctx, slog.LevelInfo, "audit", append([]slog.Attr{slog.String("event", event)}, attrs...)...)
}

func privName(p sluicev1.Privilege) string {
	return strings.ToLower(strings.TrimPrefix(p.String(), "PRIVILEGE_"))
}

func peerAddr(ctx context.Context) string {
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		return p.Addr.String()
	}
	return ""
}

// A point-in-time id a guard hands out is "<tag>.<id>": the tag is an
// HMAC of the caller and the id under the cluster's key, so only the
// caller who opened it can use or close it, on any coordinator.
func (g *Guard) pitTag(id *Identity, pit string) string {
	m := hmac.New(sha256.New, g.pitKey)
	m.Write([]byte(id.Principal))
	m.Write([]byte{0})
	m.Write([]byte(pit))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:16])
}

func (g *Guard) bindPIT(id *Identity, pit string) string { return g.pitTag(id, pit) + "." + pit }

// unbindPIT checks and strips the tag of the point-in-time id a request
// carries.
func (g *Guard) unbindPIT(ctx context.Context, method string, id *Identity, m proto.Message) error {
	var ref *string
	switch r := m.(type) {
	case *sluicev1.SearchRequest:
		if r.GetPit().GetId() != "" {
			ref = &r.Pit.Id
		}
	case *sluicev1.ScrollRequest:
		if err := g.unbindCursor(ctx, method, id, r); err != nil {
			return err
		}
		if r.GetPit().GetId() != "" {
			ref = &r.Pit.Id
		}
	case *sluicev1.ClosePointInTimeRequest:
		ref = &r.Id
	}
	if ref == nil {
		return nil
	}
	tag, pit, ok := strings.Cut(*ref, ".")
	if !ok || !hmac.Equal([]byte(tag), []byte(g.pitTag(id, pit))) {
		return g.deny(ctx, method, id, "read", "", "the point-in-time was opened by another caller (or is not one this cluster issued)")
	}
	*ref = pit
	return nil
}

// A scroll cursor a guard hands out is an HMAC of the caller and the
// cursor under the cluster's key, then the cursor: a scroll without a
// point-in-time of its own carries the one it opened in its cursor, so
// the cursor, like a point-in-time id, is usable by its creator only.
const cursorTagLen = 16

func (g *Guard) cursorTag(id *Identity, cursor []byte) []byte {
	m := hmac.New(sha256.New, g.pitKey)
	m.Write([]byte("scroll-cursor\x00")) // never a point-in-time tag
	m.Write([]byte(id.Principal))
	m.Write([]byte{0})
	m.Write(cursor)
	return m.Sum(nil)[:cursorTagLen]
}

func (g *Guard) bindCursor(id *Identity, cursor []byte) []byte {
	return append(g.cursorTag(id, cursor), cursor...)
}

// unbindCursor checks and strips the tag of the cursor a scroll resumes
// from.
func (g *Guard) unbindCursor(ctx context.Context, method string, id *Identity, r *sluicev1.ScrollRequest) error {
	if len(r.Cursor) == 0 {
		return nil
	}
	if len(r.Cursor) <= cursorTagLen || !hmac.Equal(r.Cursor[:cursorTagLen], g.cursorTag(id, r.Cursor[cursorTagLen:])) {
		return g.deny(ctx, method, id, "read", "", "the scroll cursor was issued to another caller (or is not one this cluster issued)")
	}
	r.Cursor = r.Cursor[cursorTagLen:]
	return nil
}
