package esapi

import (
	"context"
	"net/http"

	"google.golang.org/grpc/metadata"

	"github.com/sluice-search/sluice/cluster/rpc"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// On a secured coordinator the HTTP API holds no privilege of its own: it
// calls the public API in-process with its caller's credentials — the
// Authorization header as the call's "authorization" metadata, or the
// client certificate the TLS handshake verified — and the coordinator's
// guard authenticates and authorizes each call as it does a gRPC one
// (security/auth, its rule table). Before routing, every request is
// authenticated (Auth.Authenticate), so no route, not even one that
// calls nothing or refuses its parameters, answers a caller without
// credentials: 401 with WWW-Authenticate: ApiKey, as Elasticsearch
// answers.

type callerKey struct{}

// withCaller makes the context of a request's calls: its credentials
// forwarded, its principal (once authenticated) kept for the scrolls.
func withCaller(hr *http.Request) context.Context {
	ctx := hr.Context()
	for _, h := range hr.Header.Values("Authorization") {
		// Every one: the guard refuses more than one.
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", h)
	}
	if hr.TLS != nil && len(hr.TLS.VerifiedChains) > 0 {
		ctx = rpc.WithClientCertificate(ctx, hr.TLS.VerifiedChains[0][0])
	}
	return ctx
}

// authenticate finds the request's caller through the guard; ctx then
// names it (callerOf).
func (a *API) authenticate(ctx context.Context) (context.Context, error) {
	id, err := a.cfg.Auth.Authenticate(ctx, &sluicev1.AuthenticateRequest{})
	if err != nil {
		return nil, err
	}
	return context.WithValue(ctx, callerKey{}, id.GetPrincipal()), nil
}

// callerOf is the principal a request was authenticated as, "" without
// authentication.
func callerOf(ctx context.Context) string {
	p, _ := ctx.Value(callerKey{}).(string)
	return p
}
