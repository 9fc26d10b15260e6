// Package agent_test checks the firewall agent with real packets: a node, the
// firewall and an outside host in network namespaces, TCP connections across.
package agent_test

import (
	"os/exec"
	"path/filepath"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/metal-firewall/gardener-extension-firewall/test/roottest"
)

func TestAgent(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Firewall agent integration")
}

// binary is the firewall-agent built for this run.
var binary string

var _ = BeforeSuite(func() {
	if reason := roottest.SkipReason(); reason != "" {
		Skip(reason)
	}
	for _, tool := range []string{"ip", "nft"} {
		_, err := exec.LookPath(tool)
		Expect(err).NotTo(HaveOccurred(), "the netns tests need %s", tool)
	}
	binary = filepath.Join(GinkgoT().TempDir(), "firewall-agent")
	out, err := exec.Command("go", "build", "-o", binary,
		"-ldflags", "-X github.com/metal-firewall/gardener-extension-firewall/cmd/firewall-agent/app.Version=v0.0.0-test",
		"github.com/metal-firewall/gardener-extension-firewall/cmd/firewall-agent").CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), string(out))
})

// lastGoodPath is where an agent binary started by a spec saves its last good
// ruleset: never the host's, which another spec's agent would install.
func lastGoodPath() string {
	return filepath.Join(GinkgoT().TempDir(), "last-good-ruleset.json")
}
