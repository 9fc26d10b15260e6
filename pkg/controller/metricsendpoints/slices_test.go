package metricsendpoints_test

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/metricsendpoints"
)

var _ = Describe("the reported metrics address", func() {
	reported := func(addr string) *firewallv1alpha1.Firewall {
		return &firewallv1alpha1.Firewall{Status: firewallv1alpha1.FirewallStatus{AgentStatus: &firewallv1alpha1.AgentStatus{MetricsAddress: addr}}}
	}

	DescribeTable("is published when it is a unicast address and a port",
		func(addr, want string) {
			got, err := metricsendpoints.MetricsAddress(reported(addr))
			Expect(err).NotTo(HaveOccurred())
			Expect(got.String()).To(Equal(want))
		},
		Entry("IPv4", "10.0.1.1:2112", "10.0.1.1:2112"),
		Entry("IPv6", "[fd00::1]:9100", "[fd00::1]:9100"),
		Entry("IPv4 in IPv6", "[::ffff:10.0.1.1]:2112", "10.0.1.1:2112"),
	)

	DescribeTable("is refused, naming the field and the value, when a scrape must not go there",
		func(addr string) {
			_, err := metricsendpoints.MetricsAddress(reported(addr))
			Expect(err).To(MatchError(ContainSubstring("status.agentStatus.metricsAddress")))
			Expect(len(err.Error())).To(BeNumerically("<", 200))
		},
		Entry("loopback", "127.0.0.1:2112"),
		Entry("unspecified", "0.0.0.0:2112"),
		Entry("link-local", "[fe80::1]:2112"),
		Entry("link-local with a zone", "[fe80::1%eth0]:2112"),
		Entry("multicast", "224.0.0.1:2112"),
		Entry("port 0", "10.0.1.1:0"),
		Entry("no port", "10.0.1.1"),
		Entry("a name", "metrics.example.com:2112"),
		Entry("a long value", strings.Repeat("9", 10000)),
	)

	It("is nothing when none is reported", func() {
		got, err := metricsendpoints.MetricsAddress(&firewallv1alpha1.Firewall{})
		Expect(err).NotTo(HaveOccurred())
		Expect(got.IsValid()).To(BeFalse())
	})
})
