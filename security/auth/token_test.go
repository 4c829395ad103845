package auth

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
)

func TestParseAuthorization(t *testing.T) {
	enc := base64.StdEncoding.EncodeToString([]byte("abc:s3cr-et_"))
	for _, tt := range []struct {
		h    string
		want Credential
		ok   bool
	}{
		{"ApiKey " + enc, Credential{"abc", "s3cr-et_"}, true},
		{"apikey " + enc, Credential{"abc", "s3cr-et_"}, true},
		{"ApiKey abc:s3cr-et_", Credential{"abc", "s3cr-et_"}, true},
		{"  ApiKey   abc:def  ", Credential{"abc", "def"}, true},
		{"Bearer " + enc, Credential{}, false},
		{"ApiKey", Credential{}, false},
		{"ApiKey " + base64.StdEncoding.EncodeToString([]byte("nocolon")), Credential{}, false},
		{"ApiKey :secret", Credential{}, false},
		{"ApiKey id:", Credential{}, false},
		{"ApiKey id:se cret", Credential{}, false},
		{"ApiKey id:sec:ret", Credential{}, false},
		{"ApiKey !!!", Credential{}, false},
		{"ApiKey " + strings.Repeat("a", 600), Credential{}, false},
	} {
		got, err := ParseAuthorization(tt.h)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseAuthorization(%q) = %v, %v; want %v ok=%v", tt.h, got, err, tt.want, tt.ok)
		}
		if err != nil && !errors.Is(err, ErrMalformedToken) {
			t.Errorf("error %v does not wrap ErrMalformedToken", err)
		}
	}
}

func TestCredentialRoundTrip(t *testing.T) {
	c := newCredential()
	got, err := ParseAuthorization("ApiKey " + c.Encoded())
	if err != nil || got != c {
		t.Fatalf("%v, %v; want %v", got, err, c)
	}
	if !secretMatches(c.Secret, hashSecret(c.Secret)) || secretMatches(c.Secret+"x", hashSecret(c.Secret)) {
		t.Fatal("secretMatches")
	}
}

// FuzzParseAuthorization: any header parses to a well-formed credential
// or an ErrMalformedToken that does not quote the header, and never
// panics; what parses survives re-encoding.
func FuzzParseAuthorization(f *testing.F) {
	for _, s := range []string{"ApiKey " + newCredential().Encoded(), "ApiKey a:b", "ApiKey ", "apikey Zm9vOmJhcg==", "Basic x", "ApiKey a:b:c", "ApiKey \xff:\xfe"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		c, err := ParseAuthorization(h)
		if err != nil {
			if !errors.Is(err, ErrMalformedToken) {
				t.Fatalf("error %v does not wrap ErrMalformedToken", err)
			}
			if len(h) > 8 && strings.Contains(err.Error(), h) {
				t.Fatalf("error quotes the header: %v", err)
			}
			return
		}
		if !validPart(c.ID) || !validPart(c.Secret) {
			t.Fatalf("parsed %q to malformed %v", h, c)
		}
		again, err := ParseAuthorization("ApiKey " + c.Encoded())
		if err != nil || again != c {
			t.Fatalf("re-encoded %v parses to %v, %v", c, again, err)
		}
	})
}
