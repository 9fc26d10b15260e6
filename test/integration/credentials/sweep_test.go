package credentials_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/credentials"
)

// Issue #30, finding 5: the pre-mint check walked a fixed list of
// permissions. The sweep asks the seed about every resource it serves (its
// CRDs included), so what no list names is found too.
var _ = Describe("Sweep", func() {
	var sweep *credentials.Sweep

	BeforeEach(func() {
		d, err := discovery.NewDiscoveryClientForConfig(seed.Config)
		Expect(err).NotTo(HaveOccurred())
		// A zero TTL would keep answers for a minute: each ask here is fresh.
		sweep = &credentials.Sweep{Client: testClient, Discovery: d, TTL: time.Nanosecond}
	})

	It("finds nothing the boot identity's groups may do on a seed with Gardener's bindings", func(ctx SpecContext) {
		Expect(sweep.Held(ctx, bootNamespace)).To(BeEmpty())
	})

	// grant binds rule to group, cluster-wide or (namespace set) in namespace.
	grant := func(ctx SpecContext, rule rbacv1.PolicyRule, group, namespace string) {
		cr := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{GenerateName: "careless-"}, Rules: []rbacv1.PolicyRule{rule}}
		Expect(testClient.Create(ctx, cr)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(testClient.Delete(ctx, cr)).To(Succeed()) })
		subjects := []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: group}}
		ref := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: cr.Name}
		var binding client.Object = &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{GenerateName: "careless-"}, RoleRef: ref, Subjects: subjects}
		if namespace != "" {
			binding = &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{GenerateName: "careless-", Namespace: namespace}, RoleRef: ref, Subjects: subjects}
		}
		Expect(testClient.Create(ctx, binding)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(testClient.Delete(ctx, binding)).To(Succeed()) })
	}

	DescribeTable("names what no fixed list named, granted to the groups every boot identity carries",
		func(ctx SpecContext, rule rbacv1.PolicyRule, group, namespace, want string) {
			if group == "" {
				group = serviceaccount.MakeNamespaceGroupName(bootNamespace)
			}
			grant(ctx, rule, group, namespace)
			By("the fixed list does not see it")
			Eventually(func(g Gomega) {
				g.Expect(sweep.Held(ctx, bootNamespace)).To(ContainElement(want))
			}).Should(Succeed())
			Expect(credentials.BootIdentityHarmless(ctx, testClient, bootNamespace, "shoot--p--s", "fw-a")).To(BeEmpty(),
				"the per-firewall list names no such permission")
		},
		Entry("starting Jobs, which run pods", rbacv1.PolicyRule{APIGroups: []string{"batch"}, Resources: []string{"jobs"}, Verbs: []string{"create"}},
			serviceaccount.AllServiceAccountsGroup, "", "create jobs.batch"),
		Entry("writing a CRD's objects (another firewall's status)", rbacv1.PolicyRule{APIGroups: []string{"firewall.metal-firewall.io"}, Resources: []string{"firewalls/status"}, Verbs: []string{"patch"}},
			"", "", "patch firewalls/status.firewall.metal-firewall.io"),
		Entry("deleting ConfigMaps in kube-system only", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"delete"}},
			"system:authenticated", metav1.NamespaceSystem, "delete configmaps in kube-system"),
		Entry("a websocket exec (GET) in the boot namespace", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods/exec"}, Verbs: []string{"get"}},
			"", bootNamespace, "get pods/exec in "+bootNamespace),
	)

	It("keeps its answer for its TTL, and asks again after", func(ctx SpecContext) {
		now := time.Now()
		sweep.TTL, sweep.Now = time.Minute, func() time.Time { return now }
		Expect(sweep.Held(ctx, bootNamespace)).To(BeEmpty())
		grant(ctx, rbacv1.PolicyRule{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"patch"}}, serviceaccount.AllServiceAccountsGroup, "")
		// The authorizer learns of the binding through its informer; a
		// fresh sweep shows when it has.
		fresh := &credentials.Sweep{Client: testClient, Discovery: sweep.Discovery, TTL: time.Nanosecond}
		Eventually(func() ([]string, error) { return fresh.Held(ctx, bootNamespace) }).Should(ContainElement("patch deployments.apps"))
		Expect(sweep.Held(ctx, bootNamespace)).To(BeEmpty(), "within the TTL")
		now = now.Add(time.Minute)
		Expect(sweep.Held(ctx, bootNamespace)).To(ContainElement("patch deployments.apps"))
	})
})
