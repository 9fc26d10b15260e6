package credentials_test

import (
	"context"
	"testing"
	"time"

	"github.com/gardener/gardener/pkg/component/extensions/operatingsystemconfig/original/components/nodeagent"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/csrapprover"
	"github.com/metal-firewall/gardener-extension-firewall/test/framework"
	"github.com/metal-firewall/gardener-extension-firewall/test/testenv"
)

func TestCredentials(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Test Integration Credentials Suite")
}

var (
	seed       *testenv.ControlPlane
	testClient client.Client
	policies   int
)

// bootNamespace holds the firewalls' boot ServiceAccounts, as the extension's
// namespace does in a seed.
const bootNamespace = "extension-firewall-boot"

var _ = BeforeSuite(func() {
	// CI runs the suites in parallel on two cores: give the real components time.
	SetDefaultEventuallyTimeout(30 * time.Second)
	log.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	scheme := runtime.NewScheme()
	Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	Expect(firewallv1alpha1.AddToScheme(scheme)).To(Succeed())

	var err error
	seed, err = testenv.Start(testenv.Options{Name: "seed", CRDDirectoryPaths: testenv.SeedCRDPaths(), ControllerManager: true})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(seed.Stop()).To(Succeed()) })

	testClient, err = client.New(seed.Config, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	Expect(testClient.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: bootNamespace}})).To(Succeed())

	// What every Gardener shoot, so every ManagedSeed, carries: kubelet TLS
	// bootstrap and node client certificate auto-approval for the group
	// system:bootstrappers (Gardener's own code makes the objects).
	for _, obj := range nodeagent.GetCertificateSigningRequestClusterRoleBindings() {
		Expect(testClient.Create(context.Background(), obj)).To(Succeed())
	}

	// The chart's admission policy for firewall CSRs, as gardenlet installs it.
	objs, err := framework.RenderChart(bootNamespace, seed.Config.Host)
	Expect(err).NotTo(HaveOccurred())
	for _, o := range objs {
		switch o.(type) {
		case *admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding:
			Expect(testClient.Create(context.Background(), o)).To(Succeed())
			policies++
		}
	}
	Expect(policies).To(Equal(2), "the chart's ValidatingAdmissionPolicy and its binding")

	mgr, err := manager.New(seed.Config, manager.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}})
	Expect(err).NotTo(HaveOccurred())
	Expect((&csrapprover.Reconciler{BootNamespace: bootNamespace}).AddToManager(mgr)).To(Succeed())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(done)
		Expect(mgr.Start(ctx)).To(Succeed())
	}()
	DeferCleanup(func() { cancel(); <-done })
})
