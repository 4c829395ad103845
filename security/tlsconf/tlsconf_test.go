package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-search/sluice/security/pki"
)

// issue writes a CA (once per dir) and a certificate named name into dir.
func issue(t *testing.T, ca *pki.CA, dir, name string, org ...string) Files {
	t.Helper()
	cert, key, err := ca.Issue(pki.Subject{CommonName: name, Organization: org, Hosts: []string{"127.0.0.1", "localhost"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := pki.WritePair(dir, name, cert, key); err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(dir, "ca.crt")
	if _, err := os.Stat(caFile); err != nil {
		if err := os.WriteFile(caFile, ca.CertPEM, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return Files{CertFile: filepath.Join(dir, name+".crt"), KeyFile: filepath.Join(dir, name+".key"), TrustedCAFile: caFile}
}

func newCA(t *testing.T) *pki.CA {
	t.Helper()
	ca, err := pki.NewCA("test CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func load(t *testing.T, f Files, server bool) *Source {
	t.Helper()
	s, err := Load(f, server, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// serve runs a TLS echo server of cfg and returns its address.
func serve(t *testing.T, cfg *tls.Config) string {
	t.Helper()
	lis, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lis.Close() })
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	return lis.Addr().String()
}

// handshake dials addr with cfg, completes a round trip and returns the
// server's leaf certificate.
func handshake(addr string, cfg *tls.Config) (*x509.Certificate, error) {
	cfg = cfg.Clone()
	cfg.ServerName = "127.0.0.1"
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	// TLS 1.3 reports a refused client certificate at the first read.
	if _, err := c.Write([]byte("x")); err != nil {
		return nil, err
	}
	if _, err := io.ReadFull(c, make([]byte, 1)); err != nil {
		return nil, err
	}
	return c.ConnectionState().PeerCertificates[0], nil
}

func TestMutualTLS(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	ca, otherCA := newCA(t), newCA(t)
	srvFiles := issue(t, ca, dir, "node", ClusterOrganization)
	srvFiles.ClientCertAuth = true
	member := issue(t, ca, dir, "coordinator", ClusterOrganization)
	user := issue(t, ca, dir, "alice", "admin")
	// As Helm's genSignedCert makes them: a Common Name, no Organization.
	helmMember := issue(t, ca, dir, ClusterOrganization)
	// A user certificate naming the cluster as its CN but holding roles.
	userNamedCluster := issue(t, ca, t.TempDir(), ClusterOrganization, "admin")
	userNamedCluster.TrustedCAFile = srvFiles.TrustedCAFile
	stranger := issue(t, otherCA, other, "intruder", ClusterOrganization)
	caOnly := Files{TrustedCAFile: srvFiles.TrustedCAFile}
	// A client trusting the cluster CA but holding the other CA's pair.
	strangerTrusting := stranger
	strangerTrusting.TrustedCAFile = srvFiles.TrustedCAFile

	internal := srvFiles
	internal.RequireOrganization = ClusterOrganization
	for _, tt := range []struct {
		name   string
		server Files
		client Files
		ok     bool
	}{
		{"member to node", internal, member, true},
		{"member named by its common name, without organization", internal, helmMember, true},
		{"user certificate with an organization, named like the cluster", internal, userNamedCluster, false},
		{"no client certificate", internal, caOnly, false},
		{"certificate of another CA", internal, strangerTrusting, false},
		{"user certificate of the cluster CA to an internal service", internal, user, false},
		{"user certificate to a public server", srvFiles, user, true},
		{"server of another CA", Files{CertFile: stranger.CertFile, KeyFile: stranger.KeyFile}, member, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			addr := serve(t, load(t, tt.server, true).ServerConfig())
			_, err := handshake(addr, load(t, tt.client, false).ClientConfig())
			if (err == nil) != tt.ok {
				t.Fatalf("handshake error %v, want success %v", err, tt.ok)
			}
		})
	}
}

// TestReloadOnChange: new files on disk are served, and trusted, without
// a restart; files that do not load keep the old ones in service.
func TestReloadOnChange(t *testing.T) {
	dir := t.TempDir()
	ca := newCA(t)
	srvFiles := issue(t, ca, dir, "node")
	client := issue(t, ca, dir, "client")
	srv, cl := load(t, srvFiles, true), load(t, client, false)
	addr := serve(t, srv.ServerConfig())
	first, err := handshake(addr, cl.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}

	// Rotate: a new CA, and certificates from it, for both sides.
	ca2 := newCA(t)
	if err := os.WriteFile(srvFiles.TrustedCAFile, append(ca.CertPEM, ca2.CertPEM...), 0o644); err != nil {
		t.Fatal(err)
	}
	issue(t, ca2, dir, "node")
	time.Sleep(CheckInterval + 100*time.Millisecond)
	second, err := handshake(addr, cl.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	if second.SerialNumber.Cmp(first.SerialNumber) == 0 {
		t.Fatal("the server still presents the old certificate after rotation")
	}
	if second.Issuer.CommonName != ca2.Cert.Subject.CommonName {
		t.Fatalf("issued by %v", second.Issuer)
	}

	// A half-written key: the loaded pair stays in service.
	if err := os.WriteFile(srvFiles.KeyFile, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(CheckInterval + 100*time.Millisecond)
	third, err := handshake(addr, cl.ClientConfig())
	if err != nil {
		t.Fatalf("a bad key on disk broke serving: %v", err)
	}
	if third.SerialNumber.Cmp(second.SerialNumber) != 0 {
		t.Fatal("served a certificate other than the last good one")
	}
}

func TestLoadRefusesBadCombinations(t *testing.T) {
	for _, tt := range []struct {
		f      Files
		server bool
		want   string
	}{
		{Files{CertFile: "a"}, false, "go together"},
		{Files{TrustedCAFile: "ca"}, true, "needs --cert-file"},
		{Files{CertFile: "a", KeyFile: "b", ClientCertAuth: true}, true, "needs --trusted-ca-file"},
		{Files{TrustedCAFile: "/nonexistent/ca.crt"}, false, "no such file"},
	} {
		_, err := Load(tt.f, tt.server, nil)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Load(%+v) = %v, want %q", tt.f, err, tt.want)
		}
	}
}
