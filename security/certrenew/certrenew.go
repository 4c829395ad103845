// Package certrenew renews certificates kept in Kubernetes Secrets of
// type kubernetes.io/tls (tls.crt, tls.key, ca.crt) before they end,
// issuing each again from a CA whose certificate and key are in another
// Secret: the Helm chart's own CA, whose certificates a CronJob renews
// with `sluice tls renew` (cert-manager renews its own).
//
// A certificate is issued again when it ends within RenewBefore, when it
// is not of the CA, or when its ca.crt is not the CA's certificate. The
// new one keeps the holder's names (Common Name, Organization, DNS names,
// IP addresses: what the chart issued it for) with a new key, and the
// Secret is written in one update conditional on the version read, so a
// run that races another (or a `helm upgrade`) changes nothing and the
// next run looks again. Pods see certificate and key change together
// (the kubelet swaps a Secret volume's files at once) and re-read them
// without a restart (security/tlsconf; etcd reads its files at each
// handshake). Annotation sluice.dev/not-after is set to the new end, so
// the next `helm upgrade` keeps the renewed certificate rather than
// issuing its own.
package certrenew

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/sluice-search/sluice/security/pki"
)

// NotAfterAnnotation records when a Secret's certificate ends (Unix
// seconds): the Helm chart reads it at upgrade, since templates cannot
// parse certificates.
const NotAfterAnnotation = "sluice.dev/not-after"

// Options say what to renew and when.
type Options struct {
	// CASecret names the Secret holding the CA's tls.crt and tls.key.
	CASecret string
	// Secrets name the Secrets whose certificates are renewed.
	Secrets []string
	// RenewBefore: a certificate ending sooner is issued again.
	RenewBefore time.Duration
	// Validity of a certificate issued; more than RenewBefore.
	Validity time.Duration
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// Outcome is what happened to one Secret.
type Outcome struct {
	Secret   string
	Renewed  bool
	Reason   string    // why it was issued again, or why not
	NotAfter time.Time // the end of its certificate now
}

// Renew renews the certificates of o.Secrets that are due. A Secret that
// fails does not stop the others: the error joins every failure.
func Renew(ctx context.Context, secrets corev1client.SecretInterface, o Options) ([]Outcome, error) {
	if o.Validity <= o.RenewBefore {
		return nil, fmt.Errorf("certrenew: validity %v must exceed renew-before %v, or every certificate would be due when issued", o.Validity, o.RenewBefore)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	caSecret, err := secrets.Get(ctx, o.CASecret, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("certrenew: CA secret: %w", err)
	}
	ca, err := pki.ParseCA(caSecret.Data[corev1.TLSCertKey], caSecret.Data[corev1.TLSPrivateKeyKey])
	if err != nil {
		return nil, fmt.Errorf("certrenew: CA secret %s: %w", o.CASecret, err)
	}
	var out []Outcome
	var errs []error
	for _, name := range o.Secrets {
		oc, err := renewOne(ctx, secrets, ca, name, o)
		if err != nil {
			errs = append(errs, fmt.Errorf("certrenew: secret %s: %w", name, err))
			continue
		}
		out = append(out, oc)
	}
	return out, errors.Join(errs...)
}

func renewOne(ctx context.Context, secrets corev1client.SecretInterface, ca *pki.CA, name string, o Options) (Outcome, error) {
	oc := Outcome{Secret: name}
	s, err := secrets.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return oc, err
	}
	leaf, err := parseCert(s.Data[corev1.TLSCertKey])
	if err != nil {
		// Its names are unknown: only the chart knows what to issue.
		return oc, fmt.Errorf("%w: `helm upgrade` issues it anew", err)
	}
	oc.NotAfter = leaf.NotAfter
	switch {
	case leaf.CheckSignatureFrom(ca.Cert) != nil:
		oc.Reason = "not issued by the CA"
	case string(s.Data["ca.crt"]) != string(ca.CertPEM):
		oc.Reason = "its ca.crt is not the CA's certificate"
	case leaf.NotAfter.Sub(o.Now()) < o.RenewBefore:
		oc.Reason = fmt.Sprintf("ends %s, within %v", leaf.NotAfter.UTC().Format(time.RFC3339), o.RenewBefore)
	default:
		oc.Reason = fmt.Sprintf("valid until %s", leaf.NotAfter.UTC().Format(time.RFC3339))
		return oc, nil
	}
	hosts := append([]string(nil), leaf.DNSNames...)
	for _, ip := range leaf.IPAddresses {
		hosts = append(hosts, ip.String())
	}
	certPEM, keyPEM, err := ca.Issue(pki.Subject{CommonName: leaf.Subject.CommonName, Organization: leaf.Subject.Organization,
		Hosts: hosts, Validity: o.Validity})
	if err != nil {
		return oc, err
	}
	issued, err := parseCert(certPEM)
	if err != nil {
		return oc, err
	}
	s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey], s.Data["ca.crt"] = certPEM, keyPEM, ca.CertPEM
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	s.Annotations[NotAfterAnnotation] = strconv.FormatInt(issued.NotAfter.Unix(), 10)
	// s carries the version read: a concurrent change fails this update.
	if _, err := secrets.Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		return oc, err
	}
	oc.Renewed, oc.NotAfter = true, issued.NotAfter
	return oc, nil
}

func parseCert(b []byte) (*x509.Certificate, error) {
	blk, _ := pem.Decode(b)
	if blk == nil {
		return nil, errors.New("tls.crt holds no PEM certificate")
	}
	c, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("tls.crt: %w", err)
	}
	return c, nil
}
