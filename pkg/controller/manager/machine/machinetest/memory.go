// Package machine holds a machine provider for controller tests: it keeps
// machines in memory and counts what it was asked to do, so a test can
// assert "exactly these machines, never a second one".
package machinetest

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/machine"
)

// Memory is an in-memory machine.Provider. Machines are provisioned at once.
type Memory struct {
	mu       sync.Mutex
	next     int
	machines map[string]*machine.Machine
	userdata map[string][]machine.File
	// created counts Create calls over the provider's life, per namespace of
	// the Firewall: specs sharing a provider count only their own.
	created map[string]int
}

var _ machine.Provider = &Memory{}

// NewMemory returns an empty provider.
func NewMemory() *Memory {
	return &Memory{machines: map[string]*machine.Machine{}, userdata: map[string][]machine.File{}, created: map[string]int{}}
}

// Find looks up by machine ID, then by name and tags, like a real provider.
func (p *Memory) Find(_ context.Context, fw *firewallv1alpha1.Firewall) (*machine.Machine, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if ms := fw.Status.MachineStatus; ms != nil && ms.MachineID != "" {
		if m, ok := p.machines[ms.MachineID]; ok {
			c := *m
			return &c, nil
		}
	}
	for _, m := range p.machines {
		if machine.MatchesTags(m, fw) {
			c := *m
			return &c, nil
		}
	}
	return nil, nil
}

// Create allocates a machine.
func (p *Memory) Create(_ context.Context, fw *firewallv1alpha1.Firewall, userdata []machine.File) (*machine.Machine, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.next++
	p.created[fw.Namespace]++
	m := &machine.Machine{ID: fmt.Sprintf("mem-%d", p.next), Name: fw.Name, Tags: machine.Tags(fw), Provisioned: true, AllocatedAt: time.Now(), Message: "in memory"}
	p.machines[m.ID] = m
	p.userdata[m.ID] = userdata
	c := *m
	return &c, nil
}

// Created is the number of Create calls over the provider's life.
func (p *Memory) Created() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, c := range p.created {
		n += c
	}
	return n
}

// CreatedIn is the number of Create calls for Firewalls in namespace.
func (p *Memory) CreatedIn(namespace string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.created[namespace]
}

// Delete releases a machine.
func (p *Memory) Delete(_ context.Context, id string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.machines, id)
	delete(p.userdata, id)
	return nil
}

// IDs lists the machines that exist, sorted.
func (p *Memory) IDs() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	ids := make([]string, 0, len(p.machines))
	for id := range p.machines {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// Names lists the Firewall names of the machines that exist, sorted.
func (p *Memory) Names() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	names := make([]string, 0, len(p.machines))
	for _, m := range p.machines {
		names = append(names, m.Name)
	}
	sort.Strings(names)
	return names
}

// Userdata returns the files a machine was created with.
func (p *Memory) Userdata(id string) []machine.File {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.userdata[id]
}
