package credentials_test

import (
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/credentials"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/bootstrap"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/seal"
)

// The hostile-CSR table, run against the real kube-apiserver and
// kube-controller-manager (csrapproving, csrsigning) with the ClusterRoleBindings
// every Gardener shoot, so every ManagedSeed, carries for system:bootstrappers.
// Each row is a CSR an attacker holding a firewall credential (or none of
// ours) could send; none may be approved, let alone signed. The first row is
// the control: a bootstrap token, what firewalls booted with before, does
// become a node here, so a "never approved" below means something.
var _ = Describe("hostile CSRs", func() {
	var namespace string

	BeforeEach(func(ctx SpecContext) {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "shoot--hostile--"}}
		Expect(testClient.Create(ctx, ns)).To(Succeed())
		namespace = ns.Name
		newFirewall(ctx, namespace, "fw-a")
		newFirewall(ctx, namespace, "fw-b")
	})

	nodeCSR := func(string) request {
		return request{
			signer: certificatesv1.KubeAPIServerClientKubeletSignerName, key: ecKey(), usages: clientUsages, seconds: 600,
			subject: pkix.Name{CommonName: "system:node:evil-node", Organization: []string{"system:nodes"}},
		}
	}
	firewallCSR := func(name string) func(string) request {
		return func(ns string) request {
			return request{signer: certificatesv1.KubeAPIServerClientSignerName, subject: subjectOf(ns, name), key: ecKey(), usages: clientUsages, seconds: 600}
		}
	}
	// legit bootstraps fw-a as its agent would, which pins the agent's key.
	legit := func(ctx SpecContext, ns string) (*bootstrap.Credential, *ecdsa.PrivateKey) {
		key := ecKey()
		cred, err := bootstrap.RequestCertificate(ctx, bootConfig(ctx, ns, "fw-a"), ns, "fw-a", key, 10*time.Minute)
		ExpectWithOffset(1, err).NotTo(HaveOccurred(), "the harness must be able to pass")
		return cred, key
	}
	bootA := func(ctx SpecContext, ns string) *rest.Config { return bootConfig(ctx, ns, "fw-a") }

	DescribeTable("are never approved nor signed",
		func(ctx SpecContext, as func(SpecContext, string) *rest.Config, req func(string) request, want string) {
			cfg := as(ctx, namespace)
			name := req(namespace).create(ctx, cfg)
			if want == "" {
				Consistently(decision(ctx, name)).WithTimeout(5*time.Second).Should(BeEmpty(), "nobody may approve it")
			} else {
				Eventually(decision(ctx, name)).Should(And(HavePrefix("DENIED: "), ContainSubstring(want)))
			}
			Expect(issued(ctx, name)).To(BeFalse())
		},
		Entry("the node-identity attack: a firewall's boot token asks for system:node:evil-node", bootA, nodeCSR, ""),
		Entry("the node-identity attack with a firewall's client certificate", func(ctx SpecContext, ns string) *rest.Config {
			cred, _ := legit(ctx, ns)
			return certConfig(cred)
		}, nodeCSR, ""),
		Entry("a node subject on the kube-apiserver-client signer", bootA, func(string) request {
			r := nodeCSR("")
			r.signer = certificatesv1.KubeAPIServerClientSignerName
			return r
		}, ""),
		Entry("the firewall's subject on the kubelet signer", bootA, func(ns string) request {
			r := firewallCSR("fw-a")(ns)
			r.signer = certificatesv1.KubeAPIServerClientKubeletSignerName
			return r
		}, ""),
		Entry("another firewall's subject", bootA, firewallCSR("fw-b"), "is neither"),
		Entry("a privileged organization", bootA, func(ns string) request {
			r := firewallCSR("fw-a")(ns)
			r.subject.Organization = []string{"system:nodes"} // system:masters is refused by kube-apiserver itself
			return r
		}, "subject O must be"),
		Entry("a foreign shoot's organization", bootA, func(ns string) request {
			r := firewallCSR("fw-a")(ns)
			r.subject.Organization = []string{firewallv1alpha1.AgentGroup("shoot--other--ns")}
			return r
		}, "subject O must be"),
		Entry("subject alternative names", bootA, func(ns string) request {
			r := firewallCSR("fw-a")(ns)
			r.dnsNames = []string{"kubernetes.default.svc"}
			return r
		}, "no subject alternative names"),
		Entry("server auth usage", bootA, func(ns string) request {
			r := firewallCSR("fw-a")(ns)
			r.usages = append(r.usages, certificatesv1.UsageServerAuth)
			return r
		}, `usage "server auth" is not allowed`),
		Entry("a weak RSA key", bootA, func(ns string) request {
			r := firewallCSR("fw-a")(ns)
			k, err := rsa.GenerateKey(rand.Reader, 1024)
			Expect(err).NotTo(HaveOccurred())
			r.key = k
			return r
		}, "RSA key of 1024 bits is too weak"),
		Entry("an over-long validity", bootA, func(ns string) request {
			r := firewallCSR("fw-a")(ns)
			r.seconds = int32((48 * time.Hour).Seconds())
			return r
		}, "spec.expirationSeconds 172800 is outside"),
		Entry("a Firewall that does not exist", func(ctx SpecContext, ns string) *rest.Config {
			Expect(credentials.EnsureAgentRBAC(ctx, testClient, bootNamespace, ns, "fw-c", nil)).To(Succeed())
			return bootConfig(ctx, ns, "fw-c")
		}, firewallCSR("fw-c"), "no Firewall"),
		Entry("a paused Firewall, whose seed no longer vouches for it", func(ctx SpecContext, ns string) *rest.Config {
			annotate(ctx, ns, "fw-a", firewallv1alpha1.AnnotationPaused, "true")
			return bootA(ctx, ns)
		}, firewallCSR("fw-a"), "is paused"),
		Entry("a Firewall being deleted", func(ctx SpecContext, ns string) *rest.Config {
			fw := &firewallv1alpha1.Firewall{}
			Expect(testClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "fw-a"}, fw)).To(Succeed())
			fw.Finalizers = []string{"test/keep"}
			Expect(testClient.Update(ctx, fw)).To(Succeed())
			Expect(testClient.Delete(ctx, fw)).To(Succeed())
			return bootA(ctx, ns)
		}, firewallCSR("fw-a"), "is being deleted"),
		Entry("a stolen boot token after the agent connected: another key than the pinned one", func(ctx SpecContext, ns string) *rest.Config {
			legit(ctx, ns)
			return bootA(ctx, ns)
		}, firewallCSR("fw-a"), "is not the key"),
		Entry("the pinned key after an operator revoked it", func(ctx SpecContext, ns string) *rest.Config {
			_, key := legit(ctx, ns)
			revokedKey = key
			der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
			Expect(err).NotTo(HaveOccurred())
			annotate(ctx, ns, "fw-a", firewallv1alpha1.AnnotationRevokedAgentKey, seal.KeyID(der))
			return bootA(ctx, ns)
		}, func(ns string) request {
			r := firewallCSR("fw-a")(ns)
			r.key = revokedKey
			return r
		}, "is revoked"),
		Entry("a ServiceAccount that may create CSRs but is no firewall's boot identity", func(ctx SpecContext, ns string) *rest.Config {
			// Named like a boot ServiceAccount, but in a namespace an attacker controls.
			return tokenFor(ctx, ns, credentials.BootServiceAccountName(ns, "fw-a"), constants.AgentCSRClusterRoleName)
		}, firewallCSR("fw-a"), "is neither"),
		Entry("a boot identity without the firewallclient permission (SubjectAccessReview)", func(ctx SpecContext, ns string) *rest.Config {
			fw := &firewallv1alpha1.Firewall{
				ObjectMeta: metav1.ObjectMeta{Name: "fw-d", Namespace: ns},
				Spec:       firewallv1alpha1.FirewallSpec{Size: "s", Image: "i", Partition: "p", Project: "p", Networks: []string{"n"}},
			}
			Expect(testClient.Create(ctx, fw)).To(Succeed())
			cr := &rbacv1.ClusterRole{
				ObjectMeta: metav1.ObjectMeta{GenerateName: "csr-only-"},
				Rules:      []rbacv1.PolicyRule{{APIGroups: []string{certificatesv1.GroupName}, Resources: []string{"certificatesigningrequests"}, Verbs: []string{"create"}}},
			}
			Expect(testClient.Create(ctx, cr)).To(Succeed())
			Expect(testClient.Create(ctx, &rbacv1.ClusterRoleBinding{
				ObjectMeta: metav1.ObjectMeta{GenerateName: "csr-only-"},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: cr.Name},
				Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: credentials.BootServiceAccountName(ns, "fw-d"), Namespace: bootNamespace}},
			})).To(Succeed())
			return bootConfig(ctx, ns, "fw-d")
		}, firewallCSR("fw-d"), "may not create certificatesigningrequests/firewallclient"),
	)

	It("the control: a bootstrap token does become a node on a seed with Gardener's bindings", func(ctx SpecContext) {
		r := nodeCSR("")
		name := r.create(ctx, bootstrapTokenConfig(ctx))
		Eventually(decision(ctx, name)).Should(Equal("APPROVED"), "kube-controller-manager's csrapproving approves it")
		Eventually(func() bool { return issued(ctx, name) }).Should(BeTrue(), "and csrsigning signs it")

		csr := &certificatesv1.CertificateSigningRequest{}
		Expect(testClient.Get(ctx, client.ObjectKey{Name: name}, csr)).To(Succeed())
		keyPEM, err := bootstrap.EncodeKey(r.key.(*ecdsa.PrivateKey))
		Expect(err).NotTo(HaveOccurred())
		cfg := rest.AnonymousClientConfig(seed.Config)
		cfg.CertData, cfg.KeyData = csr.Status.Certificate, keyPEM
		cs, err := kubernetes.NewForConfig(cfg)
		Expect(err).NotTo(HaveOccurred())
		review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(review.Status.UserInfo.Username).To(Equal("system:node:evil-node"))
	})
})

