package firewall

import (
	"context"
	"fmt"
	"slices"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/validation"
)

// NodeNetworks finds a shoot's node network in the machine provider's
// inventory (the metal provider: in the metal-api).
type NodeNetworks interface {
	// NodeNetwork returns the ID of the project's network whose prefix is
	// nodeCIDR; an error when there is not exactly one.
	NodeNetwork(ctx context.Context, project, nodeCIDR string) (string, error)
}

// resolveNetworks completes a providerConfig with what the shoot's nodes
// give, as gardener-extension-provider-metal does, where the shoot owner left
// it out: the node network (found by the shoot's spec.networking.nodes)
// among the networks, the nodes as internal prefixes, and the node network
// as the metrics' network. What the owner wrote wins. The result is
// validated as the Firewall spec it becomes; cfg is left as it was on error.
func (a *actuator) resolveNetworks(ctx context.Context, cfg *firewallv1alpha1.FirewallExtensionConfig, shoot *gardencorev1beta1.Shoot) (*firewallv1alpha1.FirewallExtensionConfig, error) {
	out := cfg.DeepCopy()
	nodes := ""
	if shoot != nil && shoot.Spec.Networking != nil && shoot.Spec.Networking.Nodes != nil {
		nodes = *shoot.Spec.Networking.Nodes
	}
	// A shoot without nodes (Gardener requires them on metal) keeps its
	// networks as written.
	if out.NodeNetwork == "" && a.config.NodeNetworks != nil && nodes != "" {
		id, err := a.config.NodeNetworks.NodeNetwork(ctx, out.Project, nodes)
		if err != nil {
			return nil, fmt.Errorf("providerConfig.nodeNetwork is unset: %w", err)
		}
		out.NodeNetwork = id
	}
	if out.NodeNetwork != "" {
		if !slices.Contains(out.Networks, out.NodeNetwork) {
			out.Networks = append(out.Networks, out.NodeNetwork)
		}
		if out.Metrics != nil && out.Metrics.InternalNetwork == "" {
			out.Metrics.InternalNetwork = out.NodeNetwork
		}
	}
	if len(out.InternalPrefixes) == 0 && nodes != "" {
		out.InternalPrefixes = []string{nodes}
	}
	if errs := validation.ValidateResolvedFirewallExtensionConfig(out, field.NewPath("providerConfig")); len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	return out, nil
}

// NodeNetworksOf is a machine provider's lookup of node networks, nil when it
// has none (the local provider, or one that is not set up).
func NodeNetworksOf(provider any) NodeNetworks {
	if nn, ok := provider.(NodeNetworks); ok {
		return nn
	}
	return nil
}
