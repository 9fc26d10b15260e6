package agent_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/agent"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/droplog"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/metrics"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/nftables"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/ruleset"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/netns"
	"github.com/metal-firewall/gardener-extension-firewall/test/framework"
)

// droptailerImage is the receiver's image in the shoots of these tests; no
// kubelet runs it, the test runs the receiver itself.
const droptailerImage = "registry.invalid/firewall-agent:test"

// receiverOut is the receiver's stdout: JSON lines.
type receiverOut struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (r *receiverOut) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.b.Write(p)
}

// lines returns the printed events and the sum of the lost counts.
func (r *receiverOut) lines() (events []map[string]any, lost uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, l := range strings.Split(strings.TrimSpace(r.b.String()), "\n") {
		var m map[string]any
		if l == "" || json.Unmarshal([]byte(l), &m) != nil {
			continue
		}
		if n, ok := m["lost"].(float64); ok {
			lost += uint64(n)
			continue
		}
		events = append(events, m)
	}
	return events, lost
}

// counter reads a counter of the agent's metrics, summed over the label
// values given (all when none).
func counter(m *metrics.Metrics, name, label string, values ...string) float64 {
	families, err := m.Gather()
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	sum := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, metric := range f.GetMetric() {
			for _, l := range metric.GetLabel() {
				if l.GetName() == label && (len(values) == 0 || contains(values, l.GetValue())) {
					sum += metric.GetCounter().GetValue()
				}
			}
		}
	}
	return sum
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// startReceiver runs the receiver on the loopback with the shoot's
// firewall/firewall-drop ServiceAccount (only the RBAC of the shoot
// ManagedResource) and the certificate cert (self-signed when nil), and
// returns its output and URL.
func startReceiver(ctx SpecContext, admin client.Client, agentKubeconfig []byte, cert *tls.Certificate) (*receiverOut, string) {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: droplog.ReceiverName, Namespace: "firewall"}}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	Expect(admin.SubResource("token").Create(ctx, sa, tr)).To(Succeed())
	cfg, err := clientcmd.RESTConfigFromKubeConfig(agentKubeconfig)
	Expect(err).NotTo(HaveOccurred())
	cfg.BearerToken = tr.Status.Token
	cs, err := kubernetes.NewForConfig(cfg)
	Expect(err).NotTo(HaveOccurred())
	out := &receiverOut{}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	srvCtx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var getCert func(*tls.ClientHelloInfo) (*tls.Certificate, error)
	if cert != nil {
		getCert = func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return cert, nil }
	}
	go func() {
		done <- droplog.Serve(srvCtx, l, &droplog.Receiver{Client: cs, AllowedUsers: []string{"system:serviceaccount:kube-system:firewall-agent"},
			Out: out, Log: slog.New(slog.NewTextHandler(GinkgoWriter, nil))}, getCert)
	}()
	DeferCleanup(func() { cancel(); Expect(<-done).To(Succeed()) })
	return out, "https://" + l.Addr().String() + droplog.EventsPath
}

// startDropAgent runs the agent on the firewall of t with the shoot
// kubeconfig and the config's dropLog section, and waits until its forward
// chain logs the default deny to the NFLOG group. The receiver listens on
// the loopback, which no EndpointSlice may name: dropLog names its URL.
func startDropAgent(t *topology, kubeconfig []byte, dropLog string) *metrics.Metrics {
	GinkgoHelper()
	dir, kubeconfigPath := writeShootKubeconfig(kubeconfig)
	cfgPath := filepath.Join(dir, "config.yaml")
	writeConfig(cfgPath, fmt.Sprintf(shootAgentConfig, kubeconfigPath)+"dropLog: "+dropLog+"\n")
	log := slog.New(slog.NewTextHandler(GinkgoWriter, nil))
	m := metrics.New("v-droplog-test", nil, log)
	a := &agent.Agent{ConfigPath: cfgPath, Applier: nftables.NewProgrammer(t.fw.Path()), Log: log, Metrics: m, NFLogNetNS: t.fw.Path(),
		PollInterval: 200 * time.Millisecond, SeedInterval: 300 * time.Millisecond, Version: "v-droplog-test"}
	stopAgent := framework.RunInBackground(a.Run)
	DeferCleanup(func() { Expect(stopAgent()).To(Succeed()) })
	Eventually(func() (string, error) { return t.fw.Exec("nft", "list", "chain", "inet", "firewall-agent", "forward") }).
		WithTimeout(30 * time.Second).Should(ContainSubstring(`log prefix "drop forward default-deny" group 10`))
	return m
}

