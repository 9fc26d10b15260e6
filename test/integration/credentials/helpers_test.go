package credentials_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509/pkix"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	certutil "k8s.io/client-go/util/cert"
	bootstraptokenapi "k8s.io/cluster-bootstrap/token/api"
	bootstraptokenutil "k8s.io/cluster-bootstrap/token/util"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/credentials"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/bootstrap"
)

var clientUsages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}

func newFirewall(ctx SpecContext, namespace, name string) {
	fw := &firewallv1alpha1.Firewall{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec:       firewallv1alpha1.FirewallSpec{Size: "s", Image: "i", Partition: "p", Project: "p", Networks: []string{"n"}},
	}
	ExpectWithOffset(1, testClient.Create(ctx, fw)).To(Succeed())
	ExpectWithOffset(1, credentials.EnsureAgentRBAC(ctx, testClient, bootNamespace, namespace, name, nil)).To(Succeed())
}

// bootConfig authenticates with a fresh boot token of the firewall, read back
// from the kubeconfig the machine would get.
func bootConfig(ctx SpecContext, namespace, name string) *rest.Config {
	tok, err := credentials.EnsureBootCredential(ctx, testClient, bootNamespace, namespace, name, 10*time.Minute)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	kubeconfig, err := credentials.BootstrapKubeconfig(seed.Config.Host, seed.Config.CAData, tok.Token)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return cfg
}

// bootstrapTokenConfig authenticates with a classic bootstrap token (group
// system:bootstrappers): what firewalls booted with before, kept as the
// control that shows the attack is real on this control plane.
func bootstrapTokenConfig(ctx SpecContext) *rest.Config {
	token, err := bootstraptokenutil.GenerateBootstrapToken()
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	id, secret := token[:6], token[7:]
	ExpectWithOffset(1, testClient.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: bootstraptokenutil.BootstrapTokenSecretName(id), Namespace: metav1.NamespaceSystem},
		Type:       bootstraptokenapi.SecretTypeBootstrapToken,
		StringData: map[string]string{
			bootstraptokenapi.BootstrapTokenIDKey: id, bootstraptokenapi.BootstrapTokenSecretKey: secret,
			bootstraptokenapi.BootstrapTokenExpirationKey:       time.Now().Add(time.Hour).UTC().Format(time.RFC3339),
			bootstraptokenapi.BootstrapTokenUsageAuthentication: "true",
		},
	})).To(Succeed())
	cfg := rest.AnonymousClientConfig(seed.Config)
	cfg.BearerToken = token
	// kube-apiserver reads bootstrap tokens from an informer: wait until it knows this one.
	cs, err := kubernetes.NewForConfig(cfg)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	EventuallyWithOffset(1, func() error {
		_, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		return err
	}).Should(Succeed())
	return cfg
}

func certConfig(cred *bootstrap.Credential) *rest.Config {
	cfg := rest.AnonymousClientConfig(seed.Config)
	cfg.CertData, cfg.KeyData = cred.CertificatePEM, cred.KeyPEM
	return cfg
}

func ecKey() *ecdsa.PrivateKey {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return key
}

func subjectOf(namespace, name string) pkix.Name {
	return pkix.Name{CommonName: firewallv1alpha1.AgentUserName(namespace, name), Organization: []string{firewallv1alpha1.AgentGroup(namespace)}}
}

// request is one CSR as an attacker or an agent would send it.
type request struct {
	signer   string
	subject  pkix.Name
	key      any
	usages   []certificatesv1.KeyUsage
	seconds  int32
	dnsNames []string
	csrName  string
}

// create creates the CSR as cfg and returns its name. Unless the request
// names one, it takes the name the requester may use (a firewall identity's
// one CSR name, which the admission policy insists on), replacing an earlier
// one as the agent does.
func (r request) create(ctx SpecContext, cfg *rest.Config) string {
	GinkgoHelper()
	csrPEM, err := certutil.MakeCSR(r.key, &r.subject, r.dnsNames, nil)
	Expect(err).NotTo(HaveOccurred())
	cs, err := kubernetes.NewForConfig(cfg)
	Expect(err).NotTo(HaveOccurred())
	meta := metav1.ObjectMeta{Name: r.csrName}
	if meta.Name == "" {
		meta.Name = ownCSRName(ctx, cs)
	}
	if meta.Name == "" {
		meta.GenerateName = "hostile-"
	}
	csr := &certificatesv1.CertificateSigningRequest{
		ObjectMeta: meta,
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request: csrPEM, SignerName: r.signer, Usages: r.usages, ExpirationSeconds: ptr.To(r.seconds),
		},
	}
	api := cs.CertificatesV1().CertificateSigningRequests()
	req, err := api.Create(ctx, csr, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		Expect(api.Delete(ctx, meta.Name, metav1.DeleteOptions{})).To(Succeed())
		req, err = api.Create(ctx, csr, metav1.CreateOptions{})
	}
	Expect(err).NotTo(HaveOccurred())
	return req.Name
}

// ownCSRName is the one CSR name of the firewall identity cs authenticates
// as, "" for any other identity.
func ownCSRName(ctx SpecContext, cs kubernetes.Interface) string {
	GinkgoHelper()
	review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	user := review.Status.UserInfo.Username
	if ns, name, err := firewallv1alpha1.ParseAgentUserName(user); err == nil {
		return firewallv1alpha1.CSRName(ns, name)
	}
	if rest, ok := strings.CutPrefix(user, serviceaccount.MakeUsername(bootNamespace, "firewall-boot.")); ok {
		return "firewall." + rest
	}
	return ""
}

// decision is how the CSR stands: "APPROVED", "DENIED: <reason>" or "" (undecided).
func decision(ctx SpecContext, name string) func() string {
	return func() string {
		csr := &certificatesv1.CertificateSigningRequest{}
		ExpectWithOffset(1, testClient.Get(ctx, client.ObjectKey{Name: name}, csr)).To(Succeed())
		for _, c := range csr.Status.Conditions {
			switch c.Type {
			case certificatesv1.CertificateDenied:
				return "DENIED: " + c.Message
			case certificatesv1.CertificateApproved:
				return "APPROVED"
			}
		}
		return ""
	}
}

// issued tells whether a certificate was signed for the CSR.
func issued(ctx SpecContext, name string) bool {
	csr := &certificatesv1.CertificateSigningRequest{}
	ExpectWithOffset(1, testClient.Get(ctx, client.ObjectKey{Name: name}, csr)).To(Succeed())
	return len(csr.Status.Certificate) > 0
}
