package lab_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/test/lab"
)

// What the specs that measure with the streams share: the roll, the
// failover and the switch-over (distance_test.go, switchover_test.go).

// skipWithoutDistance skips a spec of the distance unless LAB_DISTANCE=true.
func skipWithoutDistance() {
	if !distanceSpecsEnabled() {
		Skip("the distance specs run with LAB_DISTANCE=true (issue #28: not yet passed in the lab)")
	}
}

// startStreams starts the streams, and iperf3's TCP flow once the
// firewall carries both directions; the timeline counts from the start.
func (e *labEnv) startStreams(ctx context.Context) (*lab.Streams, *timeline) {
	GinkgoHelper()
	streams, err := e.l.StartStreams(ctx)
	Expect(err).NotTo(HaveOccurred())
	steps := newTimeline(time.Now())
	DeferCleanup(func(ctx context.Context) { _, _ = streams.Stop(ctx) })
	Eventually(func(g Gomega) {
		toHost, toNode, err := streams.Report()
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(toHost.Received).To(BeNumerically(">", lab.StreamRate), "the firewall's agent applied the policy")
		g.Expect(toNode.Received).To(BeNumerically(">", lab.StreamRate))
	}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
	Expect(streams.StartIperf(ctx)).To(Succeed())
	return streams, steps
}

// bootedWithAgent is fw's lab machine once it booted and runs the agent.
func (e *labEnv) bootedWithAgent(ctx context.Context, g Gomega, fw *firewallv1alpha1.Firewall) *lab.Machine {
	m := e.hw.Machine(fw.Status.MachineStatus.MachineID)
	g.Expect(m).NotTo(BeNil(), "the lab booted the new machine")
	g.Expect(m.WaitBooted(ctx)).To(Equal("running"))
	g.Expect(e.exec(ctx, m, "systemctl is-active firewall-agent.service || true")).To(Equal("active"))
	return m
}

// waitHalted waits until m is off the leaf (its port deleted), calling
// poll (when set) at each look, and records it on the timeline under name.
func (e *labEnv) waitHalted(ctx context.Context, m *lab.Machine, name string, steps *timeline, poll func()) {
	GinkgoHelper()
	Eventually(func() error {
		if poll != nil {
			poll()
		}
		_, err := e.l.Run(ctx, "! ip link show "+m.Port()+" >/dev/null 2>&1")
		return err
	}).WithTimeout(3*time.Minute).WithPolling(time.Second).Should(Succeed(), "the old machine is halted")
	steps.record(name, "machine halted")
}

// streamOn waits until two seconds' worth of packets more arrived each way,
// so that what just happened is measured too.
func streamOn(streams *lab.Streams) {
	GinkgoHelper()
	toHost, toNode, err := streams.Report()
	Expect(err).NotTo(HaveOccurred())
	Eventually(func(g Gomega) {
		h, n, err := streams.Report()
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(h.Received).To(BeNumerically(">=", toHost.Received+2*lab.StreamRate))
		g.Expect(n.Received).To(BeNumerically(">=", toNode.Received+2*lab.StreamRate))
	}).WithTimeout(time.Minute).WithPolling(200 * time.Millisecond).Should(Succeed())
}

// reportStreams stops the streams and reports what they saw, with the
// firewalls' counters and the timeline when there are, as the report entry
// name; the figures come first, before a failure to stop: they are what a
// failed measurement is debugged by.
func reportStreams(ctx context.Context, streams *lab.Streams, name, title string, counters map[string]map[int]int, steps *timeline) lab.StreamsResult {
	GinkgoHelper()
	res, err := streams.Stop(ctx)
	report := describeStreams(title, res, counters)
	if steps != nil {
		report += "\n" + steps.String()
	}
	GinkgoWriter.Println(report)
	AddReportEntry(name, report)
	Expect(err).NotTo(HaveOccurred())
	return res
}
