package localmachine_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/metal-firewall/gardener-extension-firewall/test/roottest"
	"github.com/metal-firewall/gardener-extension-firewall/test/testenv"
)

func TestLocalMachine(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Test Integration Local Machine Provider Suite")
}

// agentBinary is the real firewall-agent, built once for the suite.
var agentBinary string

var _ = BeforeSuite(func() {
	// CI runs the suites in parallel on two cores: give the real components time.
	SetDefaultEventuallyTimeout(30 * time.Second)
	if reason := roottest.SkipReason(); reason != "" {
		Skip(reason)
	}
	dir := GinkgoT().TempDir()
	agentBinary = filepath.Join(dir, "firewall-agent")
	cmd := exec.Command("go", "build", "-o", agentBinary, "./cmd/firewall-agent")
	cmd.Dir = testenv.RepoRoot()
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), string(out))
})
