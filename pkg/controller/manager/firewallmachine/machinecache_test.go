package firewallmachine_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/firewallmachine"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/machine"
)

// findCounter counts the provider's Finds: each is a metal-api request.
type findCounter struct {
	machine.Provider
	finds int
}

func (f *findCounter) Find(ctx context.Context, fw *firewallv1alpha1.Firewall) (*machine.Machine, error) {
	f.finds++
	return f.Provider.Find(ctx, fw)
}

var _ = Describe("Reads of a booted machine", func() {
	It("asks the provider once per resync, not on every heartbeat, and again for a changed spec", func() {
		e := newEnv(newFirewall(), nil)
		counter := &findCounter{Provider: e.provider}
		e.r.Provider = counter
		e.reconcile()
		Expect(counter.finds).To(Equal(1), "none yet: created")
		e.reconcile()
		Expect(counter.finds).To(Equal(2), "the created machine, booted")

		// A heartbeat every 10 s for four minutes.
		for range 24 {
			e.clk.Step(10 * time.Second)
			e.heartbeat()
			e.reconcile()
		}
		Expect(counter.finds).To(Equal(2))
		Expect(e.firewall().Status.Phase).To(Equal(firewallv1alpha1.FirewallPhaseRunning))
		Expect(e.fw.Status.MachineStatus.MachineID).NotTo(BeEmpty())

		e.clk.Step(firewallmachine.DefaultMachineResync)
		e.heartbeat()
		e.reconcile()
		Expect(counter.finds).To(Equal(3), "the resync")

		e.update(func(fw *firewallv1alpha1.Firewall) {
			fw.Spec.InternalPrefixes = []string{"10.0.2.0/24"}
			fw.Generation++ // as the kube-apiserver does; the fake client does not
		})
		e.reconcile()
		Expect(counter.finds).To(Equal(4), "a changed spec")
		e.reconcile()
		Expect(counter.finds).To(Equal(4))
	})
})
