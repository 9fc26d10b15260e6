package metalapi_test

import (
	"context"
	"sync"

	"github.com/metal-stack/metal-go/api/client/firewall"
	metalmachine "github.com/metal-stack/metal-go/api/client/machine"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/metal-firewall/gardener-extension-firewall/test/metalapi"
)

// slowHardware boots a machine only when told to, and counts the boots of
// each machine ID that run at the same time.
type slowHardware struct {
	mu      sync.Mutex
	running map[string]int
	most    int
	release chan struct{}
}

func (h *slowHardware) Boot(ctx context.Context, b metalapi.BootSpec) error {
	h.mu.Lock()
	h.running[b.MachineID]++
	h.most = max(h.most, h.running[b.MachineID])
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		h.running[b.MachineID]--
		h.mu.Unlock()
	}()
	select {
	case <-h.release:
	case <-ctx.Done():
	}
	return nil
}

func (h *slowHardware) Halt(string) error { return nil }

var _ = Describe("a machine freed while it boots", func() {
	It("is not allocated again before its boot ended, so the hardware never boots one machine twice at a time", func(ctx SpecContext) {
		hw := &slowHardware{running: map[string]int{}, release: make(chan struct{})}
		opts := metalapi.Inventory(project)
		opts.Hardware = hw
		server, err := metalapi.New(opts)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(server.Close)
		DeferCleanup(func() { close(hw.release) })
		edit := newClient(server.URL, "Metal-Edit", metalapi.EditKey)

		first, err := edit.Firewall.AllocateFirewall(firewall.NewAllocateFirewallParamsWithContext(ctx).WithBody(allocation(nil)), nil)
		Expect(err).NotTo(HaveOccurred())
		_, err = edit.Machine.FreeMachine(metalmachine.NewFreeMachineParamsWithContext(ctx).WithID(*first.Payload.ID), nil)
		Expect(err).NotTo(HaveOccurred())
		for range 3 {
			next, err := edit.Firewall.AllocateFirewall(firewall.NewAllocateFirewallParamsWithContext(ctx).WithBody(allocation(nil)), nil)
			Expect(err).NotTo(HaveOccurred())
			Expect(*next.Payload.ID).NotTo(Equal(*first.Payload.ID))
		}
		hw.mu.Lock()
		defer hw.mu.Unlock()
		Expect(hw.most).To(Equal(1))
	})
})
