package e2e

import (
	"context"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sluiceclient "github.com/sluice-search/sluice/client"
	"github.com/sluice-search/sluice/cluster/watermark"
	"github.com/sluice-search/sluice/devcluster"
	"github.com/sluice-search/sluice/operator/api/v1alpha1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
	"github.com/sluice-search/sluice/security/tlsconf"
)

// secureNamespace is watched by an operator of a secure cluster.
const secureNamespace = "secure"

// operatorRole is the role the Helm chart gives the operator's key
// (charts/sluice, operator.indexPatterns "*"): manage and monitor the
// indices it reconciles, read and write them for Reindex resources; not
// admin.
var operatorRole = &sluicev1.Role{Name: "sluice-operator", Indices: []*sluicev1.IndexPrivileges{{Names: []string{"*"},
	Privileges: []sluicev1.Privilege{sluicev1.Privilege_PRIVILEGE_MANAGE, sluicev1.Privilege_PRIVILEGE_MONITOR,
		sluicev1.Privilege_PRIVILEGE_READ, sluicev1.Privilege_PRIVILEGE_WRITE}}}}

var _ = Describe("Secure cluster", func() {
	It("reconciles an Index over TLS with the operator's own key, which is not admin", func(ctx SpecContext) {
		c, err := devcluster.Start(ctx, devcluster.Config{ClusterSettings: watermark.Ignored(), DataDir: GinkgoT().TempDir(), Listen: "127.0.0.1:0", Nodes: 1,
			Logger: quietLogger(), Secure: true})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(c.Stop)
		ca, err := tlsconf.Load(tlsconf.Files{TrustedCAFile: filepath.Join(c.TLSDir, devcluster.CAFile)}, false, nil)
		Expect(err).NotTo(HaveOccurred())
		dial := func(key string) *sluiceclient.Client {
			cl, err := sluiceclient.Dial(ctx, c.Addr(), append(ca.DialOptions(), sluiceclient.WithAPIKey(key))...)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(cl.Close)
			return cl
		}
		admin := sluicev1.NewAuthClient(dial(c.AdminKey).Conn())
		_, err = admin.PutRole(ctx, &sluicev1.PutRoleRequest{Role: operatorRole})
		Expect(err).NotTo(HaveOccurred())
		key, err := admin.CreateApiKey(ctx, &sluicev1.CreateApiKeyRequest{Name: "operator", Roles: []string{operatorRole.Name}})
		Expect(err).NotTo(HaveOccurred())
		_, err = sluicev1.NewAuthClient(dial(key.Encoded).Conn()).ListApiKeys(ctx, &sluicev1.ListApiKeysRequest{})
		Expect(status.Code(err)).To(Equal(codes.PermissionDenied), "the operator's key manages keys: %v", err)

		op := startOperator(secureNamespace, c.Addr(), append(ca.DialOptions(), sluiceclient.WithAPIKey(key.Encoded))...)
		DeferCleanup(op.stop)
		ix := &v1alpha1.Index{ObjectMeta: metav1.ObjectMeta{Name: "guarded", Namespace: secureNamespace}}
		ix.Spec.Shards = 1
		Expect(k8s.Create(ctx, ix)).To(Succeed())
		expectReady(ctx, ix)
		Expect(k8s.Delete(ctx, ix)).To(Succeed())
		expectGone(ctx, ix)
		cl := dial(c.AdminKey)
		Eventually(func() codes.Code {
			_, err := cl.GetIndex(context.Background(), &sluicev1.GetIndexRequest{Name: "guarded"})
			return status.Code(err)
		}).Should(Equal(codes.NotFound))
	})
})
