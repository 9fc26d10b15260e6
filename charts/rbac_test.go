package charts_test

import (
	"context"
	"slices"
	"strings"

	"github.com/gardener/gardener/pkg/client/kubernetes"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	certificatesv1 "k8s.io/api/certificates/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/credentials"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/webhook/envoyfilter"
)

// allRules are the rules of every Role and ClusterRole the chart renders.
func allRules(objs []Object) map[string][]rbacv1.PolicyRule {
	out := map[string][]rbacv1.PolicyRule{}
	for _, o := range objs {
		switch r := o.(type) {
		case *rbacv1.ClusterRole:
			Expect(r.AggregationRule).To(BeNil())
			out["ClusterRole/"+r.Name] = r.Rules
		case *rbacv1.Role:
			out["Role/"+r.Name] = r.Rules
		}
	}
	return out
}

// allows tells whether rules allow the verb on group/resource (and, if not empty, the name),
// as the RBAC authorizer decides it without wildcards.
func allows(rules []rbacv1.PolicyRule, group, resource, verb, name string) bool {
	for _, r := range rules {
		if slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb) &&
			(len(r.ResourceNames) == 0 || (name != "" && slices.Contains(r.ResourceNames, name))) {
			return true
		}
	}
	return false
}

// covers tells whether holder allows everything rule grants: the API server's escalation
// check for a Role that the extension writes.
func covers(holder []rbacv1.PolicyRule, rule rbacv1.PolicyRule) bool {
	names := rule.ResourceNames
	if len(names) == 0 {
		names = []string{""}
	}
	for _, g := range rule.APIGroups {
		for _, res := range rule.Resources {
			for _, v := range rule.Verbs {
				for _, n := range names {
					if !allows(holder, g, res, v, n) {
						return false
					}
				}
			}
		}
	}
	return true
}

