package app_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
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

// fakeGarden answers the discovery and the GET of one metal CloudProfile,
// as the garden's kube-apiserver would, and counts the CloudProfile reads.
func fakeGarden(reads *atomic.Int32) *httptest.Server {
	profile := &gardencorev1beta1.CloudProfile{
		TypeMeta:   metav1.TypeMeta{APIVersion: "core.gardener.cloud/v1beta1", Kind: "CloudProfile"},
		ObjectMeta: metav1.ObjectMeta{Name: "metal"},
	}
	profile.Spec.ProviderConfig = &runtime.RawExtension{Raw: []byte(`{"apiVersion":"metal.provider.extensions.gardener.cloud/v1alpha1","kind":"CloudProfileConfig",
		"metalControlPlanes":{"prod":{"firewallImages":["firewall-ubuntu-3.0"],"partitions":{"fra-equ01":{"firewallTypes":["c1-xlarge-x86"]}}}}}`)}
	mux := http.NewServeMux()
	write := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("/api", func(w http.ResponseWriter, _ *http.Request) {
		write(w, &metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"}})
	})
	mux.HandleFunc("/apis", func(w http.ResponseWriter, _ *http.Request) {
		gv := metav1.GroupVersionForDiscovery{GroupVersion: "core.gardener.cloud/v1beta1", Version: "v1beta1"}
		write(w, &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"},
			Groups: []metav1.APIGroup{{Name: "core.gardener.cloud", Versions: []metav1.GroupVersionForDiscovery{gv}, PreferredVersion: gv}}})
	})
	mux.HandleFunc("/apis/core.gardener.cloud/v1beta1", func(w http.ResponseWriter, _ *http.Request) {
		write(w, &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: "core.gardener.cloud/v1beta1",
			APIResources: []metav1.APIResource{{Name: "cloudprofiles", Kind: "CloudProfile", Verbs: metav1.Verbs{"get"}}}})
	})
	mux.HandleFunc("/apis/core.gardener.cloud/v1beta1/cloudprofiles/metal", func(w http.ResponseWriter, _ *http.Request) {
		reads.Add(1)
		write(w, profile)
	})
	return httptest.NewServer(mux)
}

var _ = Describe("Admission server with --garden-kubeconfig", Ordered, func() {
	var (
		url    string
		client *http.Client
		reads  atomic.Int32
	)

	BeforeAll(func() {
		garden := fakeGarden(&reads)
		DeferCleanup(garden.Close)
		dir := GinkgoT().TempDir()
		kubeconfig := filepath.Join(dir, "kubeconfig")
		Expect(os.WriteFile(kubeconfig, fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters: [{name: garden, cluster: {server: %q}}]
users: [{name: admission, user: {token: t}}]
contexts: [{name: garden, context: {cluster: garden, user: admission}}]
current-context: garden
`, garden.URL), 0o600)).To(Succeed())

		certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.ParseIP("127.0.0.1")}, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(os.WriteFile(filepath.Join(dir, "tls.crt"), certPEM, 0o600)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(dir, "tls.key"), keyPEM, 0o600)).To(Succeed())
		l, err := net.Listen("tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		port := l.Addr().(*net.TCPAddr).Port
		Expect(l.Close()).To(Succeed())

		opts := &Options{Host: "127.0.0.1", Port: port, CertDir: dir, GardenKubeconfig: kubeconfig}
		Expect(opts.Validate()).To(Succeed())
		ctx, cancel := context.WithCancel(context.Background())
		DeferCleanup(cancel)
		go func() {
			defer GinkgoRecover()
			Expect(Serve(ctx, opts)).To(Succeed())
		}()
		client = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // a test's self-signed certificate
		url = fmt.Sprintf("https://127.0.0.1:%d%s", port, validator.Path)
	})

	review := func(firewall string) *admissionv1.AdmissionResponse {
		shoot := &gardencorev1beta1.Shoot{
			TypeMeta:   metav1.TypeMeta{APIVersion: "core.gardener.cloud/v1beta1", Kind: "Shoot"},
			ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "garden-p"},
			Spec: gardencorev1beta1.ShootSpec{
				CloudProfile: &gardencorev1beta1.CloudProfileReference{Kind: "CloudProfile", Name: "metal"},
				Extensions:   []gardencorev1beta1.Extension{{Type: "firewall", ProviderConfig: &runtime.RawExtension{Raw: []byte(firewall)}}},
			},
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

	It("reads the shoot's CloudProfile from the garden and refuses a size it does not offer", func() {
		resp := review(`{"size":"n1-medium-x86","image":"firewall-ubuntu-3.0","partition":"fra-equ01","project":"p","networks":["internet"]}`)
		Expect(resp.Allowed).To(BeFalse())
		Expect(resp.Result.Message).To(ContainSubstring(`spec.extensions[0].providerConfig.size: Invalid value: "n1-medium-x86": not in the CloudProfile's firewallTypes of partition fra-equ01: c1-xlarge-x86`))
		Expect(reads.Load()).To(BeNumerically(">=", 1))
	})

	It("admits what it offers", func() {
		resp := review(`{"size":"c1-xlarge-x86","image":"firewall-ubuntu-3.0","partition":"fra-equ01","project":"p","networks":["internet"]}`)
		Expect(resp.Allowed).To(BeTrue(), "%v", resp.Result)
	})

	It("refuses to start with a garden kubeconfig that is not there", func() {
		Expect((&Options{CertDir: GinkgoT().TempDir(), GardenKubeconfig: "/nonexistent"}).Validate()).To(MatchError(ContainSubstring("--garden-kubeconfig")))
	})
})