// udpFlood sends n UDP datagrams from ns to addr, ports 20000 upwards.
func udpFlood(ns *netns.NS, addr string, n int) {
	Expect(ns.Do(func() error {
		c, err := net.ListenUDP("udp4", nil)
		if err != nil {
			return err
		}
		defer func() { _ = c.Close() }()
		payload := make([]byte, 32)
		dst := &net.UDPAddr{IP: net.ParseIP(addr)}
		for i := range n {
			dst.Port = 20000 + i%1000
			if _, err := c.WriteToUDP(payload, dst); err != nil {
				return err
			}
		}
		return nil
	})).To(Succeed())
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

var _ = Describe("firewall agent drop log", func() {
	It("finds the receiver through its EndpointSlice, and authenticates with the agent's shoot credential", func(ctx SpecContext) {
		admin, kubeconfig := startShoot(ctx)
		port := int32(droplog.ReceiverPort)
		Expect(admin.Create(ctx, &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Name: droplog.ReceiverName + "-x1", Namespace: "firewall", Labels: map[string]string{discoveryv1.LabelServiceName: droplog.ReceiverName}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints: []discoveryv1.Endpoint{
				{Addresses: []string{"192.0.2.9"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false)}},
				{Addresses: []string{"192.0.2.10"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}},
			},
			Ports: []discoveryv1.EndpointPort{{Name: ptr.To(droplog.ReceiverPortName), Port: &port}},
		})).To(Succeed())
		_, path := writeShootKubeconfig(kubeconfig)
		shoot := &droplog.Shoot{Kubeconfig: path, Namespace: "firewall"}
		Expect(shoot.Endpoint(ctx)).To(Equal("https://192.0.2.10:8443" + droplog.EventsPath))

		By("giving the shoot credential's token, which the receiver reviews, and minting none")
		Expect(shoot.Token(ctx)).To(Equal(bearerToken(kubeconfig)))
	})

	It("sends nothing, not its token either, to a receiver without a certificate of the CA the shoot publishes", func(ctx SpecContext) {
		t := newTopology()
		admin, kubeconfig := startShoot(ctx)
		out, url := startReceiver(ctx, admin, kubeconfig, nil)

		m := startDropAgent(t, kubeconfig, fmt.Sprintf("{receiverURL: %q}", url))

		udpFlood(t.node, outsideV4, 3)
		Eventually(func() float64 {
			return counter(m, "firewall_agent_droplog_lost_events_total", "reason", droplog.LostSend)
		}).
			WithTimeout(10*time.Second).Should(BeNumerically(">=", 1), "the batch for an unverified receiver is lost")
		events, lost := out.lines()
		Expect(events).To(BeEmpty())
		Expect(lost).To(BeZero(), "no request reached it")
	})

	It("delivers real drops to the shoot's receiver with their context, and counts what a flood loses", func(ctx SpecContext) {
		t := newTopology()
		admin, kubeconfig := startShoot(ctx)
		out, url := startReceiver(ctx, admin, kubeconfig, &shootReceiverCert)

		m := startDropAgent(t, kubeconfig, fmt.Sprintf("{ratePerSecond: 100000, queueSize: 1000, logAcceptedConnections: true, receiverURL: %q}", url))

		By("a dropped UDP datagram and a dropped IPv6 TCP connection reach the receiver within seconds")
		udpFlood(t.node, outsideV4, 1)
		expectDropped(t.node, outsideV6, 8080)
		find := func(g Gomega, src, dst, proto string, port float64, context ...string) {
			if len(context) == 0 {
				context = []string{"drop forward default-deny"}
			}
			events, _ := out.lines()
			g.Expect(events).To(ContainElement(And(
				HaveKeyWithValue("source", src), HaveKeyWithValue("destination", dst), HaveKeyWithValue("protocol", proto),
				HaveKeyWithValue("destinationPort", port), HaveKeyWithValue("context", context[0]),
				HaveKeyWithValue("action", strings.Fields(context[0])[0]), HaveKeyWithValue("firewall", "fw-0"),
				HaveKeyWithValue("inInterface", "int0"), HaveKeyWithValue("outInterface", "ext0"),
			)))
		}
		Eventually(func(g Gomega) { find(g, nodeV4, outsideV4, "udp", 20000) }).WithTimeout(10 * time.Second).Should(Succeed())
		Eventually(func(g Gomega) { find(g, nodeV6, outsideV6, "tcp", 8080) }).WithTimeout(10 * time.Second).Should(Succeed())

		By("with logAcceptedConnections, a connection a policy allows shows as accepted")
		serve(t.outside, "::", 8080)
		Expect(admin.Create(ctx, &fwv1alpha1.ClusterwideNetworkPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "allow-web", Namespace: "firewall"},
			Spec: fwv1alpha1.PolicySpec{Egress: []fwv1alpha1.EgressRule{{To: []fwv1alpha1.IPBlock{{CIDR: "203.0.113.0/24"}},
				Ports: []fwv1alpha1.PolicyPort{{Protocol: "TCP", Port: ptr.To[int32](8080)}}}}},
		})).To(Succeed())
		Eventually(func() error { _, err := connect(t.node, outsideV4, 8080); return err }).WithTimeout(20 * time.Second).Should(Succeed())
		Eventually(func(g Gomega) { find(g, nodeV4, outsideV4, "tcp", 8080, ruleset.AcceptPrefixNew) }).WithTimeout(10 * time.Second).Should(Succeed())

		By("a flood of 100,000 drops: the queue stays bounded and every loss is counted and reported")
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		cpu0, start := cpuTime(), time.Now()
		udpFlood(t.node, outsideV4, 100000)
		sent := time.Since(start)
		// Everything read is either delivered or reported lost to the receiver.
		Eventually(func(g Gomega) {
			events, lost := out.lines()
			read := counter(m, "firewall_agent_droplog_events_total", "action")
			kernel := counter(m, "firewall_agent_droplog_lost_events_total", "reason", droplog.LostKernel)
			g.Expect(float64(len(events)) + float64(lost)).To(Equal(read + kernel))
		}).WithTimeout(60 * time.Second).Should(Succeed())
		cpu := cpuTime() - cpu0
		runtime.GC()
		runtime.ReadMemStats(&after)
		events, lost := out.lines()
		queueFull := counter(m, "firewall_agent_droplog_lost_events_total", "reason", droplog.LostQueueFull)
		Expect(queueFull).To(BeNumerically(">", 0), "a queue of 1,000 cannot hold the flood")
		Expect(lost).To(BeNumerically(">=", uint64(queueFull)))
		AddReportEntry("drop log flood", fmt.Sprintf(
			"100000 datagrams sent in %s; kernel events read %.0f (rate limit 100000/s), delivered %d, lost %d (queue-full %.0f, kernel-overrun %.0f); test process CPU %s (agent, receiver and sender together), heap in use after GC %d KiB -> %d KiB (the receiver and its printed lines included), total allocated %d MiB",
			sent.Round(time.Millisecond), counter(m, "firewall_agent_droplog_events_total", "action"), len(events), lost, queueFull,
			counter(m, "firewall_agent_droplog_lost_events_total", "reason", droplog.LostKernel), cpu.Round(time.Millisecond),
			before.HeapInuse>>10, after.HeapInuse>>10, (after.TotalAlloc-before.TotalAlloc)>>20))
		Expect(counter(m, "firewall_agent_droplog_lost_events_total", "reason", droplog.LostSend)).To(BeZero())
	})
})

// bearerToken is the token of the kubeconfig's current context.
func bearerToken(kubeconfig []byte) string {
	GinkgoHelper()
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	Expect(err).NotTo(HaveOccurred())
	return cfg.BearerToken
}
