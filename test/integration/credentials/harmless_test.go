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

	// Finding 5 of issue #30: a seed that granted impersonate to every
	// ServiceAccount passed the check before, and the token could then act
	// as anyone. Each row grants one dangerous permission to the group every
	// ServiceAccount carries; the check must name it.
	DescribeTable("names every dangerous permission a seed grants every ServiceAccount",
		func(ctx SpecContext, rule rbacv1.PolicyRule, want string) {
			cr := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{GenerateName: "careless-"}, Rules: []rbacv1.PolicyRule{rule}}
			Expect(testClient.Create(ctx, cr)).To(Succeed())
			DeferCleanup(func(ctx SpecContext) { Expect(testClient.Delete(ctx, cr)).To(Succeed()) })
			crb := &rbacv1.ClusterRoleBinding{
				ObjectMeta: metav1.ObjectMeta{GenerateName: "careless-"},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: cr.Name},
				Subjects:   []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: serviceaccount.AllServiceAccountsGroup}},
			}
			Expect(testClient.Create(ctx, crb)).To(Succeed())
			DeferCleanup(func(ctx SpecContext) { Expect(testClient.Delete(ctx, crb)).To(Succeed()) })
			Eventually(func(g Gomega) {
				held, err := credentials.BootIdentityHarmless(ctx, testClient, bootNamespace, "shoot--p--s", "fw-a")
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(held).To(ContainElement(want))
			}).Should(Succeed())
		},
		Entry("impersonating any user", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"users"}, Verbs: []string{"impersonate"}}, "impersonate users named system:admin"),
		Entry("impersonating system:masters only", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"groups"}, ResourceNames: []string{"system:masters"}, Verbs: []string{"impersonate"}}, "impersonate groups named system:masters"),
		Entry("impersonating ServiceAccounts", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"serviceaccounts"}, Verbs: []string{"impersonate"}}, "impersonate serviceaccounts in kube-system"),
		Entry("escalating ClusterRoles", rbacv1.PolicyRule{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"clusterroles"}, Verbs: []string{"escalate"}}, "escalate clusterroles.rbac.authorization.k8s.io"),
		Entry("binding Roles", rbacv1.PolicyRule{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"roles"}, Verbs: []string{"bind"}}, "bind roles.rbac.authorization.k8s.io in kube-system"),
		Entry("reading every Secret", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"list"}}, "list secrets in kube-system"),
		Entry("minting tokens in any namespace", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"serviceaccounts/token"}, Verbs: []string{"create"}}, "create serviceaccounts/token in "+bootNamespace),
		Entry("the kubelet API through nodes/proxy", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"nodes/proxy"}, Verbs: []string{"get"}}, "get nodes/proxy"),
		Entry("entering pods", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods/exec"}, Verbs: []string{"create"}}, "create pods/exec in kube-system"),
		Entry("starting DaemonSets", rbacv1.PolicyRule{APIGroups: []string{"apps"}, Resources: []string{"daemonsets"}, Verbs: []string{"create"}}, "create daemonsets.apps in kube-system"),
		Entry("writing admission webhooks", rbacv1.PolicyRule{APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"mutatingwebhookconfigurations"}, Verbs: []string{"create"}}, "create mutatingwebhookconfigurations.admissionregistration.k8s.io"),
	)
})
