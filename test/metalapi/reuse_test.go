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

// slowHardware boots and halts a machine only when told to, and counts the
// boots of each machine that run at the same time.
type slowHardware struct {
	mu            sync.Mutex
	booting       map[string]int
	most          int
	boots, halts  chan struct{}
	haltRequested chan string
}

func (h *slowHardware) Boot(ctx context.Context, b metalapi.BootSpec) error {
	h.mu.Lock()
	h.booting[b.MachineID]++
	h.most = max(h.most, h.booting[b.MachineID])
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		h.booting[b.MachineID]--
		h.mu.Unlock()
	}()
	select {
	case <-h.boots:
	case <-ctx.Done():
	}
	return nil
}

func (h *slowHardware) Halt(id string) error {
	select {
	case h.haltRequested <- id:
	default:
	}
	<-h.halts
	return nil
}

var _ = Describe("a machine freed while the hardware still runs it", func() {
	It("is freed at once, halted in the background, and not allocated again before its boot and halt ended", func(ctx SpecContext) {
		hw := &slowHardware{booting: map[string]int{}, boots: make(chan struct{}), halts: make(chan struct{}), haltRequested: make(chan string, 1)}
		opts := metalapi.Inventory(project)
		opts.Hardware = hw
		server, err := metalapi.New(opts)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(server.Close)
		edit := newClient(server.URL, "Metal-Edit", metalapi.EditKey)
		allocate := func() string {
			GinkgoHelper()
			resp, err := edit.Firewall.AllocateFirewall(firewall.NewAllocateFirewallParamsWithContext(ctx).WithBody(allocation(nil)), nil)
			Expect(err).NotTo(HaveOccurred())
			return *resp.Payload.ID
		}

		first := allocate()
		// Answered while the hardware has neither booted nor halted it.
		_, err = edit.Machine.FreeMachine(metalmachine.NewFreeMachineParamsWithContext(ctx).WithID(first), nil)
		Expect(err).NotTo(HaveOccurred())
		Eventually(hw.haltRequested).Should(Receive(Equal(first)))
		Expect(server.Allocated()).To(BeEmpty())
		for range 3 {
			Expect(allocate()).NotTo(Equal(first))
		}

		close(hw.boots)
		close(hw.halts)
		Eventually(allocate).Should(Equal(first), "the freed machine waits again once the hardware let it go")
		hw.mu.Lock()
		defer hw.mu.Unlock()
		Expect(hw.most).To(Equal(1))
	})
})
