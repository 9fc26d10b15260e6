package metal

import (
	"context"
	"fmt"
	"strconv"

	"github.com/metal-stack/metal-go/api/client/network"
	"k8s.io/utils/ptr"

	agentconfigv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/metalclient"
)

// InterfaceOf is the interface of a metal-stack firewall into a network
// with the given VRF: metal-networker names it vrf<vrf>.
func InterfaceOf(vrf int64) string {
	return "vrf" + strconv.FormatInt(vrf, 10)
}

// networks looks each network up in the metal-api for its VRF, which names
// the machine's interface into it. Networks without a VRF (the underlay,
// which the metal-api adds itself) have no entry.
func (p *Provider) networks(ctx context.Context, ids []string) ([]agentconfigv1alpha1.Network, error) {
	var out []agentconfigv1alpha1.Network
	for _, id := range ids {
		resp, err := p.api.Network.FindNetwork(network.NewFindNetworkParamsWithContext(ctx).WithTimeout(p.timeout).WithID(id), nil)
		if err := metalclient.Wrap(fmt.Sprintf("looking up network %q", id), err); err != nil {
			return nil, err
		}
		if n := resp.Payload; n.Vrf != 0 && !ptr.Deref(n.Underlay, false) {
			out = append(out, agentconfigv1alpha1.Network{ID: id, Interface: InterfaceOf(n.Vrf)})
		}
	}
	return out, nil
}