// revokedKey carries the key of the revoked-key row from its setup to its request.
var revokedKey *ecdsa.PrivateKey

func annotate(ctx SpecContext, namespace, name, key, value string) {
	fw := &firewallv1alpha1.Firewall{}
	ExpectWithOffset(1, testClient.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, fw)).To(Succeed())
	patch := client.MergeFrom(fw.DeepCopy())
	if fw.Annotations == nil {
		fw.Annotations = map[string]string{}
	}
	fw.Annotations[key] = value
	ExpectWithOffset(1, testClient.Patch(ctx, fw, patch)).To(Succeed())
}

// tokenFor makes a ServiceAccount of that name in namespace, binds it to the
// ClusterRole and returns a config with a token of it.
func tokenFor(ctx SpecContext, namespace, name, clusterRole string) *rest.Config {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}
	ExpectWithOffset(1, testClient.Create(ctx, sa)).To(Succeed())
	ExpectWithOffset(1, testClient.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "intruder-"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: namespace}},
	})).To(Succeed())
	cs, err := kubernetes.NewForConfig(seed.Config)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, sa.Name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)},
	}, metav1.CreateOptions{})
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	cfg := rest.AnonymousClientConfig(seed.Config)
	cfg.BearerToken = tr.Status.Token
	return cfg
}
