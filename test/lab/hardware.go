package lab

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/metal-firewall/gardener-extension-firewall/test/metalapi"
	"github.com/metal-firewall/gardener-extension-firewall/test/metalimage"
)

// Hardware is the in-process metal-api's hardware in the lab: an allocated
// firewall is installed from exactly the allocation the metal-api holds
// (userdata included) and booted as a lab machine; it phones home once
// systemd in it has finished booting, as a real machine's LLDP does once
// its OS runs, whether or not the firewall works.
type Hardware struct {
	Lab *Lab
	// Image is what the firewall image brings besides metal-stack's own.
	Image Image
	// BootTimeout bounds one machine's boot; 5 minutes when zero.
	BootTimeout time.Duration

	mu       sync.Mutex
	machines map[string]*Machine
	booted   map[string]int
}

var _ metalapi.Hardware = &Hardware{}

// Boot installs and boots the machine and returns once it phoned home.
func (h *Hardware) Boot(ctx context.Context, b metalapi.BootSpec) error {
	timeout := h.BootTimeout
	if timeout == 0 {
		timeout = 5 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	alloc, err := metalimage.FromFirewall(b.Firewall)
	if err != nil {
		return err
	}
	in, err := metalimage.Install(alloc)
	if err != nil {
		return err
	}
	h.mu.Lock()
	if h.machines == nil {
		h.machines, h.booted = map[string]*Machine{}, map[string]int{}
	}
	h.booted[alloc.Hostname]++
	// A hostname comes back with a new allocation after a machine was
	// replaced: each boot gets a machine of its own in the lab.
	name := fmt.Sprintf("%s-%d", alloc.Hostname, h.booted[alloc.Hostname])
	h.mu.Unlock()
	m, err := h.Lab.Install(ctx, name, h.Image, in)
	if err != nil {
		return err
	}
	h.mu.Lock()
	h.machines[b.MachineID] = m
	h.mu.Unlock()
	if err := m.Boot(ctx); err != nil {
		return err
	}
	_, err = m.WaitBooted(ctx)
	return err
}

// Halt deletes the machine.
func (h *Hardware) Halt(machineID string) error {
	h.mu.Lock()
	m := h.machines[machineID]
	delete(h.machines, machineID)
	h.mu.Unlock()
	if m == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return m.Delete(ctx)
}

// Machine is the lab machine of a metal machine ID, nil when none.
func (h *Hardware) Machine(machineID string) *Machine {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.machines[machineID]
}
