package credentials_test

import (
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/credentials"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/bootstrap"
)

// The CSR flood (issue #30, finding 3): one firewall certificate wrote ten
// 1.25 MB CSRs into the seed's etcd in 0.8 s. The chart's admission policy
// lets a firewall identity write one CSR of at most 4 KiB under its own name,
// and nothing else.
var _ = Describe("the CSR flood", func() {
	var (
		namespace string
		agent     *rest.Config
		boot      *rest.Config
	)

	BeforeEach(func(ctx SpecContext) {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "shoot--flood--"}}
		Expect(testClient.Create(ctx, ns)).To(Succeed())
		namespace = ns.Name
		newFirewall(ctx, namespace, "fw-a")
		boot = bootConfig(ctx, namespace, "fw-a")
		// The policy may take a moment to be in force after the suite created it.
		var cred *bootstrap.Credential
		Eventually(func(g Gomega) {
			var err error
			cred, err = bootstrap.RequestCertificate(ctx, boot, namespace, "fw-a", ecKey(), 10*time.Minute)
			g.Expect(err).NotTo(HaveOccurred(), "the agent's own request passes")
		}).Should(Succeed())
		agent = certConfig(cred)
		Eventually(func() error {
			name, err := createCSR(ctx, agent, "", csrPEM(namespace, 0))
			if err == nil {
				// Not in force yet: take the probe back.
				Expect(testClient.Delete(ctx, &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())
			}
			return err
		}).Should(MatchError(ContainSubstring("is not the one CSR name of this firewall")), "the policy is in force")
	})

	large := func(ns string) []byte { return csrPEM(ns, 1250*1000*3/4) }
	small := func(ns string) []byte { return csrPEM(ns, 0) }

	// stored is what etcd holds of CSRs the firewall's identities wrote.
	stored := func(ctx SpecContext) (count, bytes int) {
		GinkgoHelper()
		list := &certificatesv1.CertificateSigningRequestList{}
		Expect(testClient.List(ctx, list)).To(Succeed())
		for _, csr := range list.Items {
			if csr.Spec.Username == firewallv1alpha1.AgentUserName(namespace, "fw-a") || csr.Spec.Username == credentials.BootUser(bootNamespace, namespace, "fw-a") {
				count++
				bytes += len(csr.Spec.Request)
			}
		}
		return count, bytes
	}

	DescribeTable("refuses a firewall identity's CSRs beyond its one of a few KiB, before they are stored",
		func(ctx SpecContext, asBoot bool, name func(ns string) string, request func(ns string) []byte, meta func(*metav1.ObjectMeta), want string) {
			cfg := agent
			if asBoot {
				cfg = boot
			}
			for i := range 10 {
				csr := &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: name(namespace)}}
				if csr.Name == "" {
					csr.Name = fmt.Sprintf("firewall.%s.fw-a-%d", namespace, i)
				}
				if meta != nil {
					meta(&csr.ObjectMeta)
				}
				_, err := createObject(ctx, cfg, csr, request(namespace))
				Expect(err).To(MatchError(And(ContainSubstring("gardener-extension-firewall-csr"), ContainSubstring(want))), "CSR %d", i)
			}
			count, bytes := stored(ctx)
			Expect(count).To(Equal(1), "the agent's own CSR, nothing more")
			Expect(bytes).To(BeNumerically("<=", 4096))
		},
		Entry("ten requests of 1.25 MB under its own name, with the agent's certificate", false,
			func(ns string) string { return firewallv1alpha1.CSRName(ns, "fw-a") }, large, nil, "bytes is larger than 4096"),
		Entry("ten requests of 1.25 MB under its own name, with the boot token", true,
			func(ns string) string { return firewallv1alpha1.CSRName(ns, "fw-a") }, large, nil, "bytes is larger than 4096"),
		Entry("ten small requests under other names, with the agent's certificate", false,
			func(string) string { return "" }, small, nil, "is not the one CSR name of this firewall"),
		Entry("ten small requests under other names, with the boot token", true,
			func(string) string { return "" }, small, nil, "is not the one CSR name of this firewall"),
		Entry("another firewall's CSR name", false,
			func(ns string) string { return firewallv1alpha1.CSRName(ns, "fw-b") }, small, nil, "is not the one CSR name of this firewall"),
		Entry("its own name, carrying 200 KB in an annotation", false,
			func(ns string) string { return firewallv1alpha1.CSRName(ns, "fw-a") }, small,
			func(m *metav1.ObjectMeta) { m.Annotations = map[string]string{"x": string(make([]byte, 200_000))} }, "no labels, annotations"),
		Entry("its own name, carrying a finalizer", false,
			func(ns string) string { return firewallv1alpha1.CSRName(ns, "fw-a") }, small,
			func(m *metav1.ObjectMeta) { m.Finalizers = []string{"example.com/keep"} }, "no labels, annotations"),
	)

	It("leaves other requesters' CSRs alone", func(ctx SpecContext) {
		name, err := createCSR(ctx, seed.Config, "", csrPEM(namespace, 8192))
		Expect(err).NotTo(HaveOccurred(), "the cluster admin is no firewall identity")
		Expect(testClient.Delete(ctx, &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())
	})
})

// csrPEM is fw-a's request padded with an extension of pad bytes.
func csrPEM(namespace string, pad int) []byte {
	GinkgoHelper()
	tmpl := &x509.CertificateRequest{Subject: subjectOf(namespace, "fw-a")}
	if pad > 0 {
		tmpl.ExtraExtensions = []pkix.Extension{{Id: []int{1, 3, 6, 1, 4, 1, 99999, 1}, Value: make([]byte, pad)}}
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, ecKey())
	Expect(err).NotTo(HaveOccurred())
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

// createCSR creates a firewall CSR as cfg, named name (generated when empty).
func createCSR(ctx SpecContext, cfg *rest.Config, name string, request []byte) (string, error) {
	meta := metav1.ObjectMeta{Name: name}
	if name == "" {
		meta.GenerateName = "other-"
	}
	return createObject(ctx, cfg, &certificatesv1.CertificateSigningRequest{ObjectMeta: meta}, request)
}

// createObject fills in a client CSR's spec and creates it as cfg.
func createObject(ctx SpecContext, cfg *rest.Config, csr *certificatesv1.CertificateSigningRequest, request []byte) (string, error) {
	GinkgoHelper()
	csr.Spec = certificatesv1.CertificateSigningRequestSpec{
		Request: request, SignerName: certificatesv1.KubeAPIServerClientSignerName,
		Usages: clientUsages, ExpirationSeconds: ptr.To[int32](600),
	}
	cs, err := kubernetes.NewForConfig(cfg)
	Expect(err).NotTo(HaveOccurred())
	created, err := cs.CertificatesV1().CertificateSigningRequests().Create(ctx, csr, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	return created.Name, nil
}
