package v1alpha1_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/sluice-search/sluice/operator/api/v1alpha1"
	"github.com/sluice-search/sluice/operator/crdtest"
)

// The validation suite runs against a real kube-apiserver with the CRDs from
// deploy/crds: the OpenAPI schemas and CEL rules are enforced by the API
// server, so only a real one can tell whether they do what they say.
func TestValidation(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "sluice.dev/v1alpha1 validation")
}

var (
	testEnv   *envtest.Environment
	k8sClient client.Client
	namespace = "validation"
)

var _ = BeforeSuite(func(ctx SpecContext) {
	if crdtest.Skipped() {
		Skip(crdtest.SkipEnv + "=1: not starting kube-apiserver")
	}
	var (
		cfg *rest.Config
		err error
	)
	testEnv, cfg, err = crdtest.Start()
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(testEnv.Stop)

	scheme := runtime.NewScheme()
	Expect(v1alpha1.AddToScheme(scheme)).To(Succeed())
	Expect(corev1.AddToScheme(scheme)).To(Succeed())
	k8sClient, err = client.New(cfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	Expect(k8sClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}})).To(Succeed())
})
