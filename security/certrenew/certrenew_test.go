package certrenew

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/sluice-search/sluice/security/pki"
)

const day = 24 * time.Hour

// helmCA makes a CA as Helm's genCA does: RSA, its key PKCS #1.
func helmCA(t *testing.T) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "sluice CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(3650 * day),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
}

func tlsSecret(name string, data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns",
		Annotations: map[string]string{NotAfterAnnotation: "0", "sluice.dev/names": "digest"}},
		Type: corev1.SecretTypeTLS, Data: data}
}

func leaf(t *testing.T, ca *pki.CA, validity time.Duration) (certPEM, keyPEM []byte) {
	t.Helper()
	c, k, err := ca.Issue(pki.Subject{CommonName: "sluice-cluster", Organization: []string{"sluice-cluster"},
		Hosts: []string{"sluice-node.ns.svc", "*.sluice-node.ns.svc", "127.0.0.1"}, Validity: validity})
	if err != nil {
		t.Fatal(err)
	}
	return c, k
}

// TestRenew: certificates due (ending within RenewBefore, of another CA,
// or with a stale ca.crt) are issued again by the chart's CA with the same
// names and a new key, their end recorded for `helm upgrade`; the others,
// and the CA, are left as they are; a Secret without a certificate fails
// alone.
func TestRenew(t *testing.T) {
	ctx := context.Background()
	caCert, caKey := helmCA(t)
	ca, err := pki.ParseCA(caCert, caKey)
	if err != nil {
		t.Fatal(err)
	}
	other, err := pki.NewCA("another CA", 3650*day)
	if err != nil {
		t.Fatal(err)
	}
	pair := func(ca *pki.CA, validity time.Duration, caPEM []byte) map[string][]byte {
		c, k := leaf(t, ca, validity)
		return map[string][]byte{"tls.crt": c, "tls.key": k, "ca.crt": caPEM}
	}
	secrets := map[string]map[string][]byte{
		"due":        pair(ca, 10*day, caCert),
		"fresh":      pair(ca, 300*day, caCert),
		"other-ca":   pair(other, 300*day, other.CertPEM),
		"stale-ca":   pair(ca, 300*day, other.CertPEM),
		"no-cert":    {"tls.key": []byte("x")},
		"sluice-ca":  {"tls.crt": caCert, "tls.key": caKey},
		"untouched2": pair(ca, 10*day, caCert), // due, but not named
	}
	cs := fake.NewClientset()
	api := cs.CoreV1().Secrets("ns")
	for name, data := range secrets {
		if _, err := api.Create(ctx, tlsSecret(name, data), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	out, err := Renew(ctx, api, Options{CASecret: "sluice-ca", Secrets: []string{"due", "fresh", "other-ca", "stale-ca", "no-cert"},
		RenewBefore: 60 * day, Validity: 365 * day})
	if err == nil || !strings.Contains(err.Error(), "secret no-cert") {
		t.Errorf("error %v, want one naming no-cert", err)
	}
	renewed := map[string]bool{}
	for _, o := range out {
		renewed[o.Secret] = o.Renewed
	}
	want := map[string]bool{"due": true, "fresh": false, "other-ca": true, "stale-ca": true}
	if len(renewed) != len(want) {
		t.Fatalf("outcomes %+v", out)
	}
	for name, w := range want {
		if renewed[name] != w {
			t.Errorf("%s renewed %v, want %v (%+v)", name, renewed[name], w, out)
		}
		s, err := api.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !w {
			if string(s.Data["tls.crt"]) != string(secrets[name]["tls.crt"]) {
				t.Errorf("%s changed", name)
			}
			continue
		}
		checkRenewed(t, s, ca, secrets[name])
	}
	for _, name := range []string{"sluice-ca", "untouched2"} {
		s, _ := api.Get(ctx, name, metav1.GetOptions{})
		if string(s.Data["tls.crt"]) != string(secrets[name]["tls.crt"]) {
			t.Errorf("%s changed", name)
		}
	}
	// Run again: nothing is due any more.
	out, err = Renew(ctx, api, Options{CASecret: "sluice-ca", Secrets: []string{"due", "fresh", "other-ca", "stale-ca"},
		RenewBefore: 60 * day, Validity: 365 * day})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range out {
		if o.Renewed {
			t.Errorf("%s renewed twice: %s", o.Secret, o.Reason)
		}
	}
}

func checkRenewed(t *testing.T, s *corev1.Secret, ca *pki.CA, before map[string][]byte) {
	t.Helper()
	c, err := parseCert(s.Data["tls.crt"])
	if err != nil {
		t.Fatal(err)
	}
	old, _ := parseCert(before["tls.crt"])
	if err := c.CheckSignatureFrom(ca.Cert); err != nil {
		t.Errorf("%s: not of the CA: %v", s.Name, err)
	}
	if string(s.Data["ca.crt"]) != string(ca.CertPEM) {
		t.Errorf("%s: ca.crt is not the CA's", s.Name)
	}
	if c.Subject.CommonName != old.Subject.CommonName || !slices.Equal(c.Subject.Organization, old.Subject.Organization) ||
		!slices.Equal(c.DNSNames, old.DNSNames) || len(c.IPAddresses) != 1 || !c.IPAddresses[0].Equal(old.IPAddresses[0]) {
		t.Errorf("%s: names changed: %v %v %v, were %v %v %v", s.Name, c.Subject, c.DNSNames, c.IPAddresses, old.Subject, old.DNSNames, old.IPAddresses)
	}
	if d := time.Until(c.NotAfter); d < 364*day || d > 366*day {
		t.Errorf("%s: ends in %v", s.Name, d)
	}
	if got := s.Annotations[NotAfterAnnotation]; got != strconv.FormatInt(c.NotAfter.Unix(), 10) {
		t.Errorf("%s: annotation %s, certificate ends %d", s.Name, got, c.NotAfter.Unix())
	}
	if s.Annotations["sluice.dev/names"] != "digest" {
		t.Errorf("%s: other annotations lost: %v", s.Name, s.Annotations)
	}
	if string(s.Data["tls.key"]) == string(before["tls.key"]) {
		t.Errorf("%s: key not renewed", s.Name)
	}
	if _, err := tls.X509KeyPair(s.Data["tls.crt"], s.Data["tls.key"]); err != nil {
		t.Errorf("%s: certificate and key do not match: %v", s.Name, err)
	}
}

func TestRenewRefusesValidityWithinRenewBefore(t *testing.T) {
	_, err := Renew(context.Background(), fake.NewClientset().CoreV1().Secrets("ns"), Options{RenewBefore: 60 * day, Validity: 30 * day})
	if err == nil || !strings.Contains(err.Error(), "must exceed") {
		t.Fatalf("got %v", err)
	}
}
