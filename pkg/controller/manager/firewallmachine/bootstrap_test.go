package firewallmachine_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	agentconfigv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/v1alpha1"
	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/firewallmachine"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/credentials"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/seal"
)

var _ = Describe("Reconciler with bootstrap credentials", func() {
	const tokenValidity = 30 * time.Minute
	var (
		bootstrap *firewallmachine.Bootstrap
		deliver   *delivery
	)
	BeforeEach(func() {
		deliver = &delivery{}
		bootstrap = &firewallmachine.Bootstrap{Server: "https://api.seed.example:443", CAData: []byte("seed-ca"), Namespace: bootNamespace,
			TokenValidity: tokenValidity, SecretNames: []string{"shoot-access"}, Delivery: deliver}
	})

	bootSA := client.ObjectKey{Namespace: bootNamespace, Name: credentials.BootServiceAccountName(namespace, fwName)}
	// serviceAccounts are the boot ServiceAccounts of the firewall.
	serviceAccounts := func(e *env) []corev1.ServiceAccount {
		GinkgoHelper()
		list := &corev1.ServiceAccountList{}
		Expect(e.c.List(e.ctx, list, client.InNamespace(bootNamespace),
			client.MatchingLabels{constants.LabelFirewallNamespace: namespace, constants.LabelFirewallName: fwName})).To(Succeed())
		return list.Items
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
	newKey := func() *ecdsa.PrivateKey {
		GinkgoHelper()
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		Expect(err).NotTo(HaveOccurred())
		return key
	}
	// pin is the annotation value the CSR approver writes for key.
	pin := func(key *ecdsa.PrivateKey) string {
		GinkgoHelper()
		der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
		Expect(err).NotTo(HaveOccurred())
		return base64.StdEncoding.EncodeToString(der)
	}
	// restoredEnv is a Firewall restored after a control plane migration,
	// with annotations, whose machine (allocated by the old seed) is older.
	restoredEnv := func(annotations map[string]string) *env {
		GinkgoHelper()
		restored := newFirewall()
		restored.Annotations = annotations
		restored.CreationTimestamp = metav1.NewTime(time.Now().Add(time.Minute).Truncate(time.Second))
		e := newEnv(restored, bootstrap)
		_, err := e.provider.Create(e.ctx, newFirewall(), nil)
		Expect(err).NotTo(HaveOccurred())
		return e
	}

	It("mints a boot token right before creating the machine, puts its kubeconfig into the userdata and grants the RBAC", func() {
		e := newEnv(newFirewall(), bootstrap)
		e.reconcile()
		Expect(serviceAccounts(e)).To(ConsistOf(HaveField("ObjectMeta.Name", bootSA.Name)))
		Expect(e.tokens).To(HaveLen(1))
		Expect(e.tokens[0].serviceAccount).To(Equal(bootSA))
		Expect(e.tokens[0].expirationSeconds).To(BeEquivalentTo(tokenValidity/time.Second), "its life starts with the machine")
		Expect(e.tokens[0].machinesBefore).To(BeZero(), "minted before the machine")
		Expect(e.provider.Created()).To(Equal(1))

		files := e.provider.Userdata(e.provider.IDs()[0])
		Expect(files).To(ContainElement(And(HaveField("Path", agentconfigv1alpha1.BootstrapKubeconfigPath), HaveField("Mode", BeEquivalentTo(0o600)))))
		for _, f := range files {
			if f.Path == agentconfigv1alpha1.BootstrapKubeconfigPath {
				Expect(kubeconfigToken(f.Content)).To(Equal(e.tokens[0].token))
			}
		}
		Expect(roleExists(e)).To(BeTrue())
		Expect(e.c.Get(e.ctx, client.ObjectKey{Namespace: namespace, Name: rbacName}, &rbacv1.RoleBinding{})).To(Succeed())
		crb := &rbacv1.ClusterRoleBinding{}
		Expect(e.c.Get(e.ctx, client.ObjectKey{Name: rbacName}, crb)).To(Succeed())
		Expect(crb.Subjects).To(ContainElement(rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: bootSA.Name, Namespace: bootNamespace}),
			"the RBAC names the ServiceAccount the token is of")
		Expect(e.c.Get(e.ctx, client.ObjectKey{Name: rbacName + ":csr"}, &rbacv1.ClusterRoleBinding{})).To(Succeed())

		By("minting none more while the machine exists, and delivering nothing for a machine of this seed")
		e.clk.Step(time.Minute)
		e.reconcile()
		Expect(e.tokens).To(HaveLen(1))
		Expect(deliver.delivered).To(BeEmpty())
	})

	It("creates no machine and no ServiceAccount when the seed grants the boot identity anything dangerous, and says why", func() {
		e := newEnv(newFirewall(), bootstrap)
		e.allow = func(a *authorizationv1.ResourceAttributes) bool { return a.Subresource == "nodeclient" }
		Expect(e.reconcile()).To(Equal(reconcile.Result{RequeueAfter: time.Minute}))
		Expect(e.provider.Created()).To(BeZero())
		Expect(serviceAccounts(e)).To(BeEmpty())
		Expect(e.tokens).To(BeEmpty())
		Expect(meta.FindStatusCondition(e.firewall().Status.Conditions, firewallv1alpha1.ConditionCreated)).To(HaveValue(And(
			HaveField("Status", metav1.ConditionFalse), HaveField("Reason", "UnsafeBootIdentity"),
			HaveField("Message", And(ContainSubstring(credentials.BootUser(bootNamespace, namespace, fwName)),
				ContainSubstring("create certificatesigningrequests/nodeclient.certificates.k8s.io"),
				ContainSubstring("system:serviceaccounts:"+bootNamespace))),
		)))

		By("creating it once the seed no longer grants it")
		e.allow = nil
		e.reconcile()
		Expect(e.provider.Created()).To(Equal(1))
		Expect(e.tokens).To(HaveLen(1))
		Expect(meta.IsStatusConditionTrue(e.firewall().Status.Conditions, firewallv1alpha1.ConditionCreated)).To(BeTrue())
	})

	It("names at most ten permissions of a seed that grants everything", func() {
		e := newEnv(newFirewall(), bootstrap)
		e.allow = func(*authorizationv1.ResourceAttributes) bool { return true }
		e.reconcile()
		c := meta.FindStatusCondition(e.firewall().Status.Conditions, firewallv1alpha1.ConditionCreated)
		Expect(c).NotTo(BeNil())
		Expect(c.Message).To(MatchRegexp(`and \d+ more; remove the RBAC`))
		named := c.Message[strings.Index(c.Message, " may ")+len(" may ") : strings.LastIndex(c.Message, " and ")]
		Expect(strings.Split(named, ", ")).To(HaveLen(10), named)
		Expect(e.provider.Created()).To(BeZero())
	})

	It("deletes the boot ServiceAccount once the agent is connected, before the status says so", func() {
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
		Expect(serviceAccounts(e)).To(HaveLen(1))
		Expect(e.firewall().Status.Conditions).NotTo(ContainElement(And(
			HaveField("Type", firewallv1alpha1.ConditionSeedConnected), HaveField("Status", metav1.ConditionTrue))),
			"a failure is retried, not forgotten")

		failDeletes = false
		e.reconcile()
		Expect(serviceAccounts(e)).To(BeEmpty(), "every token of it is revoked")
		Expect(e.firewall().Status.Phase).To(Equal(firewallv1alpha1.FirewallPhaseRunning))
		Expect(e.tokens).To(HaveLen(1), "none minted for a connected agent")
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

	It("removes the boot ServiceAccount and the RBAC once the machine is released", func() {
		e := newEnv(newFirewall(), bootstrap)
		e.reconcile()
		Expect(e.c.Delete(e.ctx, e.firewall())).To(Succeed())
		e.reconcile()
		Expect(apierrors.IsNotFound(e.c.Get(e.ctx, client.ObjectKeyFromObject(e.fw), &firewallv1alpha1.Firewall{}))).To(BeTrue())
		Expect(serviceAccounts(e)).To(BeEmpty())
		Expect(roleExists(e)).To(BeFalse())
		for _, name := range []string{rbacName, rbacName + ":csr"} {
			Expect(apierrors.IsNotFound(e.c.Get(e.ctx, client.ObjectKey{Name: name}, &rbacv1.ClusterRoleBinding{}))).To(BeTrue(), name)
		}
		Expect(apierrors.IsNotFound(e.c.Get(e.ctx, client.ObjectKey{Namespace: namespace, Name: rbacName}, &rbacv1.RoleBinding{}))).To(BeTrue())
	})

	// opened verifies a delivered box with the Firewall's delivery key and
	// opens it with the agent's key.
	opened := func(e *env, agentKey *ecdsa.PrivateKey, box []byte) (*seal.Delivery, []byte) {
		GinkgoHelper()
		pub, err := base64.StdEncoding.DecodeString(e.firewall().Annotations[firewallv1alpha1.AnnotationDeliveryKey])
		Expect(err).NotTo(HaveOccurred())
		d, err := seal.Verify(pub, namespace, fwName, box)
		Expect(err).NotTo(HaveOccurred())
		kubeconfig, err := seal.Open(agentKey, namespace, fwName, d.Sealed)
		Expect(err).NotTo(HaveOccurred())
		return d, kubeconfig
	}
	deliveryKeySecret := func(e *env) *corev1.Secret {
		GinkgoHelper()
		secret := &corev1.Secret{}
		Expect(e.c.Get(e.ctx, client.ObjectKey{Namespace: namespace, Name: firewallv1alpha1.DeliveryKeySecretName(fwName)}, secret)).To(Succeed())
		return secret
	}

	It("gives the Firewall a delivery key before its machine: the private half in a seed Secret, the public half on the Firewall; it keeps it and deletes it with the Firewall", func() {
		e := newEnv(newFirewall(), bootstrap)
		e.reconcile()
		pinned := e.firewall().Annotations[firewallv1alpha1.AnnotationDeliveryKey]
		Expect(pinned).NotTo(BeEmpty())
		secret := deliveryKeySecret(e)
		parsed, err := x509.ParsePKCS8PrivateKey(secret.Data[firewallv1alpha1.DeliveryKeySecretKey])
		Expect(err).NotTo(HaveOccurred())
		der, err := x509.MarshalPKIXPublicKey(&parsed.(*ecdsa.PrivateKey).PublicKey)
		Expect(err).NotTo(HaveOccurred())
		Expect(base64.StdEncoding.EncodeToString(der)).To(Equal(pinned))

		e.clk.Step(time.Minute)
		e.reconcile()
		Expect(e.firewall().Annotations[firewallv1alpha1.AnnotationDeliveryKey]).To(Equal(pinned))
		Expect(deliveryKeySecret(e).Data).To(Equal(secret.Data))

		Expect(e.c.Delete(e.ctx, e.firewall())).To(Succeed())
		e.reconcile()
		Expect(apierrors.IsNotFound(e.c.Get(e.ctx, client.ObjectKeyFromObject(secret), &corev1.Secret{}))).To(BeTrue())
	})

	It("delivers a kubeconfig sealed to the pinned key and signed with the delivery key through the shoot to a machine older than its Firewall, and withdraws it once connected", func() {
		key := newKey()
		e := restoredEnv(map[string]string{firewallv1alpha1.AnnotationAgentKey: pin(key)})

		e.reconcile()
		Expect(e.provider.Created()).To(Equal(1), "the restored machine is kept")
		Expect(deliver.delivered).To(HaveLen(1))
		Expect(e.tokens).To(HaveLen(1))
		d, kubeconfig := opened(e, key, deliver.delivered[0])
		Expect(d.Expires).To(BeTemporally("==", e.tokens[0].expires))
		Expect(d.Generation).To(Equal(e.clk.Now().UnixNano()))
		Expect(kubeconfigToken(kubeconfig)).To(Equal(e.tokens[0].token))
		_, err := seal.Open(newKey(), namespace, fwName, d.Sealed)
		Expect(err).To(HaveOccurred(), "no other key opens it")
		Expect(string(deliver.delivered[0])).NotTo(ContainSubstring(e.tokens[0].token))

		e.heartbeat()
		e.reconcile()
		Expect(deliver.withdrawn).To(Equal(1))
		Expect(serviceAccounts(e)).To(BeEmpty())
		Expect(deliveryKeySecret(e).Data).To(HaveKey(firewallv1alpha1.DeliveryKeySecretKey))
		Expect(deliveryKeySecret(e).Data).NotTo(HaveKey("delivery"), "the seed forgets the withdrawn delivery: its token is revoked")
		e.reconcile()
		Expect(deliver.delivered).To(HaveLen(1), "nothing more once the agent holds its certificate")
		Expect(deliver.withdrawn).To(Equal(1))
	})

	It("delivers again only once less than half the token's validity is left, at a higher generation", func() {
		key := newKey()
		e := restoredEnv(map[string]string{firewallv1alpha1.AnnotationAgentKey: pin(key)})
		e.reconcile()
		Expect(deliver.delivered).To(HaveLen(1))

		e.clk.Step(tokenValidity/2 - time.Second)
		e.reconcile()
		Expect(deliver.delivered).To(HaveLen(1), "more than half is left")
		Expect(e.tokens).To(HaveLen(1), "no token minted for nothing")

		e.clk.Step(2 * time.Second)
		e.reconcile()
		Expect(deliver.delivered).To(HaveLen(2))
		Expect(e.tokens).To(HaveLen(2))
		first, _ := opened(e, key, deliver.delivered[0])
		second, _ := opened(e, key, deliver.delivered[1])
		Expect(second.Expires).To(BeTemporally("==", e.tokens[1].expires))
		Expect(second.Expires).To(BeTemporally(">", first.Expires))
		Expect(second.Generation).To(BeNumerically(">", first.Generation))
	})

	It("puts its own delivery back when the shoot's copy is changed or removed there, minting nothing: re-delivery depends on nothing the shoot writes", func() {
		e := restoredEnv(map[string]string{firewallv1alpha1.AnnotationAgentKey: pin(newKey())})
		e.reconcile()
		Expect(deliver.delivered).To(HaveLen(1))
		for _, forged := range [][]byte{[]byte(`{"version":"forged","expires":"2999-01-01T00:00:00Z"}`), nil} {
			deliver.box = forged
			e.reconcile()
			Expect(deliver.box).To(Equal(deliver.delivered[0]))
		}
		Expect(e.tokens).To(HaveLen(1))
	})

	It("delivers at a generation above the restored one, whatever this seed's clock says", func() {
		key := newKey()
		e := restoredEnv(map[string]string{firewallv1alpha1.AnnotationAgentKey: pin(key)})
		e.reconcile()
		first, _ := opened(e, key, deliver.delivered[0])

		By("a restore whose old seed's clock ran an hour ahead")
		secret := deliveryKeySecret(e)
		ahead := first.Generation + int64(time.Hour)
		secret.Data = map[string][]byte{firewallv1alpha1.DeliveryKeySecretKey: secret.Data[firewallv1alpha1.DeliveryKeySecretKey],
			firewallv1alpha1.DeliveryGenerationSecretKey: []byte(strconv.FormatInt(ahead, 10))}
		Expect(e.c.Update(e.ctx, secret)).To(Succeed())
		e.reconcile()
		Expect(deliver.delivered).To(HaveLen(2))
		second, _ := opened(e, key, deliver.delivered[1])
		Expect(second.Generation).To(Equal(ahead + 1))
	})

	It("delivers nothing and mints nothing for a restored Firewall whose delivery key did not travel, and says so", func() {
		e := restoredEnv(map[string]string{firewallv1alpha1.AnnotationAgentKey: pin(newKey()), firewallv1alpha1.AnnotationDeliveryKey: "a-key-from-the-old-seed"})
		_, err := e.r.Reconcile(e.ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(e.fw)})
		Expect(err).To(MatchError(ContainSubstring("the delivery key of Firewall " + namespace + "/" + fwName)))
		Expect(err).To(MatchError(ContainSubstring("roll the firewall")))
		Expect(deliver.delivered).To(BeEmpty())
		Expect(e.tokens).To(BeEmpty())
		Expect(e.firewall().Annotations[firewallv1alpha1.AnnotationDeliveryKey]).To(Equal("a-key-from-the-old-seed"), "no new key its agent never pinned")
	})

	DescribeTable("delivers nothing and mints nothing without a pinned key, and says which annotation is missing",
		func(annotations map[string]string) {
			e := restoredEnv(annotations)
			_, err := e.r.Reconcile(e.ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(e.fw)})
			Expect(err).To(MatchError(ContainSubstring(firewallv1alpha1.AnnotationAgentKey)))
			Expect(err).To(MatchError(ContainSubstring(namespace + "/" + fwName)))
			Expect(deliver.delivered).To(BeEmpty())
			Expect(e.tokens).To(BeEmpty())
			Expect(serviceAccounts(e)).To(BeEmpty())
			Expect(e.provider.Created()).To(Equal(1), "the restored machine is kept")
		},
		Entry("no annotation", nil),
		Entry("an empty one", map[string]string{firewallv1alpha1.AnnotationAgentKey: ""}),
		Entry("one that is no base64", map[string]string{firewallv1alpha1.AnnotationAgentKey: "not base64!"}),
	)

	It("gives the default validity when none is configured", func() {
		bootstrap.TokenValidity = 0
		e := newEnv(newFirewall(), bootstrap)
		e.reconcile()
		Expect(e.tokens).To(HaveLen(1))
		Expect(e.tokens[0].expirationSeconds).To(BeEquivalentTo(3600))
	})

	It("mints no credentials without a bootstrap configuration", func() {
		e := newEnv(newFirewall(), nil)
		e.reconcile()
		Expect(serviceAccounts(e)).To(BeEmpty())
		Expect(e.tokens).To(BeEmpty())
		Expect(roleExists(e)).To(BeFalse())
	})
})
