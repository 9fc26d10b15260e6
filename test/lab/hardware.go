package lab

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/metal-stack/metal-go/api/models"

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
	// Images are what each firewall image (by the allocation's image ID)
	// brings besides metal-stack's own; an image not listed brings nothing.
	Images map[string]Image
	// FirewallRules are added to every allocation's firewall_rules as the
	// installer renders them: rules an operator's allocation may carry, that
	// the image's own table accepts (MEP-16).
	FirewallRules *models.V1FirewallRules
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
	if r := h.FirewallRules; r != nil {
		rules := &models.V1FirewallRules{}
		if alloc.FirewallRules != nil {
			rules.Egress, rules.Ingress = slices.Clone(alloc.FirewallRules.Egress), slices.Clone(alloc.FirewallRules.Ingress)
		}
		rules.Egress, rules.Ingress = append(rules.Egress, r.Egress...), append(rules.Ingress, r.Ingress...)
		alloc.FirewallRules = rules
	}
	var image Image
	if a := b.Firewall.Allocation; a != nil && a.Image != nil && a.Image.ID != nil {
		image = h.Images[*a.Image.ID]
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
	m, err := h.Lab.Install(ctx, name, image, in)
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
