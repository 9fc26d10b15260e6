package firewall

import (
	"time"

	"github.com/gardener/gardener/pkg/apis/utils/timewindow"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
)

var _ = Describe("maintenance", func() {
	It("holds back image and agent, and nothing else", func() {
		running := &firewallv1alpha1.FirewallSpec{Size: "s", Image: "fw-3.0", AgentVersion: "v1", AgentURL: "https://a/v1"}
		desired := &firewallv1alpha1.FirewallSpec{Size: "s", Image: "fw-3.1", AgentVersion: "v2", AgentURL: "https://a/v1", AgentSHA256: "ab",
			FirewallTrafficSpec: firewallv1alpha1.FirewallTrafficSpec{InternalPrefixes: []string{"10.0.0.0/8"}}}
		Expect(holdBack(desired, running)).To(Equal([]string{`image "fw-3.0" -> "fw-3.1"`, `agentVersion "v1" -> "v2"`, `agentSHA256 "" -> "ab"`}))
		Expect(desired.Image).To(Equal("fw-3.0"))
		Expect(desired.AgentVersion).To(Equal("v1"))
		Expect(desired.AgentSHA256).To(BeEmpty(), "the digest moves with the version it names")
		Expect(desired.InternalPrefixes).To(Equal([]string{"10.0.0.0/8"}), "rules pass")
		Expect(changes(running, desired)).To(BeEmpty())
	})

	It("allows a roll in the window, forced, or without a window only", func() {
		window, err := timewindow.ParseMaintenanceTimeWindow("220000+0000", "230000+0000")
		Expect(err).NotTo(HaveOccurred())
		in := time.Date(2026, 11, 24, 22, 30, 0, 0, time.UTC)
		out := in.Add(2 * time.Hour)
		ok, why := maintenance{window: window}.allows(in)
		Expect(ok).To(BeTrue())
		Expect(why).To(ContainSubstring("in the maintenance window"))
		ok, _ = maintenance{window: window}.allows(out)
		Expect(ok).To(BeFalse())
		ok, why = maintenance{window: window, forced: true}.allows(out)
		Expect(ok).To(BeTrue())
		Expect(why).To(ContainSubstring("force-update"))
		ok, _ = maintenance{}.allows(out)
		Expect(ok).To(BeTrue(), "no window known: at once")
	})
})
