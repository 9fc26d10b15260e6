package machine

import (
	"context"
	"fmt"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
)

// Unavailable is the provider of an extension whose machine provider could
// not be set up (e.g. a missing metal-api URL): every call fails with why,
// so that each Firewall says it in its conditions, while everything else of
// the extension (the acl) runs on.
type Unavailable struct {
	// Name is the provider that was asked for, e.g. "metal".
	Name string
	Err  error
}

var _ Provider = Unavailable{}

func (u Unavailable) err() error {
	return fmt.Errorf("the %s machine provider is not set up: %w", u.Name, u.Err)
}

// Find fails.
func (u Unavailable) Find(context.Context, *firewallv1alpha1.Firewall) (*Machine, error) {
	return nil, u.err()
}

// Create fails.
func (u Unavailable) Create(context.Context, *firewallv1alpha1.Firewall, []File) (*Machine, error) {
	return nil, u.err()
}

// Delete fails.
func (u Unavailable) Delete(context.Context, string) error { return u.err() }
