package providermetal_test

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/gardener/gardener/pkg/client/kubernetes"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/webhook/providerfirewall"
	"github.com/metal-firewall/gardener-extension-firewall/test/testenv"
)

func TestProviderMetal(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Test Integration Provider Metal Suite")
}

var (
	testClient client.Client
	// seedConfig authenticates as an administrator of the seed.
	seedConfig *rest.Config
)

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))

	// The seed's CRDs include firewall-controller-manager's, copied from its module
	// (hack/update-upstream-crds.sh): the objects below are checked by their schema, and
	// its own binary runs against them (fcm_test.go).
	// kube-controller-manager fills the legacy ServiceAccount token Secrets that
	// firewall-controller-manager's defaulting webhook waits for.
	seed, err := testenv.Start(testenv.Options{Name: "seed", CRDDirectoryPaths: append(testenv.SeedCRDPaths(), testenv.FirewallControllerManagerCRDPaths()...),
		ControllerManager: true, ServiceAccountTokens: true})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(seed.Stop()).To(Succeed()) })

	scheme := runtime.NewScheme()
	Expect(kubernetes.AddSeedSchemeToScheme(scheme)).To(Succeed())
	Expect(firewallv1alpha1.AddToScheme(scheme)).To(Succeed())
	seedConfig = seed.Config
	testClient, err = client.New(seed.Config, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())

	By("registering the webhook with the kube-apiserver as the extension registers it, served by this process")
	wh := providerfirewall.Webhook(admissionregistrationv1.WebhookClientConfig{
		// envtest turns the service path into a URL on localhost.
		Service: &admissionregistrationv1.ServiceReference{Name: "unused", Namespace: "unused", Path: ptr.To(strings.TrimPrefix(providerfirewall.Path, "/"))},
	})
	webhookOpts := &envtest.WebhookInstallOptions{
		MutatingWebhooks: []*admissionregistrationv1.MutatingWebhookConfiguration{{Webhooks: []admissionregistrationv1.MutatingWebhook{wh}}},
	}
	webhookOpts.MutatingWebhooks[0].Name = providerfirewall.Name
	Expect(webhookOpts.Install(seed.Config)).To(Succeed())
	DeferCleanup(func() { Expect(webhookOpts.Cleanup()).To(Succeed()) })

	mgr, err := ctrl.NewManager(seed.Config, ctrl.Options{
		Scheme:  scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
		WebhookServer: webhook.NewServer(webhook.Options{
			Host:    webhookOpts.LocalServingHost,
			Port:    webhookOpts.LocalServingPort,
			CertDir: webhookOpts.LocalServingCertDir,
		}),
	})
	Expect(err).NotTo(HaveOccurred())
	Expect(providerfirewall.AddToManager(mgr)).To(Succeed())
	ctx, cancel := context.WithCancel(context.Background())
	DeferCleanup(cancel)
	go func() {
		defer GinkgoRecover()
		Expect(mgr.Start(ctx)).To(Succeed())
	}()
	Eventually(func() error { return mgr.GetWebhookServer().StartedChecker()(nil) }).WithTimeout(30 * time.Second).Should(Succeed())
})
