package credentials_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/credentials"
)

var _ = Describe("BootIdentityHarmless", func() {
	It("finds nothing the boot identity may do on a seed with Gardener's bindings", func(ctx SpecContext) {
		held, err := credentials.BootIdentityHarmless(ctx, testClient, bootNamespace, "shoot--p--s", "fw-a")
		Expect(err).NotTo(HaveOccurred())
		Expect(held).To(BeEmpty())
	})

	It("names what a seed grants to the groups every ServiceAccount carries", func(ctx SpecContext) {
		for _, group := range []string{serviceaccount.AllServiceAccountsGroup, serviceaccount.MakeNamespaceGroupName(bootNamespace)} {
			crb := &rbacv1.ClusterRoleBinding{
				ObjectMeta: metav1.ObjectMeta{GenerateName: "careless-"},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:certificates.k8s.io:certificatesigningrequests:nodeclient"},
				Subjects:   []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: group}},
			}
			Expect(testClient.Create(ctx, crb)).To(Succeed())
			// The authorizer learns of the binding through its informer: ask until it has.
			Eventually(func(g Gomega) {
				held, err := credentials.BootIdentityHarmless(ctx, testClient, bootNamespace, "shoot--p--s", "fw-a")
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(held).To(ConsistOf("create certificatesigningrequests/nodeclient.certificates.k8s.io"), group)
			}).Should(Succeed())
			Expect(testClient.Delete(ctx, crb)).To(Succeed())
		}
	})
})
