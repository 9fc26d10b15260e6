package lab_test

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/metal-firewall/gardener-extension-firewall/test/framework"
	"github.com/metal-firewall/gardener-extension-firewall/test/lab"
	"github.com/metal-firewall/gardener-extension-firewall/test/roottest"
)

func TestLabE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Test E2E Lab Suite")
}

// agentVersion is what the agent built for the lab says it is.
const agentVersion = "v0.0.0-lab"

var (
	labDir      string
	agentBinary string
)

var _ = BeforeSuite(func() {
	if reason := roottest.SkipReason(); reason != "" {
		Skip("the lab " + reason)
	}
	var err error
	labDir, err = lab.Dir()
	Expect(err).NotTo(HaveOccurred())
	SetDefaultEventuallyTimeout(time.Minute)
	log.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	agentBinary, err = framework.BuildAgentVersion(GinkgoT().TempDir(), agentVersion)
	Expect(err).NotTo(HaveOccurred())
})
