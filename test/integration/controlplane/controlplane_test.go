package controlplane_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
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
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/certificate/csr"
	bootstraptokenapi "k8s.io/cluster-bootstrap/token/api"
	bootstraptokenutil "k8s.io/cluster-bootstrap/token/util"
	"k8s.io/utils/ptr"

	"github.com/metal-firewall/gardener-extension-firewall/test/testenv"
)

// whoAmI asks the kube-apiserver who the config authenticates as.
func whoAmI(ctx context.Context, cfg *rest.Config) (authenticationv1.UserInfo, error) {
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return authenticationv1.UserInfo{}, err
	}
	review, err := c.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return authenticationv1.UserInfo{}, err
	}
	return review.Status.UserInfo, nil
}

// bootstrapTokenSecret returns a bootstrap token Secret as a firewall's would look.
func bootstrapTokenSecret(expiration time.Time, extraGroup string) (*corev1.Secret, string) {
	token, err := bootstraptokenutil.GenerateBootstrapToken()
	Expect(err).NotTo(HaveOccurred())
	id, secret := token[:6], token[7:]
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: bootstraptokenutil.BootstrapTokenSecretName(id), Namespace: metav1.NamespaceSystem},
		Type:       bootstraptokenapi.SecretTypeBootstrapToken,
		StringData: map[string]string{
			bootstraptokenapi.BootstrapTokenIDKey:               id,
			bootstraptokenapi.BootstrapTokenSecretKey:           secret,
			bootstraptokenapi.BootstrapTokenExpirationKey:       expiration.UTC().Format(time.RFC3339),
			bootstraptokenapi.BootstrapTokenUsageAuthentication: "true",
			bootstraptokenapi.BootstrapTokenExtraGroupsKey:      extraGroup,
		},
	}, token
}

