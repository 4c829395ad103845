// Package embedetcd runs a single-member etcd server inside the process, for
// `sluice dev` and for tests. It is go.etcd.io/etcd/server/v3/embed with the
// settings a one-machine cluster wants: loopback URLs, quiet logs, and a
// bounded wait for the server to become ready.
//
// A URL left empty is a loopback port etcd binds itself (port 0), and
// Endpoints reports the port bound. Picking a free port first (bind :0,
// close, hand the number over) would race: until etcd binds it the kernel
// may give the port to anyone else's listener or outgoing connection, and
// etcd, or whatever lost the port to it, fails "address already in use".
package embedetcd

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Config says where the server keeps its data and listens.
type Config struct {
	// Dir is the etcd data directory; it is created if missing, and a
	// restart with the same Dir finds the same keys.
	Dir string
	// ClientURL is where clients connect, e.g. "http://127.0.0.1:2379".
	// Empty: a loopback port the kernel picks as etcd binds it.
	ClientURL string
	// PeerURL is the raft peer URL. Empty: a loopback port the kernel
	// picks. Nothing dials it in a one-member cluster.
	PeerURL string
	// Logger receives etcd's logs; nil discards them (etcd is chatty).
	Logger *zap.Logger
	// NoFsync trades durability for speed; tests only.
	NoFsync bool
	// StartTimeout bounds the wait for the server to be ready. Default 30s.
	StartTimeout time.Duration
	// CertFile, KeyFile and TrustedCAFile, if set, serve clients and peers
	// over TLS and require client certificates chaining to TrustedCAFile
	// (etcd's --client-cert-auth); default URLs are then https.
	CertFile, KeyFile, TrustedCAFile string
}

// Server is a running embedded etcd.
type Server struct {
	etcd      *embed.Etcd
	endpoints []string
	closeOnce sync.Once
}

// Start starts the server and waits until it serves clients.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.Dir == "" {
		return nil, errors.New("embedetcd: Dir is required")
	}
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = 30 * time.Second
	}
	scheme := "http"
	if cfg.CertFile != "" {
		scheme = "https"
	}
	clientURL, err := loopbackURL(cfg.ClientURL, scheme)
	if err != nil {
		return nil, fmt.Errorf("embedetcd: client URL: %w", err)
	}
	peerURL, err := loopbackURL(cfg.PeerURL, scheme)
	if err != nil {
		return nil, fmt.Errorf("embedetcd: peer URL: %w", err)
	}
	ec := embed.NewConfig()
	ec.Name = "sluice"
	ec.Dir = cfg.Dir
	ec.ListenClientUrls = []url.URL{*clientURL}
	ec.AdvertiseClientUrls = []url.URL{*clientURL}
	ec.ListenPeerUrls = []url.URL{*peerURL}
	ec.AdvertisePeerUrls = []url.URL{*peerURL}
	ec.InitialCluster = ec.InitialClusterFromName(ec.Name)
	ec.UnsafeNoFsync = cfg.NoFsync
	// etcd's HTTP/JSON gateway dials the client URL as configured, which
	// is port 0 until bound; Sluice speaks gRPC to etcd.
	ec.EnableGRPCGateway = clientURL.Port() != "0"
	if cfg.CertFile != "" {
		ec.ClientTLSInfo = transport.TLSInfo{CertFile: cfg.CertFile, KeyFile: cfg.KeyFile, TrustedCAFile: cfg.TrustedCAFile, ClientCertAuth: true}
		ec.PeerTLSInfo = ec.ClientTLSInfo
	}
	// A one-member cluster elects itself; short ticks make that fast.
	ec.TickMs = 10
	ec.ElectionMs = 100
	ec.Metrics = "basic"
	lg := cfg.Logger
	if lg == nil {
		lg = zap.NewNop()
	}
	ec.ZapLoggerBuilder = embed.NewZapLoggerBuilder(lg)
	e, err := embed.StartEtcd(ec)
	if err != nil {
		return nil, fmt.Errorf("embedetcd: start: %w", err)
	}
	timer := time.NewTimer(cfg.StartTimeout)
	defer timer.Stop()
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("embedetcd: %w", err)
	case <-timer.C:
		e.Close()
		return nil, fmt.Errorf("embedetcd: not ready after %v", cfg.StartTimeout)
	case <-ctx.Done():
		e.Close()
		return nil, ctx.Err()
	}
	endpoint := *clientURL
	if endpoint.Port() == "0" {
		endpoint.Host = e.Clients[0].Addr().String() // the port the kernel picked
	}
	return &Server{etcd: e, endpoints: []string{endpoint.String()}}, nil
}

// Endpoints are the client URLs to pass to clientv3.
func (s *Server) Endpoints() []string { return s.endpoints }

// Err reports a fatal server error.
func (s *Server) Err() <-chan error { return s.etcd.Err() }

// Close stops the server; the data stays in Dir. Closing it again does
// nothing (etcd's own Close panics the second time), so a test can stop
// the etcd its cleanup closes.
func (s *Server) Close() { s.closeOnce.Do(s.etcd.Close) }

// loopbackURL parses u, or is a loopback URL on port 0 (the kernel picks
// the port as etcd binds it) when u is empty.
func loopbackURL(u, scheme string) (*url.URL, error) {
	if u == "" {
		u = scheme + "://127.0.0.1:0"
	}
	return url.Parse(u)
}
