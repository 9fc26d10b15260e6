package app_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	certutil "k8s.io/client-go/util/cert"

	. "github.com/metal-firewall/gardener-extension-firewall/cmd/gardener-extension-firewall-admission/app"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/admission/validator"
)

var _ = Describe("Admission server", Ordered, func() {
	var (
		url    string
		health string
		client *http.Client
	)

	BeforeAll(func() {
		certDir := GinkgoT().TempDir()
		certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.ParseIP("127.0.0.1")}, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(os.WriteFile(filepath.Join(certDir, "tls.crt"), certPEM, 0o600)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(certDir, "tls.key"), keyPEM, 0o600)).To(Succeed())

		l, err := net.Listen("tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		port := l.Addr().(*net.TCPAddr).Port
		Expect(l.Close()).To(Succeed())
		hl, err := net.Listen("tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		health = "http://" + hl.Addr().String()
		Expect(hl.Close()).To(Succeed())

		ctx, cancel := context.WithCancel(context.Background())
		DeferCleanup(cancel)
		go func() {
			defer GinkgoRecover()
			Expect(Serve(ctx, &Options{Host: "127.0.0.1", Port: port, CertDir: certDir, HealthBindAddress: strings.TrimPrefix(health, "http://")})).To(Succeed())
		}()

		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(certPEM)
		client = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
		url = fmt.Sprintf("https://127.0.0.1:%d%s", port, validator.Path)
	})

	review := func(exts ...gardencorev1beta1.Extension) *admissionv1.AdmissionResponse {
		shoot := &gardencorev1beta1.Shoot{
			TypeMeta:   metav1.TypeMeta{APIVersion: "core.gardener.cloud/v1beta1", Kind: "Shoot"},
			ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "garden-p"},
			Spec:       gardencorev1beta1.ShootSpec{Extensions: exts},
		}
		raw, err := json.Marshal(shoot)
		Expect(err).NotTo(HaveOccurred())
		body, err := json.Marshal(&admissionv1.AdmissionReview{
			TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
			Request:  &admissionv1.AdmissionRequest{UID: "1", Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: raw}},
		})
		Expect(err).NotTo(HaveOccurred())
		var resp *http.Response
		Eventually(func() error {
			resp, err = client.Post(url, "application/json", bytes.NewReader(body))
			return err
		}).WithTimeout(10 * time.Second).Should(Succeed())
		defer func() { _ = resp.Body.Close() }()
		out := &admissionv1.AdmissionReview{}
		Expect(json.NewDecoder(resp.Body).Decode(out)).To(Succeed())
		return out.Response
	}
	ext := func(typ, config string) gardencorev1beta1.Extension {
		return gardencorev1beta1.Extension{Type: typ, ProviderConfig: &runtime.RawExtension{Raw: []byte(config)}}
	}
	const goodFirewall = `{"size":"s","image":"i","partition":"p","project":"p","networks":["n"]}`

	It("allows Shoots with valid firewall and acl configs", func() {
		resp := review(ext("firewall", goodFirewall), ext("acl", `{"rule":{"action":"ALLOW","type":"remote_ip","cidrs":["1.2.3.4/24"]}}`))
		Expect(resp.Allowed).To(BeTrue(), "%v", resp.Result)
	})

	It("refuses an invalid firewall config, naming the field and the value", func() {
		resp := review(ext("dns", "{}"), ext("firewall", `{"size":"s","image":"i","partition":"p","project":"p","networks":["n"],"internalPrefixes":["10.0.0/8"]}`))
		Expect(resp.Allowed).To(BeFalse())
		Expect(resp.Result.Message).To(ContainSubstring(`spec.extensions[1].providerConfig.internalPrefixes[0]: Invalid value: "10.0.0/8"`))
	})

	It("refuses an unknown field and an invalid acl config in one answer", func() {
		resp := review(ext("firewall", `{"size":"s","image":"i","partition":"p","project":"p","networks":["n"],"colour":"red"}`),
			ext("acl", `{"rule":{"action":"ALLOW","type":"remote_ip","cidrs":["1.2.3.400/24"]}}`))
		Expect(resp.Allowed).To(BeFalse())
		Expect(resp.Result.Message).To(And(ContainSubstring(`unknown field "colour"`), ContainSubstring("spec.extensions[1].providerConfig.rule.cidrs[0]")))
	})

	It("answers /healthz, and /readyz once it serves TLS, for the Deployment's probes", func() {
		for _, path := range []string{"/healthz", "/readyz"} {
			Eventually(func(g Gomega) {
				resp, err := http.Get(health + path) //nolint:noctx // a probe
				g.Expect(err).NotTo(HaveOccurred())
				_ = resp.Body.Close()
				g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
			}).WithTimeout(10*time.Second).Should(Succeed(), path)
		}
	})

	It("refuses to start without a certificate folder", func() {
		Expect((&Options{}).Validate()).To(MatchError(ContainSubstring("--cert-dir is required")))
	})
})
