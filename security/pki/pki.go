// Package pki makes a cluster CA and the certificates it issues, for
// `sluice dev --secure` and tests: ECDSA P-256 keys, PEM files, each
// certificate good for both server and client authentication (a
// coordinator serves clients and is itself a client of data nodes).
// Production clusters bring their own CA (the Helm chart's, cert-manager's)
// and name its files with --cert-file, --key-file and --trusted-ca-file;
// ParseCA reads the Helm chart's (an RSA key), whose certificates
// security/certrenew issues again before they end.
package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// CA is a certificate authority that issues certificates.
type CA struct {
	Cert *x509.Certificate
	Key  crypto.Signer
	// CertPEM is the CA certificate, the trusted CA file of every peer.
	CertPEM []byte
}

// NewCA makes a self-signed CA named cn, valid for validity.
func NewCA(cn string, validity time.Duration) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := serialNumber()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: cn},
		NotBefore: now.Add(-time.Minute), NotAfter: now.Add(validity),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, Key: key, CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

// Subject says whom a certificate names and where it is valid.
type Subject struct {
	// CommonName is the holder's name: a process, or a user whose
	// certificate identifies them to the public API.
	CommonName string
	// Organization lists the holder's groups: ClusterOrganization for the
	// cluster's own processes, role names for users.
	Organization []string
	// Hosts are the DNS names and IP addresses the certificate serves.
	Hosts []string
	// Validity is how long it is valid. Default a year.
	Validity time.Duration
}

// Issue returns a certificate and private key (PEM) for s, signed by ca.
func (ca *CA) Issue(s Subject) (certPEM, keyPEM []byte, err error) {
	if s.Validity <= 0 {
		s.Validity = 365 * 24 * time.Hour
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := serialNumber()
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: s.CommonName, Organization: s.Organization},
		NotBefore: now.Add(-time.Minute), NotAfter: now.Add(s.Validity),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	for _, h := range s.Hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.Key)
	if err != nil {
		return nil, nil, err
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), nil
}

// KeyPEM is the CA's private key (PEM), to keep beside its certificate.
func (ca *CA) KeyPEM() ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(ca.Key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// LoadCA reads a CA written by WriteCA.
func LoadCA(certFile, keyFile string) (*CA, error) {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return nil, err
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, err
	}
	ca, err := ParseCA(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("%w (%s, %s)", err, certFile, keyFile)
	}
	return ca, nil
}

// ParseCA reads a CA from its certificate and private key (PEM). The key
// may be PKCS #8 (WriteCA's), PKCS #1 RSA (Helm's genCA) or SEC 1 EC.
func ParseCA(certPEM, keyPEM []byte) (*CA, error) {
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, errors.New("pki: CA certificate or key holds no PEM block")
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("pki: CA certificate: %w", err)
	}
	if !cert.IsCA {
		return nil, fmt.Errorf("pki: %q is not a CA certificate", cert.Subject.CommonName)
	}
	var k any
	switch kb.Type {
	case "RSA PRIVATE KEY":
		k, err = x509.ParsePKCS1PrivateKey(kb.Bytes)
	case "EC PRIVATE KEY":
		k, err = x509.ParseECPrivateKey(kb.Bytes)
	default:
		k, err = x509.ParsePKCS8PrivateKey(kb.Bytes)
	}
	if err != nil {
		return nil, fmt.Errorf("pki: CA key: %w", err)
	}
	signer, ok := k.(crypto.Signer)
	if !ok {
		return nil, errors.New("pki: CA key cannot sign")
	}
	if pub, ok := signer.Public().(interface{ Equal(crypto.PublicKey) bool }); !ok || !pub.Equal(cert.PublicKey) {
		return nil, errors.New("pki: CA key is not the CA certificate's")
	}
	return &CA{Cert: cert, Key: signer, CertPEM: certPEM}, nil
}

// WriteCA writes the CA's certificate and key into dir as ca.crt and
// ca.key (the key readable by its owner only).
func (ca *CA) WriteCA(dir string) error {
	keyPEM, err := ca.KeyPEM()
	if err != nil {
		return err
	}
	return WritePair(dir, "ca", ca.CertPEM, keyPEM)
}

// WritePair writes <name>.crt and <name>.key into dir (created 0700); the
// key is readable by its owner only. Files are replaced whole (written
// aside, then renamed), so a reader never sees half a file.
func WritePair(dir, name string, certPEM, keyPEM []byte) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, name+".key"), keyPEM, 0o600); err != nil {
		return err
	}
	return writeFile(filepath.Join(dir, name+".crt"), certPEM, 0o644)
}

func writeFile(path string, data []byte, mode os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, mode); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func serialNumber() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
}
