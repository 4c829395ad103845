// Package tlsconf builds the TLS configurations of Sluice's connections
// from files named as etcd names them (--cert-file, --key-file,
// --trusted-ca-file, --client-cert-auth), and keeps them current: the
// certificate, key and CA bundle are re-read when the files change on disk
// (a rotated Kubernetes secret, a cert-manager renewal), so a process
// rotates its certificates without a restart.
//
// A Source is checked on use rather than by a goroutine: a handshake finds
// the files' modification times and sizes at most CheckInterval old, and
// re-reads them when they differ. A pair that does not load (a secret half
// written) keeps the previous one in service and is logged; the next check
// tries again.
//
// Server configurations hand each handshake the current certificate and
// CA pool (GetConfigForClient); client configurations present the current
// certificate (GetClientCertificate) and verify the server against the
// current pool themselves (VerifyConnection), since crypto/tls reads
// RootCAs once. Both keep TLS session resumption: server ticket keys are
// the base config's, and clients keep a session cache.
//
// Peer identity at the TLS layer: a server may require its clients'
// certificates to carry an Organization (RequireOrganization). Data nodes
// require ClusterOrganization, so only the cluster's own processes —
// whose certificates the cluster CA issued with that organization — reach
// the internal services; a user's client certificate from the same CA
// does not. A certificate with no Organization at all may carry it as its
// Common Name instead: Helm's genSignedCert, which makes the chart's
// certificates, cannot set an Organization. Either way only the holder of
// the CA's key can issue one, so the two are equally strong.
package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/sluice-search/sluice/security/filewatch"
)

// ClusterOrganization is the certificate Organization of Sluice's own
// processes (coordinators, data nodes, the operator): data nodes accept
// internal calls only from certificates carrying it.
const ClusterOrganization = "sluice-cluster"

// CheckInterval is how stale a Source's view of its files may be.
const CheckInterval = time.Second

// Files names a process's certificate, key and trusted CA bundle (PEM).
type Files struct {
	// CertFile and KeyFile are the process's certificate (with any
	// intermediates) and private key. A server needs them; a client
	// presents them when set.
	CertFile, KeyFile string
	// TrustedCAFile is the CA bundle peers' certificates must chain to.
	// Empty on a client: the system's roots.
	TrustedCAFile string
	// ClientCertAuth makes a server require a client certificate that
	// chains to TrustedCAFile; without it a certificate is verified when
	// given.
	ClientCertAuth bool
	// RequireOrganization, if set, is an Organization a server requires
	// in its client's certificate (ClusterOrganization on data nodes), or
	// as the Common Name of a certificate without Organization.
	RequireOrganization string
}

// Enabled says whether any file is named: TLS is wanted.
func (f Files) Enabled() bool { return f.CertFile != "" || f.KeyFile != "" || f.TrustedCAFile != "" }

// validate checks the files name a usable combination.
func (f Files) validate(server bool) error {
	switch {
	case (f.CertFile == "") != (f.KeyFile == ""):
		return errors.New("--cert-file and --key-file go together")
	case server && f.CertFile == "":
		return errors.New("a TLS server needs --cert-file and --key-file")
	case (f.ClientCertAuth || f.RequireOrganization != "") && f.TrustedCAFile == "":
		return errors.New("--client-cert-auth needs --trusted-ca-file, the CA client certificates must chain to")
	}
	return nil
}

// Source is a certificate pair and CA pool read from Files and kept
// current.
type Source struct {
	files  Files
	log    *slog.Logger
	server *tls.Config // base of ServerConfig, holding the session ticket keys

	watch *filewatch.Watch

	mu        sync.Mutex
	cert      *tls.Certificate
	pool      *x509.CertPool
	perClient *tls.Config // the server config of the current pair
}

// Load reads the files once (failing now on files that are missing or do
// not parse) and returns a Source that re-reads them on change. server
// says the Source will serve: it needs a certificate.
func Load(f Files, server bool, log *slog.Logger) (*Source, error) {
	if err := f.validate(server); err != nil {
		return nil, fmt.Errorf("tls: %w", err)
	}
	if log == nil {
		log = slog.Default()
	}
	s := &Source{files: f, log: log}
	var err error
	if s.watch, err = filewatch.New("tls: certificate files", CheckInterval, log, s.load, f.CertFile, f.KeyFile, f.TrustedCAFile); err != nil {
		return nil, fmt.Errorf("tls: %w", err)
	}
	s.server = &tls.Config{MinVersion: tls.VersionTLS12, GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
		s.refresh()
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.perClient, nil
	}}
	return s, nil
}

