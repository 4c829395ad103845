package client

import (
	"context"
	"encoding/base64"
	"strings"

	"google.golang.org/grpc"
)

// WithAPIKey authenticates every call with an API key, sent as
// Elasticsearch sends one: metadata "authorization: ApiKey <credential>",
// the credential being the base64 of "id:secret". key is either that
// encoded credential (what `sluice auth create-key` prints) or "id:secret".
// The key is only sent over TLS.
func WithAPIKey(key string) grpc.DialOption {
	if strings.Contains(key, ":") {
		key = base64.StdEncoding.EncodeToString([]byte(key))
	}
	return grpc.WithPerRPCCredentials(apiKey("ApiKey " + key))
}

// apiKey is per-call credentials carrying an authorization header.
type apiKey string

func (k apiKey) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": string(k)}, nil
}

// RequireTransportSecurity: a key sent in plaintext is a key given away.
func (apiKey) RequireTransportSecurity() bool { return true }
