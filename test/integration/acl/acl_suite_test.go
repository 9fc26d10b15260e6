package acl_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gardener/gardener/pkg/client/kubernetes"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	aclcontroller "github.com/metal-firewall/gardener-extension-firewall/pkg/controller/acl"
	aclhealthcheck "github.com/metal-firewall/gardener-extension-firewall/pkg/controller/healthcheck"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/webhook/envoyfilter"
	"github.com/metal-firewall/gardener-extension-firewall/test/testenv"
)

func TestACL(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Test Integration ACL Suite")
}

// operatorCIDR is configured by the operator as always allowed.
const operatorCIDR = "192.0.2.0/28"

var (
	seed       *testenv.ControlPlane
	testClient client.Client
)

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))

	var err error
	seed, err = testenv.Start(testenv.Options{Name: "seed", CRDDirectoryPaths: testenv.SeedCRDPaths()})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(seed.Stop()).To(Succeed()) })

	testClient, err = client.New(seed.Config, client.Options{Scheme: kubernetes.SeedScheme})
	Expect(err).NotTo(HaveOccurred())

	By("Registering the webhook with the kube-apiserver, served by this process")
	webhookOpts := &envtest.WebhookInstallOptions{
		MutatingWebhooks: []*admissionregistrationv1.MutatingWebhookConfiguration{
			envoyfilter.MutatingWebhookConfiguration(admissionregistrationv1.WebhookClientConfig{
				// envtest turns the service path into a URL on localhost.
				Service: &admissionregistrationv1.ServiceReference{Name: "unused", Namespace: "unused", Path: ptr.To(strings.TrimPrefix(envoyfilter.Path, "/"))},
			}),
		},
	}
	Expect(webhookOpts.Install(seed.Config)).To(Succeed())
	DeferCleanup(func() { Expect(webhookOpts.Cleanup()).To(Succeed()) })

	By("Starting the acl controller and the webhook in a manager")
	mgr, err := ctrl.NewManager(seed.Config, ctrl.Options{
		Scheme:     kubernetes.SeedScheme,
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
		WebhookServer: webhook.NewServer(webhook.Options{
			Host:    webhookOpts.LocalServingHost,
			Port:    webhookOpts.LocalServingPort,
			CertDir: webhookOpts.LocalServingCertDir,
		}),
	})
	Expect(err).NotTo(HaveOccurred())

	ctx, cancel := context.WithCancel(context.Background())
	DeferCleanup(cancel)
	Expect(addController(ctx, mgr)).To(Succeed())
	Expect(envoyfilter.AddToManager(mgr)).To(Succeed())
	Expect(aclhealthcheck.AddToManager(mgr, time.Second, 0)).To(Succeed())

	go func() {
		defer GinkgoRecover()
		Expect(mgr.Start(ctx)).To(Succeed())
	}()
	Eventually(func() error { return mgr.GetWebhookServer().StartedChecker()(nil) }).WithTimeout(30 * time.Second).Should(Succeed())
})

func ctx() context.Context { return context.Background() }

// addController adds the acl controller with the binary's workers, so shoots
// reconcile concurrently as in a seed, always allowing the operator's CIDR.
func addController(ctx context.Context, mgr manager.Manager) error {
	return aclcontroller.AddToManagerWithOptions(ctx, mgr, aclcontroller.AddOptions{
		IgnoreOperationAnnotation: true,
		Controller:                aclcontroller.DefaultAddOptions.Controller,
		Config:                    aclcontroller.Config{AlwaysAllowedCIDRs: []string{operatorCIDR}},
	})
}
