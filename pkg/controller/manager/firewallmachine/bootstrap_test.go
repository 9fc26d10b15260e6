package firewallmachine_test

import (
	"context"
	"errors"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	bootstraptokenapi "k8s.io/cluster-bootstrap/token/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	agentconfigv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/v1alpha1"
	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/firewallmachine"
)

var _ = Describe("Reconciler with bootstrap credentials", func() {
	const tokenValidity = 30 * time.Minute
	var (
		bootstrap *firewallmachine.Bootstrap
		deliver   *delivery
	)
	BeforeEach(func() {
		deliver = &delivery{}
		bootstrap = &firewallmachine.Bootstrap{Server: "https://api.seed.example:443", CAData: []byte("seed-ca"),
			TokenValidity: tokenValidity, SecretNames: []string{"shoot-access"}, Delivery: deliver}
	})

	tokens := func(e *env) []corev1.Secret {
		GinkgoHelper()
		list := &corev1.SecretList{}
		Expect(e.c.List(e.ctx, list, client.InNamespace(metav1.NamespaceSystem),
			client.MatchingLabels{constants.LabelFirewallNamespace: namespace, constants.LabelFirewallName: fwName})).To(Succeed())
		return list.Items
	}
	tokenOf := func(s corev1.Secret) string {
		return string(s.Data[bootstraptokenapi.BootstrapTokenIDKey]) + "." + string(s.Data[bootstraptokenapi.BootstrapTokenSecretKey])
	}
	// kubeconfigToken returns the token of a bootstrap kubeconfig, after
	// checking that it points at the seed.
	kubeconfigToken := func(kubeconfig []byte) string {
		GinkgoHelper()
		cfg, err := clientcmd.Load(kubeconfig)
		Expect(err).NotTo(HaveOccurred())
		cluster := cfg.Clusters[cfg.Contexts[cfg.CurrentContext].Cluster]
		Expect(cluster.Server).To(Equal(bootstrap.Server))
		Expect(cluster.CertificateAuthorityData).To(Equal(bootstrap.CAData))
		return cfg.AuthInfos[cfg.Contexts[cfg.CurrentContext].AuthInfo].Token
	}
	rbacName := firewallv1alpha1.AgentUserName(namespace, fwName)
	roleExists := func(e *env) bool {
		GinkgoHelper()
		err := e.c.Get(e.ctx, client.ObjectKey{Namespace: namespace, Name: rbacName}, &rbacv1.Role{})
		Expect(client.IgnoreNotFound(err)).To(Succeed())
		return err == nil
	}

	It("mints a token right before creating the machine, puts its kubeconfig into the userdata and grants the RBAC", func() {
		e := newEnv(newFirewall(), bootstrap)
		e.reconcile()
		Expect(tokens(e)).To(HaveLen(1))
		token := tokens(e)[0]
		Expect(token.Data).To(HaveKeyWithValue(bootstraptokenapi.BootstrapTokenExpirationKey,
			[]byte(e.clk.Now().Add(tokenValidity).UTC().Format(time.RFC3339))), "its life starts with the machine")
		Expect(token.Data).To(HaveKeyWithValue(bootstraptokenapi.BootstrapTokenExtraGroupsKey, []byte(firewallv1alpha1.BootstrapGroup(namespace, fwName))))

		files := e.provider.Userdata(e.provider.IDs()[0])
		Expect(files).To(ContainElement(And(HaveField("Path", agentconfigv1alpha1.BootstrapKubeconfigPath), HaveField("Mode", BeEquivalentTo(0o600)))))
		for _, f := range files {
			if f.Path == agentconfigv1alpha1.BootstrapKubeconfigPath {
				Expect(kubeconfigToken(f.Content)).To(Equal(tokenOf(token)))
			}
		}
		Expect(roleExists(e)).To(BeTrue())
		Expect(e.c.Get(e.ctx, client.ObjectKey{Namespace: namespace, Name: rbacName}, &rbacv1.RoleBinding{})).To(Succeed())
		Expect(e.c.Get(e.ctx, client.ObjectKey{Name: rbacName}, &rbacv1.ClusterRoleBinding{})).To(Succeed())

		By("minting none more while the machine exists, and delivering nothing for a machine of this seed")
		e.clk.Step(time.Minute)
		e.reconcile()
		Expect(tokens(e)).To(HaveLen(1))
		Expect(deliver.delivered).To(BeEmpty())
	})

	It("deletes the tokens once the agent is connected, before the status says so", func() {
		e := newEnv(newFirewall(), bootstrap)
		e.reconcile()
		failDeletes := true
		e.r.SetCredentialsClient(interceptor.NewClient(e.c.(client.WithWatch), interceptor.Funcs{
			Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
				if failDeletes {
					return errors.New("injected")
				}
				return c.Delete(ctx, obj, opts...)
			},
		}))
		e.heartbeat()
		_, err := e.r.Reconcile(e.ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(e.fw)})
		Expect(err).To(MatchError(ContainSubstring("injected")))
		Expect(tokens(e)).To(HaveLen(1))
		Expect(e.firewall().Status.Conditions).NotTo(ContainElement(And(
			HaveField("Type", firewallv1alpha1.ConditionSeedConnected), HaveField("Status", metav1.ConditionTrue))),
			"a failure is retried, not forgotten")

		failDeletes = false
		e.reconcile()
		Expect(tokens(e)).To(BeEmpty())
		Expect(e.firewall().Status.Phase).To(Equal(firewallv1alpha1.FirewallPhaseRunning))
	})

	It("writes the RBAC when the Firewall changes, not on every heartbeat", func() {
		e := newEnv(newFirewall(), bootstrap)
		e.reconcile()
		Expect(e.c.Delete(e.ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: rbacName}})).To(Succeed())
		e.heartbeat()
		e.reconcile()
		Expect(roleExists(e)).To(BeFalse())

		e.update(func(fw *firewallv1alpha1.Firewall) { fw.Generation++ }) // a spec change, as kube-apiserver counts it
		e.reconcile()
		Expect(roleExists(e)).To(BeTrue())
	})

	It("removes the tokens and the RBAC once the machine is released", func() {
		e := newEnv(newFirewall(), bootstrap)
		e.reconcile()
		Expect(e.c.Delete(e.ctx, e.firewall())).To(Succeed())
		e.reconcile()
		Expect(apierrors.IsNotFound(e.c.Get(e.ctx, client.ObjectKeyFromObject(e.fw), &firewallv1alpha1.Firewall{}))).To(BeTrue())
		Expect(tokens(e)).To(BeEmpty())
		Expect(roleExists(e)).To(BeFalse())
		Expect(apierrors.IsNotFound(e.c.Get(e.ctx, client.ObjectKey{Name: rbacName}, &rbacv1.ClusterRoleBinding{}))).To(BeTrue())
		Expect(apierrors.IsNotFound(e.c.Get(e.ctx, client.ObjectKey{Namespace: namespace, Name: rbacName}, &rbacv1.RoleBinding{}))).To(BeTrue())
	})

	It("delivers a bootstrap kubeconfig through the shoot to a machine older than its Firewall, and withdraws it once connected", func() {
		restored := newFirewall()
		// The Firewall object is restored after its machine was allocated.
		restored.CreationTimestamp = metav1.NewTime(time.Now().Add(time.Minute).Truncate(time.Second))
		e := newEnv(restored, bootstrap)
		_, err := e.provider.Create(e.ctx, newFirewall(), nil)
		Expect(err).NotTo(HaveOccurred())

		e.reconcile()
		Expect(e.provider.Created).To(Equal(1), "the restored machine is kept")
		Expect(deliver.delivered).To(HaveLen(1))
		Expect(tokens(e)).To(HaveLen(1))
		Expect(kubeconfigToken(deliver.delivered[0])).To(Equal(tokenOf(tokens(e)[0])))

		e.heartbeat()
		e.reconcile()
		Expect(deliver.withdrawn).To(Equal(1))
		Expect(tokens(e)).To(BeEmpty())
		e.reconcile()
		Expect(deliver.delivered).To(HaveLen(1), "nothing more once the agent holds its certificate")
		Expect(deliver.withdrawn).To(Equal(1))
	})

	It("gives the default validity when none is configured", func() {
		bootstrap.TokenValidity = 0
		e := newEnv(newFirewall(), bootstrap)
		e.reconcile()
		Expect(tokens(e)).To(ConsistOf(HaveField("Data", HaveKeyWithValue(bootstraptokenapi.BootstrapTokenExpirationKey,
			[]byte(e.clk.Now().Add(time.Hour).UTC().Format(time.RFC3339))))))
	})

	It("mints no credentials without a bootstrap configuration", func() {
		e := newEnv(newFirewall(), nil)
		e.reconcile()
		Expect(tokens(e)).To(BeEmpty())
		Expect(roleExists(e)).To(BeFalse())
	})
})