// Files are the files the Source reads.
func (s *Source) Files() Files { return s.files }

// load reads the files; on error the Source keeps what it had.
func (s *Source) load() error {
	var cert *tls.Certificate
	if s.files.CertFile != "" {
		c, err := tls.LoadX509KeyPair(s.files.CertFile, s.files.KeyFile)
		if err != nil {
			return fmt.Errorf("certificate %s, key %s: %w", s.files.CertFile, s.files.KeyFile, err)
		}
		cert = &c
	}
	var pool *x509.CertPool
	if s.files.TrustedCAFile != "" {
		pem, err := os.ReadFile(s.files.TrustedCAFile)
		if err != nil {
			return err
		}
		pool = x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("trusted CA file %s: no PEM certificate in it", s.files.TrustedCAFile)
		}
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ClientCAs: pool, NextProtos: []string{"h2"}}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	switch {
	case s.files.ClientCertAuth || s.files.RequireOrganization != "":
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	case pool != nil:
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	}
	if org := s.files.RequireOrganization; org != "" {
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 || !ofOrganization(cs.PeerCertificates[0], org) {
				return fmt.Errorf("tls: client certificate is not of organization %q: internal services serve the cluster's own processes only", org)
			}
			return nil
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cert, s.pool, s.perClient = cert, pool, cfg
	return nil
}

// ofOrganization says whether cert belongs to org: org is among its
// Organization values, or it has none and org is its Common Name (the
// package doc says why).
func ofOrganization(cert *x509.Certificate, org string) bool {
	o := cert.Subject.Organization
	return slices.Contains(o, org) || (len(o) == 0 && cert.Subject.CommonName == org)
}

// refresh re-reads the files if they changed (at most CheckInterval
// stale).
func (s *Source) refresh() { s.watch.Refresh() }

// current returns the current pair and pool.
func (s *Source) current() (*tls.Certificate, *x509.CertPool) {
	s.refresh()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cert, s.pool
}

// ServerConfig is the configuration of a TLS server: each handshake gets
// the current certificate and client CA pool.
func (s *Source) ServerConfig() *tls.Config { return s.server }

// ClientConfig is the configuration of a TLS client: it presents the
// current certificate (if any) and verifies the server's certificate
// against the current CA pool (the system's roots without one) and the
// name dialled. Sessions are resumed.
func (s *Source) ClientConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		// crypto/tls would verify against RootCAs, read once; the pool can
		// change, so VerifyConnection verifies instead, on every
		// handshake, resumed ones included.
		InsecureSkipVerify: true, //nolint:gosec // verified in VerifyConnection
		VerifyConnection:   s.verifyServer,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			cert, _ := s.current()
			if cert == nil {
				return &tls.Certificate{}, nil
			}
			return cert, nil
		},
		ClientSessionCache: tls.NewLRUClientSessionCache(64),
	}
}

// verifyServer verifies a server's chain and name as crypto/tls would,
// against the current pool.
func (s *Source) verifyServer(cs tls.ConnectionState) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("tls: server sent no certificate")
	}
	_, pool := s.current()
	opts := x509.VerifyOptions{Roots: pool, DNSName: cs.ServerName, Intermediates: x509.NewCertPool()}
	for _, c := range cs.PeerCertificates[1:] {
		opts.Intermediates.AddCert(c)
	}
	if _, err := cs.PeerCertificates[0].Verify(opts); err != nil {
		return fmt.Errorf("tls: server certificate: %w", err)
	}
	return nil
}

// ServerCredentials are gRPC transport credentials of ServerConfig; nil
// (plaintext) for a nil Source.
func (s *Source) ServerCredentials() credentials.TransportCredentials {
	if s == nil {
		return nil
	}
	return credentials.NewTLS(s.ServerConfig())
}

// DialOptions are the gRPC dial options of ClientConfig: none (the
// dialler's default, plaintext) for a nil Source. The handshake waits for
// the server's first bytes (confirmed), so a refused certificate reads as
// the server's alert rather than as a broken connection.
func (s *Source) DialOptions() []grpc.DialOption {
	if s == nil {
		return nil
	}
	return []grpc.DialOption{grpc.WithTransportCredentials(confirmed{credentials.NewTLS(s.ClientConfig())})}
}
