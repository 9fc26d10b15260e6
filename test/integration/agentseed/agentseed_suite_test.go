package agentseed_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/csrapprover"
	"github.com/metal-firewall/gardener-extension-firewall/test/testenv"
)

func TestAgentSeed(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Test Integration Agent Seed Source Suite")
}

type seedEnv struct {
	cp     *testenv.ControlPlane
	client client.Client
}

var (
	scheme       = runtime.NewScheme()
	seedA, seedB *seedEnv
)

var _ = BeforeSuite(func() {
	// CI runs the suites in parallel on two cores: give the real components time.
	SetDefaultEventuallyTimeout(30 * time.Second)
	log.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	Expect(firewallv1alpha1.AddToScheme(scheme)).To(Succeed())
	seedA = startSeed("seed-a")
	seedB = startSeed("seed-b")
})

// startSeed starts a seed whose kube-controller-manager signs what the
// extension's CSR approver approves.
func startSeed(name string) *seedEnv {
	cp, err := testenv.Start(testenv.Options{Name: name, CRDDirectoryPaths: testenv.SeedCRDPaths(), ControllerManager: true})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(cp.Stop()).To(Succeed()) })
	c, err := client.New(cp.Config, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	mgr, err := manager.New(cp.Config, manager.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
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
	return &seedEnv{cp: cp, client: c}
}
