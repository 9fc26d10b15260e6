package firewall_test

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/machine"
	"github.com/metal-firewall/gardener-extension-firewall/test/framework"
	"github.com/metal-firewall/gardener-extension-firewall/test/roottest"
	"github.com/metal-firewall/gardener-extension-firewall/test/testenv"
)

func TestFirewallE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Test E2E Firewall Suite")
}

// agentBinary is the firewall-agent built from this tree, as machines run it.
var agentBinary string

var _ = BeforeSuite(func() {
	if reason := roottest.SkipReason(); reason != "" {
		Skip(reason)
	}
	// CI runs the suites in parallel on two cores: give the real components time.
	SetDefaultEventuallyTimeout(30 * time.Second)
	log.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))

	var err error
	agentBinary, err = framework.BuildAgent(GinkgoT().TempDir())
	Expect(err).NotTo(HaveOccurred())
})

// startControlPlane starts a seed or shoot control plane that stops with the spec.
func startControlPlane(start func(string) (*testenv.ControlPlane, error), name string) *testenv.ControlPlane {
	GinkgoHelper()
	cp, err := start(name)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(cp.Stop()).To(Succeed()) })
	return cp
}

// startExtension runs the extension in the seed (see framework.StartExtension)
// and returns a function that kills it.
func startExtension(seed, shoot *testenv.ControlPlane, provider machine.Provider) (stop func()) {
	GinkgoHelper()
	stopExtension, err := framework.StartExtension(seed, shoot, framework.ExtensionOptions{Provider: provider})
	Expect(err).NotTo(HaveOccurred())
	return func() { Expect(stopExtension()).To(Succeed()) }
}

// prepareShootNamespace creates what gardenlet has for a shoot in a seed.
func prepareShootNamespace(ctx SpecContext, c client.Client, namespace string, shoot *testenv.ControlPlane) {
	GinkgoHelper()
	Expect(framework.ShootNamespace{Name: namespace, Shoot: shoot}.Create(ctx, c)).To(Succeed())
}

// waitForMachine waits until the local provider has recorded a machine.
func waitForMachine(ctx SpecContext, stateDir string) framework.MachineRecord {
	GinkgoHelper()
	rec, err := framework.WaitForMachine(ctx, stateDir, time.Minute)
	Expect(err).NotTo(HaveOccurred())
	return rec
}

func portOf(host string) int {
	GinkgoHelper()
	port, err := framework.PortOf(host)
	Expect(err).NotTo(HaveOccurred())
	return port
}
