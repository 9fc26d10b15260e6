package manager_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	firewallmanager "github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/machine/machinetest"
	"github.com/metal-firewall/gardener-extension-firewall/test/testenv"
)

func TestManager(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Test Integration Firewall Manager Suite")
}

var (
	seed       *testenv.ControlPlane
	testClient client.Client
	scheme     = runtime.NewScheme()
)

var _ = BeforeSuite(func() {
	// CI runs the suites in parallel on two cores: give the real components time.
	SetDefaultEventuallyTimeout(30 * time.Second)
	log.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	Expect(firewallv1alpha1.AddToScheme(scheme)).To(Succeed())

	var err error
	seed, err = testenv.Start(testenv.Options{Name: "seed", CRDDirectoryPaths: testenv.SeedCRDPaths()})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(seed.Stop()).To(Succeed()) })

	testClient, err = client.New(seed.Config, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
})

// timeouts the specs use for the manager; short, so that the health and
// progress logic is exercised within a test's patience.
var managerOptions = firewallmanager.Options{
	ProgressDeadline: 20 * time.Second,
	HealthTimeout:    time.Minute,
	HeartbeatTimeout: 30 * time.Second,
}

// startManager runs the firewall manager for one namespace with the given
// provider and returns a function that stops it and waits until it stopped.
func startManager(namespace string, provider *machinetest.Memory, mutate ...func(*firewallmanager.Options)) (stop func()) {
	mgr, err := manager.New(seed.Config, manager.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  cache.Options{DefaultNamespaces: map[string]cache.Config{namespace: {}}},
		// Every spec runs its own manager in the one process.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	Expect(err).NotTo(HaveOccurred())
	opts := managerOptions
	opts.Provider = provider
	for _, m := range mutate {
		m(&opts)
	}
	Expect(firewallmanager.AddToManager(mgr, opts)).To(Succeed())

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(done)
		Expect(mgr.Start(ctx)).To(Succeed())
	}()
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			cancel()
			<-done
		}
	}
	DeferCleanup(stop)
	return stop
}

// newNamespace creates a namespace named like a shoot's.
func newNamespace(ctx context.Context) string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "shoot--test--"}}
	Expect(testClient.Create(ctx, ns)).To(Succeed())
	return ns.Name
}
