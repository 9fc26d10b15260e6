package dnsproxy_test

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"time"

	"github.com/miekg/dns"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/dnsproxy"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/dnsproxy/dnsproxytest"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/netns"
	"github.com/metal-firewall/gardener-extension-firewall/test/roottest"
)

// On a metal-stack firewall the agent runs bound to the default route's
// VRF, and a query redirected in the tenant VRF reaches only a socket bound
// to that VRF's device. Here two links stand for two VRFs: the proxy
// answers on the links it listens on, and on no other.
var _ = Describe("the proxy's devices", func() {
	var client, fw *netns.NS

	BeforeEach(func() {
		if reason := roottest.SkipReason(); reason != "" {
			Skip(reason)
		}
		var err error
		suffix := fmt.Sprintf("%d-%d", os.Getpid(), GinkgoParallelProcess())
		client, err = netns.New("fwa-dnsdev-c-" + suffix)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(client.Delete)
		fw, err = netns.New("fwa-dnsdev-f-" + suffix)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(fw.Delete)
		Expect(netns.Veth(client, "cl-tenant", "10.61.0.2/24", fw, "tenant", "10.61.0.1/24")).To(Succeed())
		Expect(netns.Veth(client, "cl-other", "10.62.0.2/24", fw, "other", "10.62.0.1/24")).To(Succeed())
	})

	// run starts a proxy in the firewall's namespace on the given devices;
	// its upstream is on this host's loopback (the proxy's upstream sockets
	// are made outside the namespace here).
	run := func(devices ...string) {
		GinkgoHelper()
		upstream, err := dnsproxytest.Start("127.0.0.1:0", dnsproxytest.Answer("example.com. 60 IN A 192.0.2.10"))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(upstream.Close)
		p := dnsproxy.New(dnsproxy.Options{
			Upstreams: []netip.AddrPort{netip.MustParseAddrPort(upstream.Addr)}, Listen: ":10053", Devices: devices,
			TTLFloor: time.Second, Grace: time.Second, Bounds: defaultBounds, UpstreamTimeout: time.Second, Updater: &recorder{},
		})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- fw.Do(func() error { return p.Run(ctx) }) }()
		DeferCleanup(func() {
			cancel()
			Eventually(done).Should(Receive(BeNil()))
		})
		Expect(p.Addrs()).To(HaveLen(2 * len(devices)))
	}
	ask := func(server string) error {
		return client.Do(func() error {
			c := &dns.Client{Net: "udp", Timeout: time.Second}
			_, _, err := c.Exchange(new(dns.Msg).SetQuestion("example.com.", dns.TypeA), server)
			return err
		})
	}

	It("answers a query on a device it listens on, and none on another", func() {
		run("tenant")
		Expect(ask("10.61.0.1:10053")).To(Succeed())
		Expect(ask("10.62.0.1:10053")).NotTo(Succeed(), "no socket for this link")
	})

	It("listens on every device it is given", func() {
		run("tenant", "other")
		Expect(ask("10.61.0.1:10053")).To(Succeed())
		Expect(ask("10.62.0.1:10053")).To(Succeed())
	})
})