var _ = Describe("RBAC", func() {
	var (
		objs      []Object
		extension *rbacv1.ClusterRole
	)
	BeforeEach(func() {
		objs = objects(minimalValues())
		extension = find[*rbacv1.ClusterRole](objs, "gardener-extension-firewall")
		Expect(extension).NotTo(BeNil())
	})

	It("has no wildcard anywhere", func() {
		for _, values := range []map[string]any{minimalValues(), with(minimalValues(), []string{"webhook", "enabled"}, false)} {
			rules := allRules(objects(values))
			Expect(rules).To(HaveLen(3))
			for role, rs := range rules {
				for _, r := range rs {
					Expect(r.NonResourceURLs).To(BeEmpty(), role)
					for _, field := range [][]string{r.APIGroups, r.Resources, r.Verbs, r.ResourceNames} {
						for _, s := range field {
							Expect(s).NotTo(ContainSubstring("*"), "%s: %+v", role, r)
						}
					}
					Expect(r.Verbs).NotTo(ContainElement("escalate"), "%s: %+v", role, r)
					Expect(r.Verbs).NotTo(ContainElement("impersonate"), "%s: %+v", role, r)
					Expect(r.Verbs).NotTo(ContainElement("deletecollection"), "%s: %+v", role, r)
				}
			}
		}
	})

	It("ships the agents' CSR ClusterRole exactly as the extension wants it", func() {
		shipped := find[*rbacv1.ClusterRole](objs, constants.AgentCSRClusterRoleName)
		Expect(shipped).NotTo(BeNil())
		c := fake.NewClientBuilder().WithScheme(kubernetes.SeedScheme).WithObjects(shipped.DeepCopy()).Build()
		before := &rbacv1.ClusterRole{}
		Expect(c.Get(context.Background(), client.ObjectKeyFromObject(shipped), before)).To(Succeed())

		Expect(credentials.EnsureAgentRBAC(context.Background(), c, "garden-ext", "shoot--p--s", "firewall-abc", []string{constants.ShootAccessSecretName})).To(Succeed())

		after := &rbacv1.ClusterRole{}
		Expect(c.Get(context.Background(), client.ObjectKeyFromObject(shipped), after)).To(Succeed())
		Expect(after.ResourceVersion).To(Equal(before.ResourceVersion),
			"the extension rewrote the ClusterRole: its rules in the chart differ from credentials.AgentCSRRules (in a seed the update is refused: the extension holds neither update nor the rules)")
		Expect(equality.Semantic.DeepEqual(after.Rules, shipped.Rules)).To(BeTrue())
	})

	It("holds what it grants each agent, and may bind the agents' CSR ClusterRole", func() {
		c := fake.NewClientBuilder().WithScheme(kubernetes.SeedScheme).
			WithObjects(find[*rbacv1.ClusterRole](objs, constants.AgentCSRClusterRoleName).DeepCopy()).Build()
		Expect(credentials.EnsureAgentRBAC(context.Background(), c, "garden-ext", "shoot--p--s", "firewall-abc", []string{constants.ShootAccessSecretName})).To(Succeed())

		roles := &rbacv1.RoleList{}
		Expect(c.List(context.Background(), roles)).To(Succeed())
		Expect(roles.Items).To(HaveLen(1))
		for _, r := range roles.Items[0].Rules {
			Expect(covers(extension.Rules, r)).To(BeTrue(), "the API server refuses a Role granting what its writer lacks: %+v", r)
		}
		for _, verb := range []string{"get", "create", "update", "delete"} {
			for _, res := range []string{"roles", "rolebindings"} {
				Expect(allows(extension.Rules, rbacv1.GroupName, res, verb, "")).To(BeTrue(), verb+" "+res)
			}
		}

		bindings := &rbacv1.ClusterRoleBindingList{}
		Expect(c.List(context.Background(), bindings)).To(Succeed())
		Expect(bindings.Items).To(HaveLen(2))
		var roleRefs []string
		for _, b := range bindings.Items {
			roleRefs = append(roleRefs, b.RoleRef.Name)
		}
		Expect(roleRefs).To(ConsistOf(constants.AgentCSRClusterRoleName, "firewall:shoot--p--s:firewall-abc:csr"))

		By("the firewall's own ClusterRole names its CSR only, grants what the extension holds, and is created, never updated or deleted")
		own := &rbacv1.ClusterRole{}
		Expect(c.Get(context.Background(), client.ObjectKey{Name: "firewall:shoot--p--s:firewall-abc:csr"}, own)).To(Succeed())
		Expect(own.Rules).To(HaveLen(1))
		Expect(own.Rules[0].ResourceNames).To(ConsistOf("firewall.shoot--p--s.firewall-abc"))
		Expect(covers(extension.Rules, own.Rules[0])).To(BeTrue(), "the API server refuses a ClusterRole granting what its writer lacks")
		Expect(own.OwnerReferences).To(HaveLen(1), "the garbage collector deletes it with its binding")
		Expect(allows(extension.Rules, rbacv1.GroupName, "clusterroles", "create", "")).To(BeTrue())
		Expect(allows(extension.Rules, rbacv1.GroupName, "clusterroles", "delete", "cluster-admin")).To(BeFalse())
		Expect(allows(extension.Rules, rbacv1.GroupName, "clusterroles", "update", "cluster-admin")).To(BeFalse())
		Expect(allows(extension.Rules, rbacv1.GroupName, "clusterroles", "bind", constants.AgentCSRClusterRoleName)).To(BeTrue())
		Expect(allows(extension.Rules, rbacv1.GroupName, "clusterroles", "bind", "cluster-admin")).To(BeFalse())
		Expect(allows(extension.Rules, rbacv1.GroupName, "clusterroles", "update", constants.AgentCSRClusterRoleName)).To(BeFalse(), "the chart owns it")
		for _, verb := range []string{"get", "list", "watch", "create", "update", "delete"} {
			Expect(allows(extension.Rules, rbacv1.GroupName, "clusterrolebindings", verb, "")).To(BeTrue(), verb+" clusterrolebindings")
		}
	})

	It("mints boot tokens only for ServiceAccounts of its own namespace", func() {
		own := find[*rbacv1.Role](objs, "gardener-extension-firewall")
		Expect(own).NotTo(BeNil())
		Expect(allows(own.Rules, "", "serviceaccounts/token", "create", "")).To(BeTrue())
		for _, verb := range []string{"create", "delete", "list"} {
			Expect(allows(own.Rules, "", "serviceaccounts", verb, "")).To(BeTrue(), verb)
		}
		Expect(allows(extension.Rules, "", "serviceaccounts/token", "create", "")).To(BeFalse(), "not cluster-wide: it could impersonate any ServiceAccount of the seed")
		Expect(allows(extension.Rules, "", "serviceaccounts", "create", "")).To(BeFalse())
	})

	It("approves only kube-apiserver-client CSRs, after a SubjectAccessReview", func() {
		Expect(allows(extension.Rules, certificatesv1.GroupName, "signers", "approve", certificatesv1.KubeAPIServerClientSignerName)).To(BeTrue())
		Expect(allows(extension.Rules, certificatesv1.GroupName, "signers", "approve", certificatesv1.KubeletServingSignerName)).To(BeFalse())
		Expect(allows(extension.Rules, certificatesv1.GroupName, "signers", "sign", certificatesv1.KubeAPIServerClientSignerName)).To(BeFalse(), "kube-controller-manager signs")
		Expect(allows(extension.Rules, certificatesv1.GroupName, "certificatesigningrequests/approval", "update", "")).To(BeTrue())
		Expect(allows(extension.Rules, certificatesv1.GroupName, "certificatesigningrequests", "create", "")).To(BeFalse())
		Expect(allows(extension.Rules, "authorization.k8s.io", "subjectaccessreviews", "create", "")).To(BeTrue())
	})

	It("changes only its own webhook registration", func() {
		Expect(allows(extension.Rules, "admissionregistration.k8s.io", "mutatingwebhookconfigurations", "patch", envoyfilter.Name)).To(BeTrue())
		Expect(allows(extension.Rules, "admissionregistration.k8s.io", "mutatingwebhookconfigurations", "patch", "gardener-resource-manager")).To(BeFalse())
		Expect(allows(extension.Rules, "admissionregistration.k8s.io", "mutatingwebhookconfigurations", "delete", envoyfilter.Name)).To(BeFalse())
	})

	It("grants the controllers' kinds the verbs they use", func() {
		for _, want := range []struct{ group, resource, verbs string }{
			{"extensions.gardener.cloud", "extensions", "get list watch patch"},
			{"extensions.gardener.cloud", "extensions/status", "patch update"},
			{"extensions.gardener.cloud", "clusters", "get list watch"},
			{"extensions.gardener.cloud", "infrastructures", "get list watch"},
			{"resources.gardener.cloud", "managedresources", "get list watch create update patch delete"},
			{"", "secrets", "get list watch create update patch delete"},
			{"firewall.metal-firewall.io", "firewalldeployments", "get list watch create update patch delete"},
			{"firewall.metal-firewall.io", "firewallsets", "get list watch create update patch delete"},
			{"firewall.metal-firewall.io", "firewalls", "get list watch create update patch delete"},
			{"firewall.metal-firewall.io", "firewalls/status", "get update patch"},
			{"certificates.k8s.io", "certificatesigningrequests", "get list watch delete"},
			{"networking.istio.io", "envoyfilters", "get list watch patch update"},
			{"networking.istio.io", "gateways", "get list watch"},
		} {
			for _, verb := range strings.Fields(want.verbs) {
				Expect(allows(extension.Rules, want.group, want.resource, verb, "")).To(BeTrue(), "%s %s/%s", verb, want.group, want.resource)
			}
		}
		Expect(allows(extension.Rules, "networking.istio.io", "envoyfilters", "create", "")).To(BeFalse(), "EnvoyFilters are created by gardener-resource-manager from the ManagedResources")
		Expect(allows(extension.Rules, "", "pods", "get", "")).To(BeFalse())
	})

	It("touches provider-metal's FirewallDeployment `firewall` only, to give its replicas back", func() {
		for _, verb := range []string{"get", "patch"} {
			Expect(allows(extension.Rules, "firewall.metal-stack.io", "firewalldeployments", verb, "firewall")).To(BeTrue(), verb)
			Expect(allows(extension.Rules, "firewall.metal-stack.io", "firewalldeployments", verb, "other")).To(BeFalse(), verb)
		}
		for _, verb := range []string{"list", "watch", "create", "update", "delete"} {
			Expect(allows(extension.Rules, "firewall.metal-stack.io", "firewalldeployments", verb, "firewall")).To(BeFalse(), verb)
		}
		Expect(allows(extension.Rules, "firewall.metal-stack.io", "firewalldeployments/status", "patch", "firewall")).To(BeFalse())
		Expect(allows(extension.Rules, "firewall.metal-stack.io", "firewalls", "get", "firewall")).To(BeFalse())
	})
})
