package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// Credential is what an API key caller sends: the key's id and secret.
type Credential struct {
	ID, Secret string
}

// Encoded is the credential as sent: base64 of "id:secret".
func (c Credential) Encoded() string {
	return base64.StdEncoding.EncodeToString([]byte(c.ID + ":" + c.Secret))
}

// ErrMalformedToken: an authorization header that is not an API key.
var ErrMalformedToken = errors.New("malformed authorization")

// Limits on what a header may hold, so a parser fed junk does no more
// than a bounded amount of work.
const (
	maxHeaderBytes = 512
	idBytes        = 12 // random bytes of an id (24 hex digits)
	secretBytes    = 32 // random bytes of a secret (256 bits)
)

// ParseAuthorization reads the value of an "authorization" header:
// "ApiKey <base64 of id:secret>" as Elasticsearch sends it, or "ApiKey
// id:secret". The scheme is case-insensitive. Errors wrap
// ErrMalformedToken and never quote the secret.
func ParseAuthorization(h string) (Credential, error) {
	if len(h) > maxHeaderBytes {
		return Credential{}, fmt.Errorf("%w: longer than %d bytes", ErrMalformedToken, maxHeaderBytes)
	}
	scheme, rest, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "ApiKey") {
		return Credential{}, fmt.Errorf(`%w: want "ApiKey <credential>"`, ErrMalformedToken)
	}
	rest = strings.TrimSpace(rest)
	if !strings.Contains(rest, ":") {
		b, err := base64.StdEncoding.DecodeString(rest)
		if err != nil {
			return Credential{}, fmt.Errorf("%w: credential is neither id:secret nor its base64", ErrMalformedToken)
		}
		rest = string(b)
	}
	id, secret, ok := strings.Cut(rest, ":")
	if !ok || !validPart(id) || !validPart(secret) {
		return Credential{}, fmt.Errorf("%w: credential is not id:secret", ErrMalformedToken)
	}
	return Credential{ID: id, Secret: secret}, nil
}

// validPart: a non-empty run of base64url characters, as ids and secrets
// are made.
func validPart(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// newCredential makes a random id (hex, so it never starts with "-" on a
// command line) and secret.
func newCredential() Credential {
	return Credential{ID: hex.EncodeToString(randomBytes(idBytes)), Secret: base64.RawURLEncoding.EncodeToString(randomBytes(secretBytes))}
}

// randomBytes: crypto/rand.Read never fails (Go 1.24+).
func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

// hashSecret is what the store keeps of a secret. A plain SHA-256 is
// enough here, where a password would need a slow hash (bcrypt, argon2):
// secrets are 256 random bits, not chosen by people, so there is no
// dictionary to try and brute force is 2^256 work at any hash speed; and
// a fast hash keeps checking a key cheap on every cache miss.
func hashSecret(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}

// secretMatches compares in constant time.
func secretMatches(secret string, hash []byte) bool {
	return subtle.ConstantTimeCompare(hashSecret(secret), hash) == 1
}
