package agent_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/agent"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/metrics/metricstest"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/nftables"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/ruleset"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/atomicfile"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/netns"
)

// configYAML allows egress to the outside host on 8080 (v4 and v6) and ingress
// from it to the node on 30080; extra is appended to the egress items.
func configYAML(extraEgress string, fwExtra string) string {
	return fmt.Sprintf(`name: fw-test
sources:
  static:
    firewall:
      internalPrefixes: ["10.0.1.0/24", "fd00:1::/64"]
      egressRules: [{interface: ext0, ips: [%s]}]%s
    cwnp:
      egress:
      - to: [{cidr: 203.0.113.0/24, except: [203.0.113.0/31]}, {cidr: 203.0.113.2/32}, {cidr: "2001:db8:1::/64"}]
        ports: [{protocol: TCP, port: 8080}]
%s      ingress:
      - from: [{cidr: 203.0.113.0/24}, {cidr: "2001:db8:1::/64"}]
        ports: [{protocol: TCP, port: 30080}]
controllers:
  firewall: {source: static}
  cwnp:     {source: static}
`, fwExtV4, fwExtra, extraEgress)
}

func writeConfig(path, content string) {
	// Write and rename, as config management does, so a reader never sees half a file.
	ExpectWithOffset(1, atomicfile.Write(path, []byte(content), 0o600)).To(Succeed())
}

