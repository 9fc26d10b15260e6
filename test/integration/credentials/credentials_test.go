package credentials_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509/pkix"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/credentials"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/bootstrap"
)

// csrSeconds is the validity test CSRs ask for.
var csrSeconds int32 = 600

var _ = Describe("Firewall agent credentials", func() {
	var namespace string

	newFirewall := func(ctx SpecContext, name string) {
		fw := &firewallv1alpha1.Firewall{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
			Spec:       firewallv1alpha1.FirewallSpec{Size: "s", Image: "i", Partition: "p", Project: "p", Networks: []string{"n"}},
		}
		Expect(testClient.Create(ctx, fw)).To(Succeed())
	}

	// bootstrapConfig returns a rest.Config authenticating with a fresh
	// bootstrap token of the firewall, read back from its kubeconfig.
	bootstrapConfig := func(ctx SpecContext, name string) *rest.Config {
		tok, err := credentials.EnsureBootstrapToken(ctx, testClient, namespace, name, time.Hour, time.Now())
		Expect(err).NotTo(HaveOccurred())
		kubeconfig, err := credentials.BootstrapKubeconfig(seed.Config.Host, seed.Config.CAData, tok.Token)
		Expect(err).NotTo(HaveOccurred())
		cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
		Expect(err).NotTo(HaveOccurred())
		// kube-apiserver reads bootstrap tokens from an informer: wait until it knows this one.
		cs, err := kubernetes.NewForConfig(cfg)
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() error {
			_, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
			return err
		}).WithTimeout(30 * time.Second).Should(Succeed())
		return cfg
	}

	certConfig := func(cred *bootstrap.Credential) *rest.Config {
		cfg := rest.AnonymousClientConfig(seed.Config)
		cfg.CertData, cfg.KeyData = cred.CertificatePEM, cred.KeyPEM
		return cfg
	}

	// createCSR creates a CSR as cfg and returns its name.
	createCSR := func(ctx SpecContext, cfg *rest.Config, subject pkix.Name, key any, usages []certificatesv1.KeyUsage) string {
		csrPEM, err := certutil.MakeCSR(key, &subject, nil, nil)
		Expect(err).NotTo(HaveOccurred())
		cs, err := kubernetes.NewForConfig(cfg)
		Expect(err).NotTo(HaveOccurred())
		req, err := cs.CertificatesV1().CertificateSigningRequests().Create(ctx, &certificatesv1.CertificateSigningRequest{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "firewall-"},
			Spec: certificatesv1.CertificateSigningRequestSpec{
				Request: csrPEM, SignerName: certificatesv1.KubeAPIServerClientSignerName, Usages: usages, ExpirationSeconds: ptr.To(csrSeconds),
			},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		return req.Name
	}

	deniedReason := func(ctx SpecContext, name string) func() string {
		return func() string {
			csr := &certificatesv1.CertificateSigningRequest{}
			Expect(testClient.Get(ctx, client.ObjectKey{Name: name}, csr)).To(Succeed())
			for _, c := range csr.Status.Conditions {
				if c.Type == certificatesv1.CertificateDenied {
					return c.Message
				}
				if c.Type == certificatesv1.CertificateApproved {
					return "APPROVED"
				}
			}
			return ""
		}
	}

	ecKey := func() *ecdsa.PrivateKey {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		Expect(err).NotTo(HaveOccurred())
		return key
	}
	subjectOf := func(name string) pkix.Name {
		return pkix.Name{CommonName: firewallv1alpha1.AgentUserName(namespace, name), Organization: []string{firewallv1alpha1.AgentGroup(namespace)}}
	}
	clientUsages := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}

	BeforeEach(func(ctx SpecContext) {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "shoot--cred--"}}
		Expect(testClient.Create(ctx, ns)).To(Succeed())
		namespace = ns.Name
	})

	It("bootstraps a client certificate that reaches exactly the firewall's own objects, and renews it", func(ctx SpecContext) {
		newFirewall(ctx, "fw-a")
		newFirewall(ctx, "fw-b")
		Expect(testClient.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "shoot-access-fw-a", Namespace: namespace}})).To(Succeed())
		Expect(testClient.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: namespace}})).To(Succeed())
		Expect(credentials.EnsureAgentRBAC(ctx, testClient, namespace, "fw-a", []string{"shoot-access-fw-a"})).To(Succeed())

		cred, err := bootstrap.RequestCertificate(ctx, bootstrapConfig(ctx, "fw-a"), namespace, "fw-a", 10*time.Minute)
		Expect(err).NotTo(HaveOccurred())
		Expect(cred.Certificate.Subject.CommonName).To(Equal(firewallv1alpha1.AgentUserName(namespace, "fw-a")))
		Expect(cred.Certificate.NotAfter).To(BeTemporally("<=", time.Now().Add(11*time.Minute)))

		agent, err := client.New(certConfig(cred), client.Options{Scheme: testClient.Scheme()})
		Expect(err).NotTo(HaveOccurred())
		fw := &firewallv1alpha1.Firewall{}
		Expect(agent.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "fw-a"}, fw)).To(Succeed())
		patch := client.MergeFrom(fw.DeepCopy())
		fw.Status.AgentStatus = &firewallv1alpha1.AgentStatus{Version: "v1", LastRunAgainstSeed: &metav1.Time{Time: time.Now()}}
		Expect(agent.Status().Patch(ctx, fw, patch)).To(Succeed(), "the agent writes its own status")
		Expect(agent.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "shoot-access-fw-a"}, &corev1.Secret{})).To(Succeed())

		forbidden := func(err error) { ExpectWithOffset(1, apierrors.IsForbidden(err)).To(BeTrue(), "got %v", err) }
		forbidden(agent.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "fw-b"}, &firewallv1alpha1.Firewall{}))
		forbidden(agent.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "other"}, &corev1.Secret{}))
		forbidden(agent.List(ctx, &corev1.SecretList{}, client.InNamespace(namespace)))
		fw.Spec.Image = "changed"
		forbidden(agent.Update(ctx, fw))

		By("renewing with the current certificate")
		renewed, err := bootstrap.RequestCertificate(ctx, certConfig(cred), namespace, "fw-a", 10*time.Minute)
		Expect(err).NotTo(HaveOccurred())
		Expect(renewed.Certificate.SerialNumber).NotTo(Equal(cred.Certificate.SerialNumber))
		Expect(bootstrap.RenewAt(renewed.Certificate)).To(And(
			BeTemporally(">=", renewed.Certificate.NotBefore.Add(renewed.Certificate.NotAfter.Sub(renewed.Certificate.NotBefore)*7/10)),
			BeTemporally("<=", renewed.Certificate.NotBefore.Add(renewed.Certificate.NotAfter.Sub(renewed.Certificate.NotBefore)*9/10))))

		By("deleting the credentials: the token authenticates no more, the certificate is authorized for nothing")
		Expect(credentials.DeleteBootstrapTokens(ctx, testClient, namespace, "")).To(Succeed())
		Expect(credentials.DeleteAgentRBAC(ctx, testClient, namespace, "")).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsForbidden(agent.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "fw-a"}, &firewallv1alpha1.Firewall{}))
		}).Should(BeTrue())
	})

	DescribeTable("denies requests that do not fit the firewall, naming why",
		func(ctx SpecContext, requester, cn string, mutate func(subject *pkix.Name, key *any, usages *[]certificatesv1.KeyUsage), reason string) {
			for _, n := range []string{"fw-a", "fw-b"} {
				newFirewall(ctx, n)
				Expect(credentials.EnsureAgentRBAC(ctx, testClient, namespace, n, nil)).To(Succeed())
			}
			subject, key, usages := subjectOf(cn), any(ecKey()), clientUsages
			if mutate != nil {
				mutate(&subject, &key, &usages)
			}
			name := createCSR(ctx, bootstrapConfig(ctx, requester), subject, key, usages)
			Eventually(deniedReason(ctx, name)).Should(ContainSubstring(reason))
		},
		Entry("another firewall's bootstrap token", "fw-b", "fw-a", nil, "is neither"),
		Entry("server auth usage", "fw-a", "fw-a", func(_ *pkix.Name, _ *any, u *[]certificatesv1.KeyUsage) {
			*u = append(*u, certificatesv1.UsageServerAuth)
		}, `usage "server auth" is not allowed`),
		Entry("a weak RSA key", "fw-a", "fw-a", func(_ *pkix.Name, k *any, _ *[]certificatesv1.KeyUsage) {
			rsaKey, err := rsa.GenerateKey(rand.Reader, 1024)
			Expect(err).NotTo(HaveOccurred())
			*k = rsaKey
		}, "RSA key of 1024 bits is too weak"),
		Entry("a foreign organization", "fw-a", "fw-a", func(s *pkix.Name, _ *any, _ *[]certificatesv1.KeyUsage) {
			s.Organization = []string{firewallv1alpha1.AgentGroup("shoot--other--ns")}
		}, "subject O must be"),
		Entry("a firewall that does not exist", "fw-a", "fw-c", nil, "is neither"),
	)

	It("denies a paused firewall, whose seed no longer vouches for it", func(ctx SpecContext) {
		newFirewall(ctx, "fw-a")
		Expect(credentials.EnsureAgentRBAC(ctx, testClient, namespace, "fw-a", nil)).To(Succeed())
		fw := &firewallv1alpha1.Firewall{}
		Expect(testClient.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "fw-a"}, fw)).To(Succeed())
		fw.Annotations = map[string]string{firewallv1alpha1.AnnotationPaused: "true"}
		Expect(testClient.Update(ctx, fw)).To(Succeed())
		name := createCSR(ctx, bootstrapConfig(ctx, "fw-a"), subjectOf("fw-a"), ecKey(), clientUsages)
		Eventually(deniedReason(ctx, name)).Should(ContainSubstring("is paused"))
	})

	It("denies a requester without the firewallclient permission (SubjectAccessReview)", func(ctx SpecContext) {
		newFirewall(ctx, "fw-a")
		// The bootstrap identity may create CSRs, but not the firewallclient subresource.
		cr := &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "csr-only-"},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{certificatesv1.GroupName}, Resources: []string{"certificatesigningrequests"}, Verbs: []string{"create", "get"}}},
		}
		Expect(testClient.Create(ctx, cr)).To(Succeed())
		Expect(testClient.Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "csr-only-"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: cr.Name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: firewallv1alpha1.BootstrapGroup(namespace, "fw-a")}},
		})).To(Succeed())
		name := createCSR(ctx, bootstrapConfig(ctx, "fw-a"), subjectOf("fw-a"), ecKey(), clientUsages)
		Eventually(deniedReason(ctx, name)).Should(ContainSubstring("may not create certificatesigningrequests/firewallclient"))
	})

	It("denies an over-long duration", func(ctx SpecContext) {
		newFirewall(ctx, "fw-a")
		Expect(credentials.EnsureAgentRBAC(ctx, testClient, namespace, "fw-a", nil)).To(Succeed())
		csrSeconds = int32((48 * time.Hour).Seconds())
		DeferCleanup(func() { csrSeconds = 600 })
		name := createCSR(ctx, bootstrapConfig(ctx, "fw-a"), subjectOf("fw-a"), ecKey(), clientUsages)
		Eventually(deniedReason(ctx, name)).Should(ContainSubstring("spec.expirationSeconds 172800 is outside"))
	})

	It("denies a plain service account that may create CSRs", func(ctx SpecContext) {
		newFirewall(ctx, "fw-a")
		Expect(credentials.EnsureAgentRBAC(ctx, testClient, namespace, "fw-a", nil)).To(Succeed())
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "intruder", Namespace: namespace}}
		Expect(testClient.Create(ctx, sa)).To(Succeed())
		// Even with the very ClusterRole the agents have, a service account is no firewall.
		Expect(testClient.Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "intruder-"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: constants.AgentCSRClusterRoleName},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: namespace}},
		})).To(Succeed())
		cs, err := kubernetes.NewForConfig(seed.Config)
		Expect(err).NotTo(HaveOccurred())
		tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, sa.Name, &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		cfg := rest.AnonymousClientConfig(seed.Config)
		cfg.BearerToken = tr.Status.Token
		name := createCSR(ctx, cfg, subjectOf("fw-a"), ecKey(), clientUsages)
		Eventually(deniedReason(ctx, name)).Should(ContainSubstring(`requester "system:serviceaccount:` + namespace + `:intruder" is neither`))
	})

	It("turns an expired bootstrap token away at authentication, before any CSR", func(ctx SpecContext) {
		newFirewall(ctx, "fw-a")
		Expect(credentials.EnsureAgentRBAC(ctx, testClient, namespace, "fw-a", nil)).To(Succeed())
		cfg := bootstrapConfig(ctx, "fw-a")
		// Expire it: kube-apiserver checks the expiration on every request.
		secrets := tokenSecrets(ctx, namespace)
		Expect(secrets).To(HaveLen(1))
		secrets[0].Data["expiration"] = []byte(time.Now().Add(-time.Minute).UTC().Format(time.RFC3339))
		Expect(testClient.Update(ctx, &secrets[0])).To(Succeed())
		cs, err := kubernetes.NewForConfig(cfg)
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() error {
			_, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
			return err
		}).WithTimeout(30 * time.Second).Should(Satisfy(apierrors.IsUnauthorized))
	})

	It("leaves CSRs for other identities alone", func(ctx SpecContext) {
		name := createCSR(ctx, seed.Config, pkix.Name{CommonName: "someone-else"}, ecKey(), clientUsages)
		Consistently(deniedReason(ctx, name)).WithTimeout(3 * time.Second).Should(BeEmpty())
	})

	It("keeps a bootstrap token until half its validity is used, then mints a new one and removes expired ones", func(ctx SpecContext) {
		now := time.Now()
		first, err := credentials.EnsureBootstrapToken(ctx, testClient, namespace, "fw-a", time.Hour, now)
		Expect(err).NotTo(HaveOccurred())
		again, err := credentials.EnsureBootstrapToken(ctx, testClient, namespace, "fw-a", time.Hour, now.Add(20*time.Minute))
		Expect(err).NotTo(HaveOccurred())
		Expect(again.Token).To(Equal(first.Token))

		rotated, err := credentials.EnsureBootstrapToken(ctx, testClient, namespace, "fw-a", time.Hour, now.Add(40*time.Minute))
		Expect(err).NotTo(HaveOccurred())
		Expect(rotated.Token).NotTo(Equal(first.Token))
		Expect(tokenSecrets(ctx, namespace)).To(HaveLen(2), "the old token stays while it is valid")

		_, err = credentials.EnsureBootstrapToken(ctx, testClient, namespace, "fw-a", time.Hour, now.Add(70*time.Minute))
		Expect(err).NotTo(HaveOccurred())
		Expect(tokenSecrets(ctx, namespace)).To(HaveLen(2), "the expired one went, a fresh one came")

		_, err = credentials.EnsureBootstrapToken(ctx, testClient, namespace, "fw-a", 2*time.Hour, now)
		Expect(err).To(MatchError(ContainSubstring("must be within")))
	})
})

func tokenSecrets(ctx SpecContext, namespace string) []corev1.Secret {
	list := &corev1.SecretList{}
	Expect(testClient.List(ctx, list, client.InNamespace(metav1.NamespaceSystem), client.MatchingLabels{constants.LabelFirewallNamespace: namespace})).To(Succeed())
	return list.Items
}
