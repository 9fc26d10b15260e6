package agentseed_test

import (
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/agent"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/metrics"
	"github.com/metal-firewall/gardener-extension-firewall/test/framework"
)

// The agent writes no EndpointSlice into the shoot any more: it reports
// where it serves its metrics in its Firewall's status, and the extension
// publishes that (package metricsendpoints).
var _ = Describe("the agent's metrics address", func() {
	It("is reported in the Firewall's status in the seed", func(ctx SpecContext) {
		dir := GinkgoT().TempDir()
		bootstrap, seed, cfgPath := filepath.Join(dir, "bootstrap.kubeconfig"), filepath.Join(dir, "seed.kubeconfig"), filepath.Join(dir, "config.yaml")
		prepareSeed(ctx, seedA, "fw-metrics", "10.13.0.0/24", bootstrap)
		// A veth stands in for the internal network's interface.
		const iface, address = "fwsmetrics0", "198.51.100.7"
		for _, args := range [][]string{{"link", "add", iface, "type", "veth", "peer", "name", iface + "p"}, {"addr", "add", address + "/32", "dev", iface}, {"link", "set", iface, "up"}} {
			out, err := exec.Command("ip", args...).CombinedOutput()
			Expect(err).NotTo(HaveOccurred(), string(out))
			if args[0] == "link" && args[1] == "add" {
				DeferCleanup(func() {
					out, err := exec.Command("ip", "link", "del", iface).CombinedOutput()
					Expect(err).NotTo(HaveOccurred(), string(out))
				})
			}
		}
		l, err := net.Listen("tcp", address+":0")
		Expect(err).NotTo(HaveOccurred())
		port := l.Addr().(*net.TCPAddr).Port
		Expect(l.Close()).To(Succeed())
		Expect(os.WriteFile(cfgPath, []byte(fmt.Sprintf(`name: fw-metrics
networks: [{id: internal, interface: `+iface+`}]
metrics: {internalNetwork: internal, port: %d}
sources:
  seed: {bootstrapKubeconfig: %s, kubeconfig: %s, namespace: %s}
controllers:
  firewall: {source: seed}
`, port, bootstrap, seed, namespace)), 0o600)).To(Succeed())

		log := slog.New(slog.NewTextHandler(GinkgoWriter, nil))
		a := &agent.Agent{ConfigPath: cfgPath, Applier: &recorder{}, Log: log, Metrics: metrics.New("v-test", nil, log),
			PollInterval: 200 * time.Millisecond, SeedInterval: 500 * time.Millisecond, Version: "v-test"}
		stopAgent := framework.RunInBackground(a.Run)
		DeferCleanup(func() { Expect(stopAgent()).To(Succeed()) })

		want := net.JoinHostPort(address, strconv.Itoa(port))
		Eventually(func(g Gomega) string {
			fw := &firewallv1alpha1.Firewall{}
			g.Expect(seedA.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "fw-metrics"}, fw)).To(Succeed())
			g.Expect(fw.Status.AgentStatus).NotTo(BeNil())
			return fw.Status.AgentStatus.MetricsAddress
		}).WithTimeout(time.Minute).Should(Equal(want))
		conn, err := net.Dial("tcp", want)
		Expect(err).NotTo(HaveOccurred(), "the agent serves where it says")
		Expect(conn.Close()).To(Succeed())
	})
})
