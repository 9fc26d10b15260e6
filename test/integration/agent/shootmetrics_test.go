package agent_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
)

// shootMetricsConfig is configYAML with the networks named and the metrics
// served on the internal network's interface, int0.
const shootMetricsConfig = `name: fw-test
networks:
- {id: internal, interface: int0}
- {id: internet, interface: ext0}
metrics: {internalNetwork: internal, port: 2112}
sources:
  static:
    firewall:
      internalPrefixes: ["10.0.1.0/24", "fd00:1::/64"]
    cwnp:
      egress:
      - to: [{cidr: 203.0.113.0/24}]
        ports: [{protocol: TCP, port: 8080}]
controllers:
  firewall: {source: static}
  cwnp:     {source: static}
`

var _ = Describe("the agent's metrics for the shoot", func() {
	var (
		t         *topology
		logs      *gbytes.Buffer
		published string
	)

	BeforeEach(func() {
		t = newTopology()
		serve(t.outside, "::", 8080)
		cfgPath := filepath.Join(GinkgoT().TempDir(), "config.yaml")
		writeConfig(cfgPath, shootMetricsConfig)
		ctx, cancel := context.WithCancel(context.Background())
		DeferCleanup(cancel)
		logs = gbytes.NewBuffer()
		// No loopback listener: everything below goes through the internal one.
		cmd := exec.CommandContext(ctx, "ip", "netns", "exec", t.fw.Name, binary, "--config", cfgPath,
			"--poll-interval", "100ms", "--metrics-bind-address", "0")
		cmd.Stdout, cmd.Stderr = logs, logs
		Expect(cmd.Start()).To(Succeed())
		DeferCleanup(func() {
			_ = cmd.Process.Signal(os.Interrupt)
			_ = cmd.Wait()
		})
		serving := regexp.MustCompile(`"serving metrics to the shoot" address=(\S+)`)
		Eventually(func() []byte { return serving.Find(logs.Contents()) }).WithTimeout(10*time.Second).ShouldNot(BeNil(), func() string { return string(logs.Contents()) })
		published = string(serving.FindSubmatch(logs.Contents())[1])
	})

	It("serves the internal side on the published address and drops the external side", func() {
		Expect(published).To(Equal("10.0.1.1:2112"), "the first address of int0, the internal network's interface")

		By("a GET from the node's namespace, on the internal side")
		m := scrapeMetrics(t.node, published)
		Expect(m).To(HaveKeyWithValue(`firewall_agent_build_info{version="v0.0.0-test"}`, 1.0))
		Expect(m).To(HaveKeyWithValue(`firewall_agent_devices_up`, 1.0))
		Expect(m).To(HaveKey(`firewall_agent_device_receive_bytes_total{device="int0",side="internal"}`))
		Expect(m).To(HaveKey(`firewall_agent_device_transmit_bytes_total{device="ext0",side="external"}`))
		Expect(m).NotTo(HaveKey(ContainSubstring(`device="lo"`)), "only the config's networks")

		By("the outside, through the firewall to the published address: dropped by the guard")
		expectDropped(t.outside, "10.0.1.1", 2112)
		By("the outside, to the firewall's external address: dropped too")
		expectDropped(t.outside, fwExtV4, 2112)

		m = scrapeMetrics(t.node, published)
		Expect(m[`firewall_agent_rule_packets_total{rule="metrics-drop"}`]).To(BeNumerically(">=", 1), "the outside's SYN")
		Expect(m[`firewall_agent_rule_packets_total{rule="metrics-internal-v4"}`]).To(BeNumerically(">=", 2), "the node's scrapes")

		By("without the agent's table, the outside is refused instead of dropped: the socket is bound to int0 as well")
		_, err := t.fw.Exec("nft", "delete", "table", "inet", "firewall-agent")
		Expect(err).NotTo(HaveOccurred())
		for _, addr := range []string{"10.0.1.1", fwExtV4} {
			_, err = dial(t.outside, addr, 2112, time.Second)
			Expect(err).To(MatchError(ContainSubstring("connection refused")), addr)
		}
		By("while the node still gets through")
		scrapeMetrics(t.node, published)
	})

	It("counts the traffic per device and per side", func() {
		before := scrapeMetrics(t.node, published)
		const size = 256 << 10
		c, err := dial(t.node, outsideV4, 8080, 2*time.Second)
		Expect(err).NotTo(HaveOccurred())
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		// The server echoes after a first line with our address.
		go func() { _, _ = c.Write(bytes.Repeat([]byte("x"), size)) }()
		_, err = io.ReadFull(c, make([]byte, size))
		Expect(err).NotTo(HaveOccurred())

		after := scrapeMetrics(t.node, published)
		grew := func(series string) float64 { return after[series] - before[series] }
		Expect(grew(`firewall_agent_device_receive_bytes_total{device="int0",side="internal"}`)).To(BeNumerically(">=", size), "the node's upload")
		Expect(grew(`firewall_agent_device_transmit_bytes_total{device="ext0",side="external"}`)).To(BeNumerically(">=", size), "forwarded out")
		Expect(grew(`firewall_agent_device_receive_bytes_total{device="ext0",side="external"}`)).To(BeNumerically(">=", size), "the echo")
		Expect(grew(`firewall_agent_device_transmit_bytes_total{device="int0",side="internal"}`)).To(BeNumerically(">=", size), "the echo to the node")
		Expect(grew(`firewall_agent_device_receive_packets_total{device="int0",side="internal"}`)).To(BeNumerically(">", 0))
		Expect(grew(`firewall_agent_traffic_bytes_total{direction="in",side="internal"}`)).To(BeNumerically(">=", size))
		Expect(grew(`firewall_agent_traffic_bytes_total{direction="out",side="external"}`)).To(BeNumerically(">=", size))
		Expect(after).To(HaveKey(`firewall_agent_device_receive_drops_total{device="int0",side="internal"}`))
		Expect(after).To(HaveKey(`firewall_agent_device_transmit_errors_total{device="ext0",side="external"}`))
		fmt.Fprintf(GinkgoWriter, "int0 rx grew %.0f bytes\n", grew(`firewall_agent_device_receive_bytes_total{device="int0",side="internal"}`))
	})
})
