package firewallextension_test

import (
	"context"
	"testing"
	"time"

	"github.com/gardener/gardener/pkg/client/kubernetes"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
	firewallcontroller "github.com/metal-firewall/gardener-extension-firewall/pkg/controller/firewall"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/healthcheck"
	firewallmanager "github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/firewallmachine"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/machine/machinetest"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/rollrequest"
	"github.com/metal-firewall/gardener-extension-firewall/test/testenv"
)

func TestFirewallExtension(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Test Integration Firewall Extension Suite")
}

// seedEnv is one seed with the extension running in it.
type seedEnv struct {
	cp     *testenv.ControlPlane
	client client.Client
}

var (
	scheme = runtime.NewScheme()
	// provider is the machine infrastructure: one for both seeds, as metal-api is.
	provider     *machinetest.Memory
	seedA, seedB *seedEnv
)

var _ = BeforeSuite(func() {
	// CI runs the suites in parallel on two cores: give the real components time.
	SetDefaultEventuallyTimeout(30 * time.Second)
	log.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	Expect(kubernetes.AddSeedSchemeToScheme(scheme)).To(Succeed())
	Expect(firewallv1alpha1.AddToScheme(scheme)).To(Succeed())
	provider = machinetest.NewMemory()
	seedA = startSeed("seed-a", "")
	seedB = startSeed("seed-b", "")
})

// bootNamespace holds the boot ServiceAccounts, as the extension's namespace does.
const bootNamespace = "extension-firewall"

// readyTimeout is how long a reconcile waits for the firewall to forward; the
// specs that play the agent beat well within it.
const readyTimeout = 20 * time.Second

// startSeed starts a control plane and, in it, the extension: Gardener's
// generic Extension reconciler with the firewall actuator (acting on the
// operation annotation, as with gardenlet), and the firewall
// manager with bootstrap credentials for this seed.
// With a droptailerImage, it deploys the drop receiver into each shoot.
// tune changes the firewall controller's options.
func startSeed(name, droptailerImage string, tune ...func(*firewallcontroller.AddOptions)) *seedEnv {
	// With the shoot's CRDs: a seed stands in for a shoot of the other (roll requests).
	// With metal-stack's too: roll requests on their FirewallMonitor.
	crds := append(append(testenv.SeedCRDPaths(), testenv.ShootCRDPaths()...), testenv.MetalStackShootCRDPaths()...)
	cp, err := testenv.Start(testenv.Options{Name: name, CRDDirectoryPaths: crds})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(cp.Stop()).To(Succeed()) })

	c, err := client.New(cp.Config, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	Expect(c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: bootNamespace}})).To(Succeed())

	mgr, err := manager.New(cp.Config, manager.Options{
		Scheme:     scheme,
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	opts := firewallcontroller.AddOptions{
		Controller: controller.Options{MaxConcurrentReconciles: 5},
		Config: firewallcontroller.Config{BootNamespace: bootNamespace, ReadyTimeout: readyTimeout, ReadyPollInterval: 500 * time.Millisecond,
			DroptailerImage: droptailerImage},
	}
	for _, t := range tune {
		t(&opts)
	}
	Expect(firewallcontroller.AddToManagerWithOptions(ctx, mgr, opts)).To(Succeed())
	Expect(healthcheck.AddToManager(mgr, 2*time.Second, 0)).To(Succeed())
	Expect(firewallmanager.AddToManager(mgr, firewallmanager.Options{
		Provider:            provider,
		HeartbeatTimeout:    firewallmanager.DefaultHeartbeatTimeout,
		ShootClient:         rollrequest.ShootClients(mgr.GetClient()),
		RollRequestInterval: time.Second,
		Bootstrap: &firewallmachine.Bootstrap{
			Server: cp.Config.Host, CAData: cp.Config.CAData, Namespace: bootNamespace, SecretNames: []string{constants.ShootAccessSecretName},
		},
	})).To(Succeed())
	done := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(done)
		Expect(mgr.Start(ctx)).To(Succeed())
	}()
	DeferCleanup(func() { cancel(); <-done })
	return &seedEnv{cp: cp, client: c}
}
