package credentials_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/credentials"
)

var _ = Describe("ShootDelivery", func() {
	var (
		ctx   context.Context
		shoot client.Client
		asked []string // the seed namespaces whose shoot was asked for
		d     *credentials.ShootDelivery
	)
	BeforeEach(func() {
		ctx = context.Background()
		shoot = fake.NewClientBuilder().WithScheme(scheme.Scheme).Build()
		asked = nil
		d = credentials.NewShootDeliveryWith(func(_ context.Context, ns string) (client.Client, error) {
			asked = append(asked, ns)
			return shoot, nil
		})
	})
	name := firewallv1alpha1.DeliveredBootstrapSecretName("fw-a")
	key := client.ObjectKey{Namespace: constants.ShootNamespace, Name: name}
	delivered := func(fw string) []byte {
		GinkgoHelper()
		box, err := d.Delivered(ctx, namespace, fw)
		Expect(err).NotTo(HaveOccurred())
		return box
	}

	It("writes the sealed kubeconfig into a Secret that only the agent's ServiceAccount may read", func() {
		Expect(d.Deliver(ctx, namespace, "fw-a", []byte("sealed-1"))).To(Succeed())
		Expect(asked).To(Equal([]string{namespace}))
		Expect(shoot.Get(ctx, client.ObjectKey{Name: constants.ShootNamespace}, &corev1.Namespace{})).To(Succeed())

		secret := &corev1.Secret{}
		Expect(shoot.Get(ctx, key, secret)).To(Succeed())
		Expect(secret.Type).To(Equal(corev1.SecretTypeOpaque))
		Expect(secret.Data).To(Equal(map[string][]byte{firewallv1alpha1.DeliveredBootstrapKey: []byte("sealed-1")}))
		Expect(secret.Labels).To(HaveKeyWithValue(constants.LabelFirewallName, "fw-a"))
		Expect(delivered("fw-a")).To(Equal([]byte("sealed-1")))

		role := &rbacv1.Role{}
		Expect(shoot.Get(ctx, key, role)).To(Succeed())
		Expect(role.Rules).To(Equal([]rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{name}, Verbs: []string{"get"}}}))
		binding := &rbacv1.RoleBinding{}
		Expect(shoot.Get(ctx, key, binding)).To(Succeed())
		Expect(binding.RoleRef).To(Equal(rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}))
		Expect(binding.Subjects).To(Equal([]rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: constants.AgentServiceAccountName, Namespace: metav1.NamespaceSystem}}))

		By("replacing the content on the next delivery")
		Expect(d.Deliver(ctx, namespace, "fw-a", []byte("sealed-2"))).To(Succeed())
		Expect(shoot.Get(ctx, key, secret)).To(Succeed())
		Expect(secret.Data[firewallv1alpha1.DeliveredBootstrapKey]).To(Equal([]byte("sealed-2")))
		Expect(delivered("fw-a")).To(Equal([]byte("sealed-2")))
	})

	It("tells what the shoot holds, as the shoot's admins left it", func() {
		Expect(delivered("fw-a")).To(BeNil())
		Expect(d.Deliver(ctx, namespace, "fw-a", []byte("sealed"))).To(Succeed())
		secret := &corev1.Secret{}
		Expect(shoot.Get(ctx, key, secret)).To(Succeed())
		secret.Data[firewallv1alpha1.DeliveredBootstrapKey] = []byte("forged")
		Expect(shoot.Update(ctx, secret)).To(Succeed())
		Expect(delivered("fw-a")).To(Equal([]byte("forged")), "the seed compares it with its own record")
	})

	It("withdraws all it wrote and keeps the namespace; withdrawing again is no error", func() {
		Expect(d.Deliver(ctx, namespace, "fw-a", []byte("sealed"))).To(Succeed())
		Expect(d.Deliver(ctx, namespace, "fw-b", []byte("sealed"))).To(Succeed())
		Expect(d.Withdraw(ctx, namespace, "fw-a")).To(Succeed())
		Expect(delivered("fw-a")).To(BeNil())
		Expect(delivered("fw-b")).To(Equal([]byte("sealed")))
		for _, obj := range []client.Object{&corev1.Secret{}, &rbacv1.Role{}, &rbacv1.RoleBinding{}} {
			Expect(apierrors.IsNotFound(shoot.Get(ctx, key, obj))).To(BeTrue(), "%T", obj)
		}
		other := client.ObjectKey{Namespace: constants.ShootNamespace, Name: firewallv1alpha1.DeliveredBootstrapSecretName("fw-b")}
		Expect(shoot.Get(ctx, other, &corev1.Secret{})).To(Succeed(), "another firewall's delivery stays")
		Expect(shoot.Get(ctx, client.ObjectKey{Name: constants.ShootNamespace}, &corev1.Namespace{})).To(Succeed())

		Expect(d.Withdraw(ctx, namespace, "fw-a")).To(Succeed())
	})
})
