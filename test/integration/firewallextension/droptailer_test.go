package firewallextension_test

import (
	"crypto/x509"
	"encoding/pem"
	"time"

	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	secretsmanager "github.com/gardener/gardener/pkg/utils/secrets/manager"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
	"github.com/metal-firewall/gardener-extension-firewall/test/framework"
)

var _ = Describe("Extension firewall with the drop receiver", func() {
	It("gives the receiver a certificate of a CA in the seed, publishes the CA's bundle for the agents, keeps both across reconciles and removes them with the Extension", func(ctx SpecContext) {
		seed := startSeed("seed-drop", "example.org/firewall-agent:v1")
		namespace := "shoot--p--drop"
		createShoot(ctx, seed, namespace)
		ex := newExtension(namespace, providerConfig)
		Expect(seed.client.Create(ctx, ex)).To(Succeed())

		// receiver returns the receiver's certificate and the CA bundle the
		// shoot's ManagedResource carries.
		receiver := func(g Gomega) (certPEM, keyPEM []byte, bundle string) {
			objects, err := framework.ShootManagedResourceObjects(ctx, seed.client, namespace, constants.ShootManagedResourceName)
			g.Expect(err).NotTo(HaveOccurred())
			for _, o := range objects {
				switch o := o.(type) {
				case *corev1.Secret:
					if o.Name == constants.DropReceiverTLSSecretName {
						certPEM, keyPEM = o.Data[corev1.TLSCertKey], o.Data[corev1.TLSPrivateKeyKey]
					}
				case *corev1.ConfigMap:
					if o.Name == constants.DropReceiverCAConfigMapName {
						bundle = string(o.BinaryData[constants.DropReceiverCAKey])
					}
				}
			}
			g.Expect(certPEM).NotTo(BeEmpty())
			g.Expect(keyPEM).NotTo(BeEmpty())
			g.Expect(bundle).NotTo(BeEmpty())
			return certPEM, keyPEM, bundle
		}
		var certPEM []byte
		var bundle string
		Eventually(func(g Gomega) { certPEM, _, bundle = receiver(g) }).WithTimeout(time.Minute).Should(Succeed())

		By("the certificate verifies for the name the agents check, with the published bundle only")
		block, _ := pem.Decode(certPEM)
		Expect(block).NotTo(BeNil())
		leaf, err := x509.ParseCertificate(block.Bytes)
		Expect(err).NotTo(HaveOccurred())
		roots := x509.NewCertPool()
		Expect(roots.AppendCertsFromPEM([]byte(bundle))).To(BeTrue())
		_, err = leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: constants.DropReceiverServerName, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
		Expect(err).NotTo(HaveOccurred())
		_, err = leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: "kubernetes.default.svc", KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
		Expect(err).To(HaveOccurred(), "for that name only")

		managed := func() []corev1.Secret {
			list := &corev1.SecretList{}
			Expect(seed.client.List(ctx, list, client.InNamespace(namespace), client.MatchingLabels{
				secretsmanager.LabelKeyManagedBy: secretsmanager.LabelValueSecretsManager, secretsmanager.LabelKeyManagerIdentity: constants.SecretsManagerIdentity})).To(Succeed())
			return list.Items
		}
		Expect(managed()).NotTo(BeEmpty(), "the CA's private key stays in the seed, managed by Gardener's secrets manager under the extension's identity")
		for _, o := range []string{"ca-firewall-drop", "firewall-drop-server"} {
			Expect(managed()).To(ContainElement(HaveField("ObjectMeta.Labels", HaveKeyWithValue("name", o))))
		}

		By("a second reconcile keeps the certificate")
		annotate(ctx, seed, ex, v1beta1constants.GardenerOperationReconcile, nil)
		Eventually(func(g Gomega) []byte {
			g.Expect(seed.client.Get(ctx, client.ObjectKeyFromObject(ex), ex)).To(Succeed())
			g.Expect(ex.Annotations).NotTo(HaveKey(v1beta1constants.GardenerOperation))
			c, _, _ := receiver(g)
			return c
		}).WithTimeout(time.Minute).Should(Equal(certPEM))

		By("deleting the Extension removes the receiver's CA and certificate from the seed")
		Expect(seed.client.Delete(ctx, ex)).To(Succeed())
		Eventually(func() bool { return apierrors.IsNotFound(seed.client.Get(ctx, client.ObjectKeyFromObject(ex), ex)) }).WithTimeout(time.Minute).Should(BeTrue())
		Expect(managed()).To(BeEmpty())
	})
})
