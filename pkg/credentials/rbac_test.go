package credentials_test

import (
	"context"
	"slices"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	certificatesv1 "k8s.io/api/certificates/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/credentials"
)

// allows tells whether rules grant verb on resource (a name given, a
// request for that object; none, for any): how RBAC reads resourceNames.
func allows(rules []rbacv1.PolicyRule, group, resource, verb, name string) bool {
	for _, r := range rules {
		if slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb) &&
			(len(r.ResourceNames) == 0 || (name != "" && slices.Contains(r.ResourceNames, name))) {
			return true
		}
	}
	return false
}

var _ = Describe("Agent RBAC", func() {
	var (
		ctx context.Context
		c   client.Client
		// clusterRoleWrites counts updates and patches of ClusterRoles: the
		// extension may only create them.
		clusterRoleWrites int
	)
	BeforeEach(func() {
		ctx = context.Background()
		clusterRoleWrites = 0
		c = fake.NewClientBuilder().WithScheme(scheme.Scheme).WithInterceptorFuncs(interceptor.Funcs{
			// kube-apiserver gives every object a UID; owner references name it.
			Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				obj.SetUID(uuid.NewUUID())
				return c.Create(ctx, obj, opts...)
			},
			Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
				if _, ok := obj.(*rbacv1.ClusterRole); ok {
					clusterRoleWrites++
				}
				return c.Update(ctx, obj, opts...)
			},
			Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
				if _, ok := obj.(*rbacv1.ClusterRole); ok {
					clusterRoleWrites++
				}
				return c.Patch(ctx, obj, patch, opts...)
			},
		}).Build()
	})
	labels := func(name string) map[string]string {
		return map[string]string{constants.LabelFirewallNamespace: namespace, constants.LabelFirewallName: name}
	}
	// subjects are who the firewall's cluster-wide bindings name: its boot
	// ServiceAccount and its certificate's user.
	subjects := func(name string) []rbacv1.Subject {
		return []rbacv1.Subject{
			{Kind: rbacv1.ServiceAccountKind, Name: credentials.BootServiceAccountName(namespace, name), Namespace: bootNamespace},
			{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: firewallv1alpha1.AgentUserName(namespace, name)},
		}
	}
	ownCSR := func(name string) string { return firewallv1alpha1.AgentUserName(namespace, name) + ":csr" }
	user := func(name string) string { return firewallv1alpha1.AgentUserName(namespace, name) }
	role := func(ns, name string) *rbacv1.Role {
		GinkgoHelper()
		r := &rbacv1.Role{}
		Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: firewallv1alpha1.AgentUserName(ns, name)}, r)).To(Succeed())
		return r
	}
	gone := func(obj client.Object) bool {
		GinkgoHelper()
		err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		Expect(client.IgnoreNotFound(err)).To(Succeed())
		return apierrors.IsNotFound(err)
	}

	It("grants the agent its own Firewall and the named secrets, and nothing of other firewalls", func() {
		Expect(credentials.EnsureAgentRBAC(ctx, c, bootNamespace, namespace, "fw-a", []string{"shoot-access", "ca"})).To(Succeed())
		rules := role(namespace, "fw-a").Rules
		g := firewallv1alpha1.GroupName
		Expect(allows(rules, g, "firewalls", "get", "fw-a")).To(BeTrue())
		Expect(allows(rules, g, "firewalls", "watch", "fw-a")).To(BeTrue())
		Expect(allows(rules, g, "firewalls/status", "patch", "fw-a")).To(BeTrue())
		Expect(allows(rules, g, "firewalls", "get", "fw-b")).To(BeFalse())
		Expect(allows(rules, g, "firewalls", "list", "")).To(BeFalse(), "no unnamed list: the other Firewalls stay hidden")
		Expect(allows(rules, g, "firewalls", "update", "fw-a")).To(BeFalse(), "the spec is the seed's")
		Expect(allows(rules, g, "firewalls/status", "patch", "fw-b")).To(BeFalse())
		Expect(allows(rules, "", "secrets", "get", "shoot-access")).To(BeTrue())
		Expect(allows(rules, "", "secrets", "get", "other")).To(BeFalse())
		Expect(allows(rules, "", "secrets", "list", "")).To(BeFalse())
		for _, r := range rules {
			Expect(r.ResourceNames).NotTo(BeEmpty(), "every rule of the Role names its objects")
		}
		Expect(rules[len(rules)-1].ResourceNames).To(Equal([]string{"ca", "shoot-access"}), "sorted, so that the Role does not churn")

		rb := &rbacv1.RoleBinding{}
		Expect(c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: user("fw-a")}, rb)).To(Succeed())
		Expect(rb.RoleRef).To(Equal(rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user("fw-a")}))
		Expect(rb.Subjects).To(Equal([]rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user("fw-a")}}),
			"the certificate, not the boot ServiceAccount")
	})

	It("lets the certificate and the boot ServiceAccount request certificates, and nothing else cluster-wide", func() {
		Expect(credentials.EnsureAgentRBAC(ctx, c, bootNamespace, namespace, "fw-a", nil)).To(Succeed())
		cr := &rbacv1.ClusterRole{}
		Expect(c.Get(ctx, client.ObjectKey{Name: constants.AgentCSRClusterRoleName}, cr)).To(Succeed())
		Expect(cr.Rules).To(Equal(credentials.AgentCSRRules()))
		Expect(allows(cr.Rules, certificatesv1.GroupName, "certificatesigningrequests", "create", "")).To(BeTrue())
		Expect(allows(cr.Rules, certificatesv1.GroupName, "certificatesigningrequests/"+firewallv1alpha1.CSRSubresource, "create", "")).To(BeTrue())
		Expect(allows(cr.Rules, certificatesv1.GroupName, "certificatesigningrequests/approval", "update", "")).To(BeFalse())
		Expect(allows(cr.Rules, certificatesv1.GroupName, "certificatesigningrequests", "get", firewallv1alpha1.CSRName(namespace, "fw-a"))).To(BeFalse(),
			"reading a CSR is the per-firewall role's")
		for _, r := range cr.Rules {
			Expect(r.APIGroups).To(Equal([]string{certificatesv1.GroupName}))
		}

		crb := &rbacv1.ClusterRoleBinding{}
		Expect(c.Get(ctx, client.ObjectKey{Name: user("fw-a")}, crb)).To(Succeed())
		Expect(crb.Labels).To(Equal(labels("fw-a")))
		Expect(crb.RoleRef).To(Equal(rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: constants.AgentCSRClusterRoleName}))
		Expect(crb.Subjects).To(ConsistOf(subjects("fw-a")))
		Expect(crb.Subjects).NotTo(ContainElement(HaveField("Kind", rbacv1.GroupKind)), "no group: a group reaches other identities")
		Expect(role(namespace, "fw-a").Rules).NotTo(ContainElement(HaveField("Resources", ContainElement("secrets"))),
			"no secrets rule without secret names")
	})

	It("lets the firewall read, watch and replace its own CSR and no other, through a ClusterRole its binding owns", func() {
		Expect(credentials.EnsureAgentRBAC(ctx, c, bootNamespace, namespace, "fw-a", nil)).To(Succeed())
		shared := &rbacv1.ClusterRoleBinding{}
		Expect(c.Get(ctx, client.ObjectKey{Name: user("fw-a")}, shared)).To(Succeed())

		own := &rbacv1.ClusterRole{}
		Expect(c.Get(ctx, client.ObjectKey{Name: ownCSR("fw-a")}, own)).To(Succeed())
		Expect(own.Name).To(Equal("firewall:" + namespace + ":fw-a:csr"))
		Expect(own.Labels).To(Equal(labels("fw-a")))
		Expect(own.Rules).To(Equal([]rbacv1.PolicyRule{{
			APIGroups: []string{certificatesv1.GroupName}, Resources: []string{"certificatesigningrequests"},
			ResourceNames: []string{firewallv1alpha1.CSRName(namespace, "fw-a")}, Verbs: []string{"get", "list", "watch", "delete"},
		}}))
		Expect(allows(own.Rules, certificatesv1.GroupName, "certificatesigningrequests", "get", firewallv1alpha1.CSRName(namespace, "fw-b"))).To(BeFalse())
		Expect(allows(own.Rules, certificatesv1.GroupName, "certificatesigningrequests", "list", "")).To(BeFalse(), "no unnamed list: other CSRs stay hidden")
		Expect(shared.UID).NotTo(BeEmpty())
		Expect(own.OwnerReferences).To(Equal([]metav1.OwnerReference{{
			APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding", Name: shared.Name, UID: shared.UID,
		}}), "collected with the binding, so the extension never deletes a ClusterRole")

		binding := &rbacv1.ClusterRoleBinding{}
		Expect(c.Get(ctx, client.ObjectKey{Name: ownCSR("fw-a")}, binding)).To(Succeed())
		Expect(binding.Labels).To(Equal(labels("fw-a")))
		Expect(binding.RoleRef).To(Equal(rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: ownCSR("fw-a")}))
		Expect(binding.Subjects).To(ConsistOf(subjects("fw-a")))

		By("creating ClusterRoles only: a second pass neither updates nor fails")
		Expect(credentials.EnsureAgentRBAC(ctx, c, bootNamespace, namespace, "fw-a", []string{"s"})).To(Succeed())
		Expect(clusterRoleWrites).To(BeZero())
		again := &rbacv1.ClusterRole{}
		Expect(c.Get(ctx, client.ObjectKey{Name: ownCSR("fw-a")}, again)).To(Succeed())
		Expect(again.UID).To(Equal(own.UID))
	})

	It("updates the secret names in place", func() {
		Expect(credentials.EnsureAgentRBAC(ctx, c, bootNamespace, namespace, "fw-a", []string{"old"})).To(Succeed())
		Expect(credentials.EnsureAgentRBAC(ctx, c, bootNamespace, namespace, "fw-a", []string{"new"})).To(Succeed())
		rules := role(namespace, "fw-a").Rules
		Expect(allows(rules, "", "secrets", "get", "new")).To(BeTrue())
		Expect(allows(rules, "", "secrets", "get", "old")).To(BeFalse())
		roles := &rbacv1.RoleList{}
		Expect(c.List(ctx, roles, client.InNamespace(namespace))).To(Succeed())
		Expect(roles.Items).To(HaveLen(1))
	})

	It("removes a firewall's RBAC, or with no name that of the whole namespace, and keeps the shared ClusterRole", func() {
		for _, ns := range []string{namespace, "shoot--p--other"} {
			for _, name := range []string{"fw-a", "fw-b"} {
				Expect(credentials.EnsureAgentRBAC(ctx, c, bootNamespace, ns, name, []string{"s"})).To(Succeed())
			}
		}
		objects := func(ns, name string) []client.Object {
			meta := metav1.ObjectMeta{Namespace: ns, Name: firewallv1alpha1.AgentUserName(ns, name)}
			return []client.Object{&rbacv1.Role{ObjectMeta: meta}, &rbacv1.RoleBinding{ObjectMeta: meta},
				&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: meta.Name}},
				// Its ClusterRole goes with it by owner reference (no garbage collector here).
				&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: meta.Name + ":csr"}}}
		}

		Expect(credentials.DeleteAgentRBAC(ctx, c, namespace, "fw-a")).To(Succeed())
		Expect(objects(namespace, "fw-a")).To(HaveEach(Satisfy(gone)))
		Expect(objects(namespace, "fw-b")).To(HaveEach(Not(Satisfy(gone))))

		Expect(credentials.DeleteAgentRBAC(ctx, c, namespace, "")).To(Succeed())
		Expect(objects(namespace, "fw-b")).To(HaveEach(Satisfy(gone)))
		Expect(append(objects("shoot--p--other", "fw-a"), objects("shoot--p--other", "fw-b")...)).To(HaveEach(Not(Satisfy(gone))))
		Expect(gone(&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: constants.AgentCSRClusterRoleName}})).To(BeFalse())

		Expect(credentials.DeleteAgentRBAC(ctx, c, namespace, "fw-a")).To(Succeed(), "nothing left is no error")
	})
})
