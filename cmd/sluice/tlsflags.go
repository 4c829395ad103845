package main

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluice-search/sluice/security/auth"
	"github.com/sluice-search/sluice/security/tlsconf"
)

// tlsFlags are the TLS flags of `sluice node` and `sluice coordinator`,
// named as etcd names its own: the process's certificate and key, the CA
// its peers' certificates chain to, and the etcd client's files (the same
// ones unless given).
type tlsFlags struct {
	files                                 tlsconf.Files
	etcdCertFile, etcdKeyFile, etcdCAFile string
}

func (f *tlsFlags) register(cmd *cobra.Command, clientCertAuthHelp string) {
	fl := cmd.Flags()
	fl.StringVar(&f.files.CertFile, "cert-file", "", "TLS certificate (PEM, with intermediates) this process serves and presents to its peers; re-read when it changes on disk")
	fl.StringVar(&f.files.KeyFile, "key-file", "", "TLS private key (PEM) of --cert-file")
	fl.StringVar(&f.files.TrustedCAFile, "trusted-ca-file", "", "CA bundle (PEM) the certificates of peers and clients must chain to; re-read when it changes")
	if clientCertAuthHelp != "" {
		fl.BoolVar(&f.files.ClientCertAuth, "client-cert-auth", false, clientCertAuthHelp)
	}
	fl.StringVar(&f.etcdCertFile, "etcd-cert-file", "", "client certificate for etcd (default --cert-file when etcd is https)")
	fl.StringVar(&f.etcdKeyFile, "etcd-key-file", "", "client key for etcd (default --key-file when etcd is https)")
	fl.StringVar(&f.etcdCAFile, "etcd-trusted-ca-file", "", "CA bundle etcd's certificate chains to (default --trusted-ca-file when etcd is https)")
}

// apply loads the process's TLS source (nil when no file is named) and
// the etcd client's configuration.
func (f *tlsFlags) apply(endpoints []string, log *slog.Logger) (*tlsconf.Source, *tls.Config, error) {
	var src *tlsconf.Source
	if f.files.Enabled() {
		var err error
		if src, err = tlsconf.Load(f.files, true, log); err != nil {
			return nil, nil, err
		}
	}
	etcd, err := f.etcd(endpoints, log)
	if err != nil {
		return nil, nil, err
	}
	return src, etcd, nil
}

// etcd returns the etcd client's TLS configuration: nil for plaintext
// endpoints without etcd files; an https endpoint without any file is
// refused (it could not verify etcd).
func (f *tlsFlags) etcd(endpoints []string, log *slog.Logger) (*tls.Config, error) {
	https := false
	for _, e := range endpoints {
		https = https || strings.HasPrefix(e, "https://")
	}
	files := tlsconf.Files{CertFile: f.etcdCertFile, KeyFile: f.etcdKeyFile, TrustedCAFile: f.etcdCAFile}
	if https && !files.Enabled() {
		files = tlsconf.Files{CertFile: f.files.CertFile, KeyFile: f.files.KeyFile, TrustedCAFile: f.files.TrustedCAFile}
	}
	if !files.Enabled() {
		return nil, nil
	}
	if !https {
		return nil, fmt.Errorf("--etcd-cert-file, --etcd-key-file or --etcd-trusted-ca-file given for plaintext etcd endpoints %v: use https:// endpoints", endpoints)
	}
	s, err := tlsconf.Load(files, false, log)
	if err != nil {
		return nil, fmt.Errorf("etcd %w", err)
	}
	return s.ClientConfig(), nil
}

// authFlags turn a coordinator's authentication on and tune it.
type authFlags struct {
	auth, openHealth, openReflection bool
	cacheTTL                         time.Duration
	keysFile                         string
}

func (f *authFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.BoolVar(&f.auth, "auth", true, "with TLS on, authenticate every caller (API key or client certificate) and check its roles' privileges; --auth=false serves TLS without authentication")
	fl.DurationVar(&f.cacheTTL, "auth-cache-ttl", auth.DefaultCacheTTL, "how long API keys and roles are cached: the longest a key revoked or a role changed on another coordinator still works here")
	fl.BoolVar(&f.openHealth, "auth-open-health", false, "serve the gRPC health service without authentication (probes)")
	fl.BoolVar(&f.openReflection, "auth-open-reflection", false, "serve gRPC reflection without authentication (grpcurl without a key)")
	fl.StringVar(&f.keysFile, "auth-keys-file", "", "JSON file of API keys (by the SHA-256 of their secrets) and roles honoured beside etcd's, re-read when it changes: how a deployment bootstraps its admin and operator keys (docs/security.md)")
}

// config is the coordinator's auth configuration: nil without TLS (keys
// are never taken in plaintext) or with --auth=false.
func (f *authFlags) config(tlsOn bool, log *slog.Logger) (*auth.Config, error) {
	if f.keysFile != "" && (!tlsOn || !f.auth) {
		return nil, fmt.Errorf("--auth-keys-file needs TLS (--cert-file, --key-file, --trusted-ca-file) and --auth")
	}
	if !tlsOn {
		log.Warn("serving plaintext without authentication: anyone who reaches this port can read, write and delete every index; give --cert-file, --key-file and --trusted-ca-file (docs/security.md)")
		return nil, nil
	}
	if !f.auth {
		log.Warn("--auth=false: serving TLS without authentication; anyone who reaches this port can read, write and delete every index")
		return nil, nil
	}
	return &auth.Config{CacheTTL: f.cacheTTL, OpenHealth: f.openHealth, OpenReflection: f.openReflection, KeysFile: f.keysFile}, nil
}