var _ = Describe("firewall agent in network namespaces", func() {
	var (
		t       *topology
		cfgPath string
		a       *agent.Agent
		prog    *nftables.Programmer
	)

	BeforeEach(func() {
		t = newTopology()
		cfgPath = filepath.Join(GinkgoT().TempDir(), "config.yaml")
		writeConfig(cfgPath, configYAML("", ""))
		prog = nftables.NewProgrammer(t.fw.Path())
		a = &agent.Agent{ConfigPath: cfgPath, Applier: prog, Log: slog.New(slog.NewTextHandler(GinkgoWriter, nil))}
		for _, port := range []int{8080, 9090} {
			serve(t.outside, "::", port)
		}
		for _, port := range []int{30080, 30081} {
			serve(t.node, "::", port)
		}
	})

	apply := func() nftables.Result {
		res, err := a.ApplyOnce()
		ExpectWithOffset(1, err).NotTo(HaveOccurred())
		return res
	}
	listRuleset := func() string {
		out, err := t.fw.Exec("nft", "list", "ruleset")
		ExpectWithOffset(1, err).NotTo(HaveOccurred())
		return out
	}

	It("allows what the policies allow and drops the rest, IPv4 and IPv6", func() {
		By("forwarding everything before the agent runs")
		expectAllowed(t.node, outsideV4, 9090)

		Expect(apply().Mode).To(Equal(nftables.Full))

		By("egress")
		Expect(expectAllowed(t.node, outsideV4, 8080)).To(Equal(fwExtV4), "SNAT to the egress rule's IP")
		expectDropped(t.node, outsideV4, 9090)
		Expect(expectAllowed(t.node, outsideV6, 8080)).To(Equal(nodeV6), "no IPv6 address given: IPv6 is not translated")
		expectDropped(t.node, outsideV6, 9090)

		By("ingress")
		Expect(expectAllowed(t.outside, nodeV4, 30080)).To(Equal(outsideV4))
		expectDropped(t.outside, nodeV4, 30081)
		expectAllowed(t.outside, nodeV6, 30080)
		expectDropped(t.outside, nodeV6, 30081)

		By("no allowance from the outside to the outside's own port 8080 of the node")
		expectDropped(t.outside, nodeV4, 8080)

		By("logging drops with the prefix")
		Expect(listRuleset()).To(ContainSubstring(`log prefix "firewall-agent drop: "`))
	})

	It("honours except and 'no ports means all ports'", func() {
		// 203.0.113.0/31 is excepted but 203.0.113.2 is allowed: serve on .3 too.
		Expect(t.outside.IP("addr", "add", "203.0.113.3/24", "dev", "eth0")).To(Succeed())
		writeConfig(cfgPath, configYAML("      - to: [{cidr: 203.0.113.3/32}]\n", ""))
		apply()
		expectAllowed(t.node, "203.0.113.3", 9090)
		expectAllowed(t.node, outsideV4, 8080)
		expectDropped(t.node, outsideV4, 9090)
	})

	It("leaves foreign tables alone, keeps the old rules on a bad config, and re-applies idempotently", func() {
		_, err := t.fw.Exec("nft", "add table ip foreign; add chain ip foreign keep; add rule ip foreign keep counter")
		Expect(err).NotTo(HaveOccurred())
		apply()
		Expect(listRuleset()).To(ContainSubstring("table ip foreign"))

		before := listRuleset()
		Expect(apply().Mode).To(Equal(nftables.Unchanged))
		Expect(listRuleset()).To(Equal(before))

		writeConfig(cfgPath, strings.Replace(configYAML("", ""), "port: 8080", "port: 80800", 1))
		_, err = a.ApplyOnce()
		Expect(err).To(MatchError(ContainSubstring(`sources.static.cwnp.egress[0].ports[0].port: Invalid value: 80800`)))
		Expect(listRuleset()).To(Equal(before))
		expectAllowed(t.node, outsideV4, 8080)
		expectDropped(t.node, outsideV4, 9090)
	})

	It("keeps established connections and rule counters across rule changes", func() {
		apply()
		conn, err := dial(t.node, outsideV4, 8080, 2*time.Second)
		Expect(err).NotTo(HaveOccurred())
		r := bufio.NewReader(conn)
		_, err = r.ReadString('\n')
		Expect(err).NotTo(HaveOccurred())
		echo := func(msg string) {
			_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
			_, err := fmt.Fprintln(conn, msg)
			ExpectWithOffset(1, err).NotTo(HaveOccurred())
			line, err := r.ReadString('\n')
			ExpectWithOffset(1, err).NotTo(HaveOccurred(), "the established connection must survive")
			ExpectWithOffset(1, line).To(Equal(msg + "\n"))
		}
		echo("first")
		counters, err := prog.RuleCounters(ruleset.TableName)
		Expect(err).NotTo(HaveOccurred())
		Expect(counters["egress-v4"].Packets).To(BeNumerically(">=", 1), "the ranges' rules: span and shards")
		Expect(counters["established"].Packets).To(BeNumerically(">=", 3))

		By("removing the allowance: only set elements change")
		writeConfig(cfgPath, strings.Replace(configYAML("", ""), "port: 8080", "port: 8081", 1))
		res := apply()
		Expect(res.Mode).To(Equal(nftables.Elements))
		echo("after element update")
		expectDropped(t.node, outsideV4, 8080)
		after, err := prog.RuleCounters(ruleset.TableName)
		Expect(err).NotTo(HaveOccurred())
		Expect(after["egress-v4"]).To(Equal(counters["egress-v4"]), "counters survive an element update")
		Expect(after["established"].Packets).To(BeNumerically(">", counters["established"].Packets))

		By("changing a rule: the table is replaced, the connection stays")
		writeConfig(cfgPath, configYAML("", "\n      rateLimits: [{interface: ext0, rate: 50}]"))
		Expect(apply().Mode).To(Equal(nftables.Full))
		echo("after table replacement")
		replaced, err := prog.RuleCounters(ruleset.TableName)
		Expect(err).NotTo(HaveOccurred())
		Expect(replaced["egress-v4"]).To(Equal(after["egress-v4"]), "the new rules start from the old rules' counters")
		Expect(replaced["established"].Packets).To(BeNumerically(">", after["established"].Packets))
	})

	It("limits the rate of traffic arriving on an interface", func() {
		if _, err := exec.LookPath("iperf3"); err != nil {
			Fail("the rate limit test needs iperf3")
		}
		// The server's output goes to the test log, and a server that has exited (seen once in CI
		// as "connection refused" for 20 s) is started again before the next attempt.
		var server *exec.Cmd
		var exited chan struct{}
		startServer := func() {
			server = exec.Command("ip", "netns", "exec", t.outside.Name, "iperf3", "-s", "-p", "5201")
			server.Stdout, server.Stderr = GinkgoWriter, GinkgoWriter
			Expect(server.Start()).To(Succeed())
			done := make(chan struct{})
			exited = done
			go func(cmd *exec.Cmd) {
				_ = cmd.Wait()
				close(done)
			}(server)
		}
		startServer()
		DeferCleanup(func() {
			_ = server.Process.Kill()
			<-exited
		})
		allow5201 := "      - to: [{cidr: 203.0.113.2/32}]\n        ports: [{port: 5201}]\n"
		receive := func() float64 {
			var res struct {
				Error string `json:"error"`
				End   struct {
					SumReceived struct {
						BitsPerSecond float64 `json:"bits_per_second"`
					} `json:"sum_received"`
				} `json:"end"`
			}
			// A run that reports nothing received is iperf3 failing (it was
			// seen under load), not a figure: run it again.
			Eventually(func(g Gomega) {
				select {
				case <-exited:
					GinkgoWriter.Println("the iperf3 server had exited; starting it again")
					startServer()
					time.Sleep(200 * time.Millisecond)
				default:
				}
				out, err := t.node.Exec("iperf3", "-c", outsideV4, "-p", "5201", "-R", "-t", "2", "-J")
				res.Error, res.End.SumReceived.BitsPerSecond = "", 0
				if err != nil || json.Unmarshal([]byte(out), &res) != nil || res.Error != "" {
					// Only the last failure reaches the report: log each.
					GinkgoWriter.Printf("iperf3 client: %v\n%s\n", err, out)
				}
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(json.Unmarshal([]byte(out), &res)).To(Succeed())
				g.Expect(res.Error).To(BeEmpty())
				g.Expect(res.End.SumReceived.BitsPerSecond).To(BeNumerically(">", 0))
			}).WithTimeout(20 * time.Second).Should(Succeed())
			return res.End.SumReceived.BitsPerSecond / 8 / (1 << 20)
		}

		writeConfig(cfgPath, configYAML(allow5201, ""))
		apply()
		unlimited := receive()
		writeConfig(cfgPath, configYAML(allow5201, "\n      rateLimits: [{interface: ext0, rate: 1}]"))
		apply()
		limited := receive()
		GinkgoWriter.Printf("outside -> node: %.1f MiB/s unlimited, %.1f MiB/s limited to 1 MiB/s\n", unlimited, limited)
		// Bounds relative to the limit, not to this machine's veth speed: a
		// loaded CI machine carries far less than an idle one, but always more
		// than a few MiB/s without the limit.
		figures := fmt.Sprintf("%.1f MiB/s unlimited, %.1f MiB/s limited", unlimited, limited)
		Expect(unlimited).To(BeNumerically(">", 4), "without the limit the path carries well above it: "+figures)
		Expect(limited).To(BeNumerically("<", 2), "about the limit (TCP and the limiter overshoot a little): "+figures)
		Expect(limited).To(BeNumerically("<", unlimited/2), figures)
		counters, err := prog.RuleCounters(ruleset.TableName)
		Expect(err).NotTo(HaveOccurred())
		Expect(counters["ratelimit:ext0"].Packets).To(BeNumerically(">", 0))
	})

	Context("the built binary", func() {
		run := func(args ...string) (string, error) {
			out, err := exec.Command("ip", append([]string{"netns", "exec", t.fw.Name, binary}, args...)...).CombinedOutput()
			return string(out), err
		}

		It("prints its version and renders without changing anything", func() {
			out, err := run("--version")
			Expect(err).NotTo(HaveOccurred())
			Expect(out).To(Equal("firewall-agent v0.0.0-test\n"))

			out, err = run("render", "--config", cfgPath)
			Expect(err).NotTo(HaveOccurred())
			want, err := agent.Render(cfgPath)
			Expect(err).NotTo(HaveOccurred())
			Expect(out).To(Equal(want))
			Expect(listRuleset()).To(BeEmpty())
		})

		It("puts a SNAT address on its interface, recording it where --snat-address-record says", func() {
			record := filepath.Join(filepath.Dir(cfgPath), "snat.json")
			writeConfig(cfgPath, strings.Replace(configYAML("", ""), "ips: ["+fwExtV4+"]", "ips: [203.0.113.70]", 1))
			out, err := run("--last-good-ruleset", lastGoodPath(), "--config", cfgPath, "--once", "--snat-address-record", record)
			Expect(err).NotTo(HaveOccurred(), out)
			Expect(expectAllowed(t.node, outsideV4, 8080)).To(Equal("203.0.113.70"))
			Expect(os.ReadFile(record)).To(ContainSubstring(`"address":"203.0.113.70"`))
		})

		It("applies once, and refuses a bad config with a clear error and no change", func() {
			out, err := run("--last-good-ruleset", lastGoodPath(), "--config", cfgPath, "--once")
			Expect(err).NotTo(HaveOccurred(), out)
			Expect(out).To(ContainSubstring("mode=full"))
			expectAllowed(t.node, outsideV4, 8080)
			expectDropped(t.node, outsideV4, 9090)
			before := listRuleset()

			bad := filepath.Join(filepath.Dir(cfgPath), "bad.yaml")
			writeConfig(bad, strings.Replace(configYAML("", ""), "203.0.113.0/24", "203.0.113/24", 1))
			out, err = run("--last-good-ruleset", lastGoodPath(), "--config", bad, "--once")
			Expect(err).To(HaveOccurred())
			Expect(out).To(ContainSubstring(`sources.static.cwnp.egress[0].to[0].cidr: Invalid value: "203.0.113/24": invalid CIDR`))
			Expect(listRuleset()).To(Equal(before))

			writeConfig(bad, strings.NewReplacer("cwnp:     {source: static}", "cwnp:     {source: shoot}",
				"  static:\n", "  shoot: {namespace: firewall}\n  static:\n").Replace(configYAML("", "")))
			out, err = run("--last-good-ruleset", lastGoodPath(), "--config", bad, "--once")
			Expect(err).To(HaveOccurred())
			Expect(out).To(ContainSubstring("sources.shoot.kubeconfig: Required value: a controller reads the shoot"))
		})

		It("applies its rules when the metrics address is taken", func() {
			var l net.Listener
			Expect(t.fw.Do(func() error {
				var err error
				l, err = net.Listen("tcp", "127.0.0.1:2112")
				return err
			})).To(Succeed())
			DeferCleanup(l.Close)
			ctx, cancel := context.WithCancel(context.Background())
			DeferCleanup(cancel)
			logs := gbytes.NewBuffer()
			cmd := exec.CommandContext(ctx, "ip", "netns", "exec", t.fw.Name, binary, "--last-good-ruleset", lastGoodPath(), "--config", cfgPath)
			cmd.Stdout, cmd.Stderr = logs, logs
			Expect(cmd.Start()).To(Succeed())
			DeferCleanup(func() {
				_ = cmd.Process.Signal(os.Interrupt)
				_ = cmd.Wait()
			})
			Eventually(logs.Contents).WithTimeout(10 * time.Second).Should(And(
				ContainSubstring("cannot listen for metrics; the agent runs on and tries again"), ContainSubstring("mode=full")))
			expectAllowed(t.node, outsideV4, 8080)
			expectDropped(t.node, outsideV4, 9090)
		})

		It("runs, re-applies on change, keeps the rules on a bad config, and serves its metrics", func() {
			ctx, cancel := context.WithCancel(context.Background())
			DeferCleanup(cancel)
			logs := gbytes.NewBuffer()
			// The metrics listen on the firewall namespace's loopback, as on
			// a firewall by default.
			cmd := exec.CommandContext(ctx, "ip", "netns", "exec", t.fw.Name, binary, "--last-good-ruleset", lastGoodPath(), "--config", cfgPath, "--poll-interval", "100ms",
				"--metrics-bind-address", "127.0.0.1:2112")
			cmd.Stdout, cmd.Stderr = logs, logs
			Expect(cmd.Start()).To(Succeed())
			DeferCleanup(func() {
				_ = cmd.Process.Signal(os.Interrupt)
				_ = cmd.Wait()
			})
			Eventually(logs.Contents).WithTimeout(10 * time.Second).Should(ContainSubstring("mode=full"))
			expectDropped(t.node, outsideV4, 9090)

			m := scrapeMetrics(t.fw, "127.0.0.1:2112")
			Expect(m).To(HaveKeyWithValue(`firewall_agent_build_info{version="v0.0.0-test"}`, 1.0))
			Expect(m).To(HaveKeyWithValue(`firewall_agent_applies_total{result="changed"}`, 1.0), "the start's full apply")
			Expect(m).To(HaveKeyWithValue(`firewall_agent_source_up{source="static"}`, 1.0))
			Expect(m).To(HaveKeyWithValue(`firewall_agent_ruleset_set_elements{set="egress_v4_exact"}`, 0.0), "no single host on a single port yet")
			Expect(m).To(HaveKeyWithValue(`firewall_agent_rule_counters_up`, 1.0))
			dropped := m[`firewall_agent_rule_packets_total{rule="drop"}`]
			Expect(dropped).To(BeNumerically(">=", 1), "the dropped SYN to 9090")
			exactBefore := m[`firewall_agent_rule_packets_total{rule="egress-exact-v4"}`]

			writeConfig(cfgPath, configYAML("      - to: [{cidr: 203.0.113.2/32}]\n        ports: [{port: 9090}]\n", ""))
			Eventually(logs.Contents).WithTimeout(5 * time.Second).Should(ContainSubstring("mode=elements"))
			expectAllowed(t.node, outsideV4, 9090)

			By("counting the element update and the packets of the allowed connection")
			m = scrapeMetrics(t.fw, "127.0.0.1:2112")
			Expect(m).To(HaveKeyWithValue(`firewall_agent_applies_total{result="changed"}`, 2.0))
			Expect(m).To(HaveKeyWithValue(`firewall_agent_ruleset_set_elements{set="egress_v4_exact"}`, 1.0), "203.0.113.2 on 9090")
			Expect(m[`firewall_agent_rule_packets_total{rule="egress-exact-v4"}`]).To(BeNumerically(">", exactBefore),
				"the SYN to 9090 matched the hash set's rule; element updates keep the counters")
			Expect(m[`firewall_agent_rule_packets_total{rule="drop"}`]).To(BeNumerically(">=", dropped))
			Expect(m[`firewall_agent_apply_duration_seconds_count`]).To(Equal(2.0))
			Expect(m[`firewall_agent_last_successful_apply_timestamp_seconds`]).To(BeNumerically(">", 0))

			before := listRuleset()
			writeConfig(cfgPath, "sources: {static: {cwnp: {egress: [{to: [{cidr: nonsense}]}]}}}\n")
			Eventually(logs.Contents).WithTimeout(5 * time.Second).Should(ContainSubstring("config changed but is invalid"))
			Expect(string(logs.Contents())).To(ContainSubstring(`invalid CIDR`))
			Consistently(func() string { return stripCounters(listRuleset()) }).WithTimeout(time.Second).Should(Equal(stripCounters(before)))
			expectAllowed(t.node, outsideV4, 9090)
			Expect(cmd.ProcessState).To(BeNil(), "the agent keeps running")
			Expect(scrapeMetrics(t.fw, "127.0.0.1:2112")).To(HaveKeyWithValue(`firewall_agent_source_up{source="static"}`, 0.0),
				"the config file is refused")
		})
	})
})

// scrapeMetrics gets /metrics from addr inside ns and parses it. The
// connection is made in the namespace; the request goes over it.
func scrapeMetrics(ns *netns.NS, addr string) map[string]float64 {
	GinkgoHelper()
	var c net.Conn
	Expect(ns.Do(func() error {
		var err error
		c, err = net.DialTimeout("tcp", addr, 2*time.Second)
		return err
	})).To(Succeed())
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	_, err := fmt.Fprintf(c, "GET /metrics HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", addr)
	Expect(err).NotTo(HaveOccurred())
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = resp.Body.Close() }()
	Expect(resp.StatusCode).To(Equal(http.StatusOK))
	body, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	m, err := metricstest.Parse(string(body))
	Expect(err).NotTo(HaveOccurred(), string(body))
	return m
}

// stripCounters removes counter values, which traffic changes.
func stripCounters(s string) string {
	var b bytes.Buffer
	for _, line := range strings.Split(s, "\n") {
		if i := strings.Index(line, "counter packets"); i >= 0 {
			line = line[:i] + "counter"
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}
