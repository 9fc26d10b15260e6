package framework

import (
	"context"
	"sync/atomic"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/machine"
)

// CountingProvider counts the machines created through it, so that a
// migration can show there was never a second firewall.
type CountingProvider struct {
	machine.Provider
	created atomic.Int32
}

// Create counts and creates.
func (p *CountingProvider) Create(ctx context.Context, fw *firewallv1alpha1.Firewall, files []machine.File) (*machine.Machine, error) {
	p.created.Add(1)
	return p.Provider.Create(ctx, fw, files)
}

// Created is the number of machines created so far.
func (p *CountingProvider) Created() int32 { return p.created.Load() }
