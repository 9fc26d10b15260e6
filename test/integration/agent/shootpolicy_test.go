package agent_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
)

// Issue #30, finding 2: the agent's 1 h shoot token could mint a token with
// a 10-year expiry request, and create EndpointSlices that point the drop
// receiver's Service elsewhere. The agent's shoot RBAC grants neither, and
// the shoot's admission policy (what the extension's ManagedResource
// deploys) refuses it both even where RBAC grants them.
var _ = Describe("the agent's shoot credential", func() {
	It("mints no token and writes no EndpointSlice, even when granted", func(ctx SpecContext) {
		admin, kubeconfig := startShoot(ctx)
		cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
		Expect(err).NotTo(HaveOccurred())
		agent, err := kubernetes.NewForConfig(cfg)
		Expect(err).NotTo(HaveOccurred())
		mint := func(audiences []string, seconds int64) error {
			_, err := agent.CoreV1().ServiceAccounts(metav1.NamespaceSystem).CreateToken(ctx, constants.AgentServiceAccountName, &authenticationv1.TokenRequest{
				Spec: authenticationv1.TokenRequestSpec{Audiences: audiences, ExpirationSeconds: ptr.To(seconds)},
			}, metav1.CreateOptions{})
			return err
		}
		tenYears := int64(10 * 365 * 24 * 3600)

		By("its RBAC grants no token")
		Expect(mint(nil, tenYears)).To(MatchError(ContainSubstring(`cannot create resource "serviceaccounts/token"`)))

		By("a token granted by someone's Role is still refused, for any audience and life")
		grant := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "grant-tokens", Namespace: metav1.NamespaceSystem},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"serviceaccounts/token"}, Verbs: []string{"create"}}}}
		Expect(admin.Create(ctx, grant)).To(Succeed())
		Expect(admin.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: grant.Name, Namespace: grant.Namespace},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: grant.Name},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: constants.AgentServiceAccountName, Namespace: metav1.NamespaceSystem}},
		})).To(Succeed())
		const refused = "the firewall agent mints no tokens"
		Eventually(func() error { return mint(nil, tenYears) }).WithTimeout(30 * time.Second).Should(MatchError(ContainSubstring(refused)))
		Expect(mint(nil, 600)).To(MatchError(ContainSubstring(refused)))
		Expect(mint([]string{"firewall-drop.metal-firewall.io"}, 600)).To(MatchError(ContainSubstring(refused)))

		By("its RBAC grants no EndpointSlice: the extension publishes the metrics address")
		slice := func(service, name string) *discoveryv1.EndpointSlice {
			return &discoveryv1.EndpointSlice{
				ObjectMeta:  metav1.ObjectMeta{Name: name, Namespace: constants.ShootNamespace, Labels: map[string]string{discoveryv1.LabelServiceName: service}},
				AddressType: discoveryv1.AddressTypeIPv4,
				Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"203.0.113.66"}}},
			}
		}
		slices := agent.DiscoveryV1().EndpointSlices(constants.ShootNamespace)
		_, err = slices.Create(ctx, slice(fwv1alpha1.MetricsServiceName, "fw-a"), metav1.CreateOptions{})
		Expect(err).To(MatchError(ContainSubstring(`cannot create resource "endpointslices"`)))

		By("EndpointSlices granted by someone's Role are still refused: of any Service, and the extension's own")
		Expect(admin.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "grant-slices", Namespace: constants.ShootNamespace},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{discoveryv1.GroupName}, Resources: []string{"endpointslices"}, Verbs: []string{"get", "create", "update", "patch", "delete"}}}})).To(Succeed())
		Expect(admin.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "grant-slices", Namespace: constants.ShootNamespace},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "grant-slices"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: constants.AgentServiceAccountName, Namespace: metav1.NamespaceSystem}},
		})).To(Succeed())
		const noSlices = "the firewall agent writes no EndpointSlices"
		Eventually(func() error {
			_, err := slices.Create(ctx, slice(constants.DropReceiverName, "firewall-drop-evil"), metav1.CreateOptions{})
			return err
		}).WithTimeout(30 * time.Second).Should(MatchError(ContainSubstring(noSlices)))
		_, err = slices.Create(ctx, slice(fwv1alpha1.MetricsServiceName, "fw-a"), metav1.CreateOptions{})
		Expect(err).To(MatchError(ContainSubstring(noSlices)))
		published := slice(fwv1alpha1.MetricsServiceName, "fw-published")
		Expect(admin.Create(ctx, published)).To(Succeed())
		patch := []byte(`{"metadata":{"labels":{"` + discoveryv1.LabelServiceName + `":"` + constants.DropReceiverName + `"}}}`)
		_, err = slices.Patch(ctx, published.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		Expect(err).To(MatchError(ContainSubstring(noSlices)), "no relabelling to the drop receiver")
		Expect(slices.Delete(ctx, published.Name, metav1.DeleteOptions{})).To(MatchError(ContainSubstring(noSlices)))
	})
})
