package credentials_test

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
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
	"sigs.k8s.io/controller-runtime/pkg/client"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/credentials"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/bootstrap"
)

var _ = Describe("Firewall agent credentials", func() {
	var namespace string

	BeforeEach(func(ctx SpecContext) {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "shoot--cred--"}}
		Expect(testClient.Create(ctx, ns)).To(Succeed())
		namespace = ns.Name
	})

	forbidden := func(err error) { ExpectWithOffset(1, apierrors.IsForbidden(err)).To(BeTrue(), "got %v", err) }

	It("bootstraps a client certificate that reaches exactly the firewall's own objects, pins its key and renews only with it", func(ctx SpecContext) {
		newFirewall(ctx, namespace, "fw-a")
		newFirewall(ctx, namespace, "fw-b")
		Expect(testClient.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "shoot-access-fw-a", Namespace: namespace}})).To(Succeed())
		Expect(testClient.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: namespace}})).To(Succeed())
		Expect(credentials.EnsureAgentRBAC(ctx, testClient, bootNamespace, namespace, "fw-a", []string{"shoot-access-fw-a"})).To(Succeed())

		key := ecKey()
		cred, err := bootstrap.RequestCertificate(ctx, bootConfig(ctx, namespace, "fw-a"), namespace, "fw-a", key, 10*time.Minute)
		Expect(err).NotTo(HaveOccurred())
		Expect(cred.Certificate.Subject.CommonName).To(Equal(firewallv1alpha1.AgentUserName(namespace, "fw-a")))
		Expect(cred.Certificate.NotAfter).To(BeTemporally("<=", time.Now().Add(11*time.Minute)))

		By("the approver pinned the key on the Firewall")
		fw := &firewallv1alpha1.Firewall{}
		Expect(testClient.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "fw-a"}, fw)).To(Succeed())
		der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
		Expect(err).NotTo(HaveOccurred())
		Expect(fw.Annotations).To(HaveKeyWithValue(firewallv1alpha1.AnnotationAgentKey, base64.StdEncoding.EncodeToString(der)))

		agent, err := client.New(certConfig(cred), client.Options{Scheme: testClient.Scheme()})
		Expect(err).NotTo(HaveOccurred())
		Expect(agent.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "fw-a"}, fw)).To(Succeed())
		patch := client.MergeFrom(fw.DeepCopy())
		fw.Status.AgentStatus = &firewallv1alpha1.AgentStatus{Version: "v1", LastRunAgainstSeed: &metav1.Time{Time: time.Now()}}
		Expect(agent.Status().Patch(ctx, fw, patch)).To(Succeed(), "the agent writes its own status")
		Expect(agent.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "shoot-access-fw-a"}, &corev1.Secret{})).To(Succeed())

		forbidden(agent.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "fw-b"}, &firewallv1alpha1.Firewall{}))
		forbidden(agent.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "other"}, &corev1.Secret{}))
		forbidden(agent.List(ctx, &corev1.SecretList{}, client.InNamespace(namespace)))
		fw.Spec.Image = "changed"
		forbidden(agent.Update(ctx, fw))

		By("the certificate reads its own CSR and no other, and lists none")
		Expect(agent.Get(ctx, client.ObjectKey{Name: firewallv1alpha1.CSRName(namespace, "fw-a")}, &certificatesv1.CertificateSigningRequest{})).To(Succeed())
		forbidden(agent.Get(ctx, client.ObjectKey{Name: firewallv1alpha1.CSRName(namespace, "fw-b")}, &certificatesv1.CertificateSigningRequest{}))
		forbidden(agent.List(ctx, &certificatesv1.CertificateSigningRequestList{}))

		By("the agent may not write the pinned key: a status write cannot touch annotations")
		Expect(agent.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "fw-a"}, fw)).To(Succeed())
		fw.Annotations[firewallv1alpha1.AnnotationAgentKey] = "forged"
		Expect(agent.Status().Update(ctx, fw)).To(Succeed())
		Expect(testClient.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "fw-a"}, fw)).To(Succeed())
		Expect(fw.Annotations[firewallv1alpha1.AnnotationAgentKey]).To(Equal(base64.StdEncoding.EncodeToString(der)))

		By("renewing with the current certificate and the same key")
		renewed, err := bootstrap.RequestCertificate(ctx, certConfig(cred), namespace, "fw-a", key, 10*time.Minute)
		Expect(err).NotTo(HaveOccurred())
		Expect(renewed.Certificate.SerialNumber).NotTo(Equal(cred.Certificate.SerialNumber))
		Expect(bootstrap.RenewAt(renewed.Certificate)).To(And(
			BeTemporally(">=", renewed.Certificate.NotBefore.Add(renewed.Certificate.NotAfter.Sub(renewed.Certificate.NotBefore)*7/10)),
			BeTemporally("<=", renewed.Certificate.NotBefore.Add(renewed.Certificate.NotAfter.Sub(renewed.Certificate.NotBefore)*9/10))))

		By("a stolen certificate without its key cannot renew itself: a new key is refused")
		_, err = bootstrap.RequestCertificate(ctx, certConfig(cred), namespace, "fw-a", ecKey(), 10*time.Minute)
		Expect(err).To(MatchError(ContainSubstring("is not the key")))

		By("deleting the credentials: the boot token authenticates no more, the certificate is authorized for nothing")
		boot := bootConfig(ctx, namespace, "fw-a")
		Expect(credentials.DeleteBootCredentials(ctx, testClient, bootNamespace, namespace, "")).To(Succeed())
		Expect(credentials.DeleteAgentRBAC(ctx, testClient, namespace, "")).To(Succeed())
		cs, err := kubernetes.NewForConfig(boot)
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() error {
			_, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
			return err
		}).Should(Satisfy(apierrors.IsUnauthorized))
		Eventually(func() bool {
			return apierrors.IsForbidden(agent.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "fw-a"}, &firewallv1alpha1.Firewall{}))
		}).Should(BeTrue())
		By("nothing of the firewalls' RBAC is left: the garbage collector took each firewall's own ClusterRole with its binding")
		Eventually(func() []rbacv1.ClusterRole {
			list := &rbacv1.ClusterRoleList{}
			Expect(testClient.List(ctx, list, client.MatchingLabels{"firewall.metal-firewall.io/namespace": namespace})).To(Succeed())
			return list.Items
		}).Should(BeEmpty())
	})

	It("lets the boot token read its own CSR and nothing else, and list no CSR", func(ctx SpecContext) {
		newFirewall(ctx, namespace, "fw-a")
		boot, err := client.New(bootConfig(ctx, namespace, "fw-a"), client.Options{Scheme: testClient.Scheme()})
		Expect(err).NotTo(HaveOccurred())
		forbidden(boot.List(ctx, &certificatesv1.CertificateSigningRequestList{}))
		forbidden(boot.Get(ctx, client.ObjectKey{Name: firewallv1alpha1.CSRName(namespace, "fw-b")}, &certificatesv1.CertificateSigningRequest{}))
		forbidden(boot.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "fw-a"}, &firewallv1alpha1.Firewall{}))
		forbidden(boot.List(ctx, &corev1.SecretList{}, client.InNamespace(bootNamespace)))
		err = boot.Get(ctx, client.ObjectKey{Name: firewallv1alpha1.CSRName(namespace, "fw-a")}, &certificatesv1.CertificateSigningRequest{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "allowed, and not there yet: %v", err)
	})

	It("mints boot tokens that expire within the hour and dies with its ServiceAccount", func(ctx SpecContext) {
		tok, err := credentials.EnsureBootCredential(ctx, testClient, bootNamespace, namespace, "fw-a", time.Hour)
		Expect(err).NotTo(HaveOccurred())
		Expect(tok.Expiration).To(BeTemporally("<=", time.Now().Add(time.Hour+time.Minute)))
		_, err = credentials.EnsureBootCredential(ctx, testClient, bootNamespace, namespace, "fw-a", 2*time.Hour)
		Expect(err).To(MatchError(ContainSubstring("must be within")))

		sa := &corev1.ServiceAccount{}
		Expect(testClient.Get(ctx, client.ObjectKey{Namespace: bootNamespace, Name: credentials.BootServiceAccountName(namespace, "fw-a")}, sa)).To(Succeed())
		Expect(*sa.AutomountServiceAccountToken).To(BeFalse())
	})

	It("leaves CSRs for other identities alone", func(ctx SpecContext) {
		name := request{signer: certificatesv1.KubeAPIServerClientSignerName, subject: pkix.Name{CommonName: "someone-else"}, key: ecKey(), usages: clientUsages, seconds: 600}.create(ctx, seed.Config)
		Consistently(decision(ctx, name)).WithTimeout(3 * time.Second).Should(BeEmpty())
	})
})
