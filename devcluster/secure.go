package devcluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sluice-search/sluice/security/auth"
	"github.com/sluice-search/sluice/security/pki"
	"github.com/sluice-search/sluice/security/tlsconf"
)

// TLS files of a secure dev cluster, under <data-dir>/tls/.
const (
	// CAFile is the cluster CA: the --cacert of clients.
	CAFile = "ca.crt"
	// ClusterCert and ClusterKey are the certificate of etcd, the nodes and
	// the coordinator (organization tlsconf.ClusterOrganization).
	ClusterCert, ClusterKey = "cluster.crt", "cluster.key"
	// AdminCert and AdminKey are a client certificate of the admin role.
	AdminCert, AdminKey = "admin.crt", "admin.key"
)

// renewBefore: certificates expiring sooner are issued anew at start.
const renewBefore = 30 * 24 * time.Hour

// prepareTLS makes the CA and certificates of a secure dev cluster in dir,
// or keeps those a previous run made while they are valid long enough.
func prepareTLS(dir string) error {
	caCert, caKey := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key")
	ca, err := pki.LoadCA(caCert, caKey)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && time.Until(ca.Cert.NotAfter) < renewBefore) {
		if ca, err = pki.NewCA("sluice dev CA", 10*365*24*time.Hour); err != nil {
			return err
		}
		if err := ca.WriteCA(dir); err != nil {
			return err
		}
	} else if err != nil {
		return fmt.Errorf("dev CA in %s: %w", dir, err)
	}
	for _, c := range []struct {
		name    string
		subject pki.Subject
	}{
		{"cluster", pki.Subject{CommonName: "sluice-dev", Organization: []string{tlsconf.ClusterOrganization}, Hosts: []string{"127.0.0.1", "localhost", "::1"}}},
		{"admin", pki.Subject{CommonName: "admin", Organization: []string{"admin"}}},
	} {
		if validFrom(filepath.Join(dir, c.name+".crt"), ca) {
			continue
		}
		cert, key, err := ca.Issue(c.subject)
		if err != nil {
			return err
		}
		if err := pki.WritePair(dir, c.name, cert, key); err != nil {
			return err
		}
	}
	return nil
}

// validFrom says whether the certificate in file was issued by ca and is
// valid for longer than renewBefore.
func validFrom(file string, ca *pki.CA) bool {
	pair, err := tls.LoadX509KeyPair(file, file[:len(file)-len(".crt")]+".key")
	if err != nil {
		return false
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil || time.Until(leaf.NotAfter) < renewBefore {
		return false
	}
	return leaf.CheckSignatureFrom(ca.Cert) == nil
}

// AdminKeyFile holds a secure dev cluster's admin API key, under
// <data-dir>/tls/.
const AdminKeyFile = "admin.apikey"

// authConfig is the coordinator's authentication: on in a secure cluster,
// with health open (probes, `sluice dev` users' first check) and
// reflection closed.
func authConfig(secure bool) *auth.Config {
	if !secure {
		return nil
	}
	return &auth.Config{OpenHealth: true}
}

// adminKey returns the admin key kept in dir, or makes one (and keeps it)
// when there is none or it was revoked.
func adminKey(ctx context.Context, store *auth.Store, dir string) (string, error) {
	file := filepath.Join(dir, AdminKeyFile)
	if b, err := os.ReadFile(file); err == nil {
		encoded := strings.TrimSpace(string(b))
		if cred, err := auth.ParseAuthorization("ApiKey " + encoded); err == nil {
			if k, err := store.Key(ctx, cred.ID); err != nil {
				return "", err
			} else if k != nil {
				return encoded, nil
			}
		}
	}
	_, cred, err := store.CreateKey(ctx, "sluice-dev-admin", []string{"admin"}, 0, "sluice dev")
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(file, []byte(cred.Encoded()+"\n"), 0o600); err != nil {
		return "", err
	}
	return cred.Encoded(), nil
}

// tlsFiles are the cluster certificate's files in dir, as a server and
// client of the cluster.
func tlsFiles(dir string) tlsconf.Files {
	return tlsconf.Files{CertFile: filepath.Join(dir, ClusterCert), KeyFile: filepath.Join(dir, ClusterKey),
		TrustedCAFile: filepath.Join(dir, CAFile)}
}
