package firewall_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/metal-firewall/gardener-extension-firewall/test/netns"
	"github.com/metal-firewall/gardener-extension-firewall/test/testenv"
)

func TestFirewallE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Test E2E Firewall Suite")
}

// agentBinary is the firewall-agent built from this tree, as machines run it.
var agentBinary string

var _ = BeforeSuite(func() {
	if reason := netns.SkipReason(); reason != "" {
		Skip(reason)
	}
	// CI runs the suites in parallel on two cores: give the real components time.
	SetDefaultEventuallyTimeout(30 * time.Second)
	log.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))

	agentBinary = filepath.Join(GinkgoT().TempDir(), "firewall-agent")
	build := exec.Command("go", "build", "-o", agentBinary, "./cmd/firewall-agent")
	build.Dir = testenv.RepoRoot()
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := build.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), string(out))
})