var _ = Describe("Control plane built from source", func() {
	It("serves the version the binaries were built for", func() {
		info, err := seedAdmin.Discovery().ServerVersion()
		Expect(err).NotTo(HaveOccurred())
		Expect(info.GitVersion).To(MatchRegexp(`^v1\.\d+\.\d+$`))
		Expect(info.Minor).NotTo(BeEmpty())
	})

	It("installs Gardener's and Istio's CRDs", func(ctx SpecContext) {
		for _, gr := range []string{"clusters.extensions.gardener.cloud", "extensions.extensions.gardener.cloud",
			"managedresources.resources.gardener.cloud", "envoyfilters.networking.istio.io", "gateways.networking.istio.io"} {
			_, err := seedAdmin.Discovery().ServerResourcesForGroupVersion(map[string]string{
				"clusters.extensions.gardener.cloud":        "extensions.gardener.cloud/v1alpha1",
				"extensions.extensions.gardener.cloud":      "extensions.gardener.cloud/v1alpha1",
				"managedresources.resources.gardener.cloud": "resources.gardener.cloud/v1alpha1",
				"envoyfilters.networking.istio.io":          "networking.istio.io/v1alpha3",
				"gateways.networking.istio.io":              "networking.istio.io/v1",
			}[gr])
			Expect(err).NotTo(HaveOccurred(), gr)
		}
	})

	It("issues expiring service account tokens through TokenRequest", func(ctx SpecContext) {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "tokenrequest-"}}
		ns, err := seedAdmin.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		sa, err := seedAdmin.CoreV1().ServiceAccounts(ns.Name).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "agent"}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())

		before := time.Now()
		tr, err := seedAdmin.CoreV1().ServiceAccounts(ns.Name).CreateToken(ctx, sa.Name, &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](900)},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(tr.Status.ExpirationTimestamp.Time).To(BeTemporally("~", before.Add(15*time.Minute), time.Minute))

		user, err := whoAmI(ctx, seed.WithBearerToken(tr.Status.Token))
		Expect(err).NotTo(HaveOccurred())
		Expect(user.Username).To(Equal("system:serviceaccount:" + ns.Name + ":agent"))
	})

	It("authenticates a bootstrap token as system:bootstrap:<id> with its extra group", func(ctx SpecContext) {
		secret, token := bootstrapTokenSecret(time.Now().Add(time.Hour), "system:bootstrappers:test:fw-1")
		_, err := seedAdmin.CoreV1().Secrets(metav1.NamespaceSystem).Create(ctx, secret, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())

		// kube-apiserver reads bootstrap tokens from an informer: a new one takes a moment.
		var user authenticationv1.UserInfo
		Eventually(func() (err error) {
			user, err = whoAmI(ctx, seed.WithBearerToken(token))
			return err
		}).WithTimeout(30 * time.Second).Should(Succeed())
		Expect(user.Username).To(Equal("system:bootstrap:" + token[:6]))
		Expect(user.Groups).To(ContainElements("system:bootstrappers", "system:bootstrappers:test:fw-1"))

		By("rejecting the same id with a wrong secret")
		_, err = whoAmI(ctx, seed.WithBearerToken(token[:7]+"0123456789abcdef"))
		Expect(apierrors.IsUnauthorized(err)).To(BeTrue(), "got %v", err)
	})

	It("signs an approved kube-apiserver-client CSR created with a bootstrap token, and the certificate authenticates", func(ctx SpecContext) {
		const group = "system:bootstrappers:test:fw-csr"
		secret, token := bootstrapTokenSecret(time.Now().Add(time.Hour), group)
		_, err := seedAdmin.CoreV1().Secrets(metav1.NamespaceSystem).Create(ctx, secret, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		// The same permission kubelets get for their TLS bootstrap, granted to this one token's group.
		_, err = seedAdmin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "test-fw-csr-bootstrap"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:node-bootstrapper"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: group}},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())

		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		Expect(err).NotTo(HaveOccurred())
		csrPEM, err := certutil.MakeCSR(key, &pkix.Name{CommonName: "firewall:test:fw-csr", Organization: []string{"firewall:test"}}, nil, nil)
		Expect(err).NotTo(HaveOccurred())

		bootstrapClient, err := kubernetes.NewForConfig(seed.WithBearerToken(token))
		Expect(err).NotTo(HaveOccurred())
		name, uid, err := csr.RequestCertificateWithContext(ctx, bootstrapClient, csrPEM, "", certificatesv1.KubeAPIServerClientSignerName,
			ptr.To(10*time.Minute), []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}, key)
		Expect(err).NotTo(HaveOccurred())

		req, err := seedAdmin.CertificatesV1().CertificateSigningRequests().Get(ctx, name, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(req.Spec.Username).To(Equal("system:bootstrap:" + token[:6]))
		req.Status.Conditions = append(req.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "Test", Message: "approved by the test",
		})
		_, err = seedAdmin.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, name, req, metav1.UpdateOptions{})
		Expect(err).NotTo(HaveOccurred())

		waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		certPEM, err := csr.WaitForCertificate(waitCtx, bootstrapClient, name, uid)
		Expect(err).NotTo(HaveOccurred(), "kube-controller-manager did not sign the approved CSR")

		block, _ := pem.Decode(certPEM)
		Expect(block).NotTo(BeNil())
		cert, err := x509.ParseCertificate(block.Bytes)
		Expect(err).NotTo(HaveOccurred())
		Expect(cert.NotAfter).To(BeTemporally("<=", time.Now().Add(11*time.Minute)), "the requested duration is honoured")

		keyDER, err := x509.MarshalECPrivateKey(key)
		Expect(err).NotTo(HaveOccurred())
		cfg := seed.WithBearerToken("")
		cfg.CertData = certPEM
		cfg.KeyData = pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
		user, err := whoAmI(ctx, cfg)
		Expect(err).NotTo(HaveOccurred())
		Expect(user.Username).To(Equal("firewall:test:fw-csr"))
		Expect(user.Groups).To(ContainElement("firewall:test"))
	})

	It("removes an expired bootstrap token through the token cleaner", func(ctx SpecContext) {
		secret, token := bootstrapTokenSecret(time.Now().Add(3*time.Second), "system:bootstrappers:test:fw-expiring")
		_, err := seedAdmin.CoreV1().Secrets(metav1.NamespaceSystem).Create(ctx, secret, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())

		Eventually(func() bool {
			_, err := seedAdmin.CoreV1().Secrets(metav1.NamespaceSystem).Get(ctx, secret.Name, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}).WithTimeout(time.Minute).WithPolling(time.Second).Should(BeTrue(), "the token cleaner deletes the Secret after expiry")

		_, err = whoAmI(ctx, seed.WithBearerToken(token))
		Expect(apierrors.IsUnauthorized(err)).To(BeTrue(), "an expired token authenticates no more, got %v", err)
	})

	It("starts a second seed and a shoot on demand, each with its own CA and CRDs", func(ctx SpecContext) {
		shoot, err := testenv.Start(testenv.Options{Name: "shoot", CRDDirectoryPaths: testenv.ShootCRDPaths()})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(shoot.Stop()).To(Succeed()) })
		seedB, err := testenv.Start(testenv.Options{Name: "seed-b", CRDDirectoryPaths: testenv.SeedCRDPaths()})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(seedB.Stop()).To(Succeed()) })

		Expect(shoot.Config.Host).NotTo(Equal(seed.Config.Host))
		Expect(seedB.CACertificate()).NotTo(Equal(seed.CACertificate()), "a migration test must see a changed CA")

		shootAdmin, err := kubernetes.NewForConfig(shoot.Config)
		Expect(err).NotTo(HaveOccurred())
		groups, err := shootAdmin.Discovery().ServerGroups()
		Expect(err).NotTo(HaveOccurred())
		var names []string
		for _, g := range groups.Groups {
			names = append(names, g.Name)
		}
		Expect(names).To(ContainElement("firewall.metal-firewall.io"), "the shoot has ClusterwideNetworkPolicy and FirewallMonitor")
		Expect(names).NotTo(ContainElement("extensions.gardener.cloud"), "Gardener's extension CRDs live in seeds only")

		// A client certificate of one seed's CA is worthless at the other seed.
		user, err := seedB.AddUser("firewall:test:fw-a")
		Expect(err).NotTo(HaveOccurred())
		_, err = whoAmI(ctx, user)
		Expect(err).NotTo(HaveOccurred())
		foreign := rest.CopyConfig(user)
		foreign.Host = seed.Config.Host
		foreign.CAData = seed.Config.CAData
		_, err = whoAmI(ctx, foreign)
		Expect(apierrors.IsUnauthorized(err)).To(BeTrue(), "got %v", err)
	})
})
