package esapi_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-search/sluice/client"
	"github.com/sluice-search/sluice/cluster/watermark"
	"github.com/sluice-search/sluice/coordinator/esapi"
	"github.com/sluice-search/sluice/devcluster"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
	"github.com/sluice-search/sluice/security/tlsconf"
)

// secureCluster is a secure dev cluster (TLS, API keys) serving the HTTP
// API, with keys made through its Auth service.
type secureCluster struct {
	c     *devcluster.Cluster
	url   string
	tls   *tlsconf.Source // the CA, to verify the server
	admin *client.Client
}

func startSecureCluster(t *testing.T) *secureCluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := devcluster.Start(ctx, devcluster.Config{ClusterSettings: watermark.Ignored(), DataDir: t.TempDir(), Listen: "127.0.0.1:0", HTTPListen: "127.0.0.1:0",
		Nodes: 1, LeaseTTL: 2 * time.Second, Logger: slog.New(slog.DiscardHandler), Secure: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	src, err := tlsconf.Load(tlsconf.Files{TrustedCAFile: filepath.Join(c.TLSDir, devcluster.CAFile)}, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := client.Dial(ctx, c.Addr(), append(src.DialOptions(), client.WithAPIKey(c.AdminKey))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	return &secureCluster{c: c, url: "https://" + c.HTTPAddr(), tls: src, admin: admin}
}

// key makes an API key of a new role granting privs on names.
func (s *secureCluster) key(t *testing.T, role string, names []string, privs ...sluicev1.Privilege) string {
	t.Helper()
	ctx := context.Background()
	ac := sluicev1.NewAuthClient(s.admin.Conn())
	if _, err := ac.PutRole(ctx, &sluicev1.PutRoleRequest{Role: &sluicev1.Role{Name: role,
		Indices: []*sluicev1.IndexPrivileges{{Names: names, Privileges: privs}}}}); err != nil {
		t.Fatal(err)
	}
	k, err := ac.CreateApiKey(ctx, &sluicev1.CreateApiKeyRequest{Name: role, Roles: []string{role}})
	if err != nil {
		t.Fatal(err)
	}
	return k.Encoded
}

// transport trusts the cluster CA and presents cert, if any.
func (s *secureCluster) transport(cert ...tls.Certificate) http.RoundTripper {
	cfg := s.tls.ClientConfig()
	if len(cert) > 0 {
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert[0], nil }
	}
	return &http.Transport{TLSClientConfig: cfg}
}

// TestSecureHTTPAPIRefusesCallersWithoutCredentials: every route the HTTP
// API serves (and a path it does not) answers a caller without
// credentials, or with a scheme it does not take, 401 with
// Elasticsearch's security_exception and WWW-Authenticate: ApiKey.
func TestSecureHTTPAPIRefusesCallersWithoutCredentials(t *testing.T) {
	s := startSecureCluster(t)
	rt := s.transport()
	fill := strings.NewReplacer("{index}", "books", "{id}", "1", "{name}", "a")
	endpoints := append(esapi.New(esapi.Config{}).Endpoints(), "GET /_nodes/stats")
	for _, e := range endpoints {
		method, path, _ := strings.Cut(e, " ")
		for _, header := range [][]string{nil, {"Authorization", "Basic ZWxhc3RpYzpjaGFuZ2VtZQ=="}, {"Authorization", "ApiKey bm90OmFrZXk="}} {
			code, h, body := doWith(t, rt, method, s.url+fill.Replace(path), "{}", header...)
			if code != http.StatusUnauthorized || h.Get("WWW-Authenticate") != "ApiKey" {
				t.Errorf("%s %v: %d %v %s, want 401 with WWW-Authenticate: ApiKey", e, header, code, h, body)
				continue
			}
			if method == http.MethodHead {
				continue
			}
			var got struct {
				Error struct {
					Type   string            `json:"type"`
					Header map[string]string `json:"header"`
				} `json:"error"`
				Status int `json:"status"`
			}
			if err := json.Unmarshal([]byte(body), &got); err != nil || got.Error.Type != "security_exception" || got.Status != 401 || got.Error.Header["WWW-Authenticate"] != "ApiKey" {
				t.Errorf("%s %v: body %s", e, header, body)
			}
		}
	}
}

// TestSecureHTTPAPI: over HTTPS, API keys and client certificates
// authenticate, and the guard's roles decide, per call, as on gRPC.
func TestSecureHTTPAPI(t *testing.T) {
	s := startSecureCluster(t)
	rt := s.transport()
	admin := []string{"Authorization", "ApiKey " + s.c.AdminKey}
	reader := []string{"Authorization", "ApiKey " + s.key(t, "reader", []string{"books"}, sluicev1.Privilege_PRIVILEGE_READ)}
	other := []string{"Authorization", "ApiKey " + s.key(t, "other", []string{"books"}, sluicev1.Privilege_PRIVILEGE_READ)}

	for _, step := range []struct{ method, path, body string }{
		{"PUT", "/books", `{"settings":{"number_of_shards":2}}`},
		{"POST", "/_bulk?refresh=true", "{\"index\":{\"_index\":\"books\",\"_id\":\"1\"}}\n{\"t\":\"a\"}\n{\"index\":{\"_index\":\"books\",\"_id\":\"2\"}}\n{\"t\":\"b\"}\n"},
	} {
		if code, _, body := doWith(t, rt, step.method, s.url+step.path, step.body, append(admin, "Content-Type", "application/x-ndjson")...); code != 200 || strings.Contains(body, `"errors":true`) {
			t.Fatalf("admin %s %s: %d %s", step.method, step.path, code, body)
		}
	}

	if code, _, body := doWith(t, rt, "POST", s.url+"/books/_search", `{"query":{"match_all":{}}}`, reader...); code != 200 || !strings.Contains(body, `"value":2`) {
		t.Fatalf("reader search: %d %s", code, body)
	}
	for _, tt := range []struct{ method, path, body, privilege string }{
		{"PUT", "/books/_doc/3", `{"t":"c"}`, "[write]"},
		{"POST", "/_bulk", "{\"delete\":{\"_index\":\"books\",\"_id\":\"1\"}}\n", "[write]"},
		{"DELETE", "/books", "", "[manage]"},
		{"PUT", "/other", "", "[manage]"},
		{"GET", "/_cluster/health", "", "[monitor]"},
	} {
		code, _, body := doWith(t, rt, tt.method, s.url+tt.path, tt.body, append(reader, "Content-Type", "application/x-ndjson")...)
		if code != http.StatusForbidden || !strings.Contains(body, `"type":"security_exception"`) || !strings.Contains(body, tt.privilege) {
			t.Errorf("reader %s %s: %d %s, want 403 security_exception naming %s", tt.method, tt.path, code, body, tt.privilege)
		}
	}

	// A scroll belongs to its creator, on this coordinator too, where its
	// stream is kept open between pages.
	code, _, body := doWith(t, rt, "POST", s.url+"/books/_search?scroll=1m", `{"size":1}`, reader...)
	var page struct {
		ScrollID string `json:"_scroll_id"`
	}
	if code != 200 || json.Unmarshal([]byte(body), &page) != nil || page.ScrollID == "" {
		t.Fatalf("scroll: %d %s", code, body)
	}
	next := `{"scroll":"1m","scroll_id":"` + page.ScrollID + `"}`
	if code, _, body := doWith(t, rt, "POST", s.url+"/_search/scroll", next, other...); code != http.StatusForbidden {
		t.Errorf("another caller's scroll: %d %s, want 403", code, body)
	}
	if code, _, body := doWith(t, rt, "POST", s.url+"/_search/scroll", next, reader...); code != 200 || !strings.Contains(body, `"_id"`) {
		t.Errorf("the creator's next page: %d %s", code, body)
	}

	// A client certificate of the cluster CA authenticates without a key.
	cert, err := tls.LoadX509KeyPair(filepath.Join(s.c.TLSDir, devcluster.AdminCert), filepath.Join(s.c.TLSDir, devcluster.AdminKey))
	if err != nil {
		t.Fatal(err)
	}
	if code, _, body := doWith(t, s.transport(cert), "GET", s.url+"/_cat/indices?format=json", ""); code != 200 || !strings.Contains(body, `"books"`) {
		t.Errorf("client certificate: %d %s", code, body)
	}
	// Streams too (a scroll's pages are a Scroll stream).
	if code, _, body := doWith(t, s.transport(cert), "POST", s.url+"/books/_search?scroll=1m", `{"size":1}`); code != 200 || !strings.Contains(body, `"_id"`) {
		t.Errorf("client certificate, scroll: %d %s", code, body)
	}
}
