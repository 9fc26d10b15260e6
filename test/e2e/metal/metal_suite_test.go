package metal_test

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/metal-firewall/gardener-extension-firewall/test/framework"
	"github.com/metal-firewall/gardener-extension-firewall/test/roottest"
	"github.com/metal-firewall/gardener-extension-firewall/test/testenv"
)

func TestMetalE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Test E2E Metal Suite")
}

// agentBinary is the firewall-agent built from this tree, as machines run it.
var agentBinary string

var _ = BeforeSuite(func() {
	if reason := roottest.SkipReason(); reason != "" {
		Skip(reason)
	}
	SetDefaultEventuallyTimeout(30 * time.Second)
	log.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	var err error
	agentBinary, err = framework.BuildAgent(GinkgoT().TempDir())
	Expect(err).NotTo(HaveOccurred())
})

func startControlPlane(start func(string) (*testenv.ControlPlane, error), name string) *testenv.ControlPlane {
	GinkgoHelper()
	cp, err := start(name)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(cp.Stop()).To(Succeed()) })
	return cp
}
