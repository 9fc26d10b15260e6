package lab_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/metal-firewall/gardener-extension-firewall/test/lab"
	"github.com/metal-firewall/gardener-extension-firewall/test/roottest"
)

func TestLab(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Lab Suite")
}

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
	agentBinary = filepath.Join(GinkgoT().TempDir(), "firewall-agent")
	cmd := exec.Command("go", "build", "-o", agentBinary, "../../cmd/firewall-agent")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), string(out))
})
