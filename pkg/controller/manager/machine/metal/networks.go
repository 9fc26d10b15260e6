package metal

import (
	"context"
	"fmt"
	"slices"

	"github.com/metal-stack/metal-go/api/client/network"
	"k8s.io/utils/ptr"

	agentconfigv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/metalclient"
)

// InterfaceOf is the interface of a metal-stack firewall into a network
// with the given VRF: metal-networker names it vrf<vrf>.
func InterfaceOf(vrf int64) string {
	return agentconfigv1alpha1.MetalNetwork("", vrf).Interface
}

// attachment is what the machine's networks mean for its userdata.
type attachment struct {
	// networks map the network IDs to the machine's interfaces.
	networks []agentconfigv1alpha1.Network
	// defaultRouteVRF is the VRF device of the network that holds the
	// default route, as os-installer finds it (the network whose
	// destination prefixes hold 0.0.0.0/0 or ::/0); empty when none does.
	defaultRouteVRF string
}

// networks looks each network up in the metal-api for its VRF, which names
// the machine's interfaces into it. Networks without a VRF (the underlay,
// which the metal-api adds itself) have no entry.
func (p *Provider) networks(ctx context.Context, ids []string) (attachment, error) {
	var out attachment
	for _, id := range ids {
		resp, err := p.api.Network.FindNetwork(network.NewFindNetworkParamsWithContext(ctx).WithTimeout(p.timeout).WithID(id), nil)
		if err := metalclient.Wrap(fmt.Sprintf("looking up network %q", id), err); err != nil {
			return attachment{}, err
		}
		n := resp.Payload
		if n.Vrf == 0 || ptr.Deref(n.Underlay, false) {
			continue
		}
		network := agentconfigv1alpha1.MetalNetwork(id, n.Vrf)
		out.networks = append(out.networks, network)
		if out.defaultRouteVRF == "" && (slices.Contains(n.Destinationprefixes, "0.0.0.0/0") || slices.Contains(n.Destinationprefixes, "::/0")) {
			out.defaultRouteVRF = network.Interface
		}
	}
	return out, nil
}
