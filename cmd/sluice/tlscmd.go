package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/sluice-search/sluice/security/certrenew"
)

func newTLSCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "tls",
		Short:   "Certificates of a secure cluster",
		GroupID: groupTools,
	}
	cmd.AddCommand(newTLSRenewCmd())
	return cmd
}

func newTLSRenewCmd() *cobra.Command {
	var (
		namespace           string
		o                   certrenew.Options
		renewBefore, validD int
	)
	cmd := &cobra.Command{
		Use:   "renew --ca-secret NAME --secret NAME...",
		Short: "Renew the certificates in Kubernetes Secrets before they end (the Helm chart's CronJob)",
		Long: `Issue again, from the CA in --ca-secret (tls.crt, tls.key), the certificate
of each --secret (kubernetes.io/tls) that ends within --renew-before-days,
is not of that CA, or whose ca.crt is not the CA's: same names (Common Name,
Organization, DNS names, IP addresses), a new key, valid --validity-days.
Certificates not due are left alone, so running it daily is cheap. The pods
that mount a Secret re-read the files when the kubelet updates them, without
a restart; annotation sluice.dev/not-after records the new end for the next
helm upgrade. The Kubernetes API is reached as kubectl does ($KUBECONFIG,
~/.kube/config), or in a pod with its service account.`,
		Example: `  sluice tls renew --namespace search --ca-secret sluice-ca --secret sluice-tls --secret sluice-etcd-tls`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := ctrl.GetConfig()
			if err != nil {
				return err
			}
			cs, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				return err
			}
			o.RenewBefore = time.Duration(renewBefore) * 24 * time.Hour
			o.Validity = time.Duration(validD) * 24 * time.Hour
			out, err := certrenew.Renew(cmd.Context(), cs.CoreV1().Secrets(namespace), o)
			for _, oc := range out {
				what := "kept"
				if oc.Renewed {
					what = "renewed"
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s: %s (%s); ends %s\n", oc.Secret, what, oc.Reason, oc.NotAfter.UTC().Format(time.RFC3339))
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&namespace, "namespace", "default", "namespace of the Secrets")
	f.StringVar(&o.CASecret, "ca-secret", "", "Secret holding the CA's certificate and key (tls.crt, tls.key)")
	f.StringArrayVar(&o.Secrets, "secret", nil, "Secret whose certificate to renew when due (repeatable)")
	f.IntVar(&renewBefore, "renew-before-days", 60, "renew a certificate that ends within this many days")
	f.IntVar(&validD, "validity-days", 365, "days a renewed certificate is valid (more than --renew-before-days)")
	_ = cmd.MarkFlagRequired("ca-secret")
	_ = cmd.MarkFlagRequired("secret")
	return cmd
}
