package metal

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/metal-stack/metal-go/api/client/network"
	"github.com/metal-stack/metal-go/api/models"
	"k8s.io/utils/ptr"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/metalclient"
)

// NodeNetworkTTL is how long a node network found is used without asking
// again, as gardener-extension-provider-metal's worker caches it.
const NodeNetworkTTL = 15 * time.Minute

// nodeNetworks caches the node networks found, by project and prefix.
type nodeNetworks struct {
	mu    sync.Mutex
	found map[[2]string]foundNetwork
}

type foundNetwork struct {
	id      string
	expires time.Time
}

// NodeNetwork finds the shoot's private network as gardener-extension-
// provider-metal's worker does: the project's network whose prefix is the
// shoot's node CIDR (POST /v1/network/find). Not exactly one is an error
// that names what was looked up. A network found is used for NodeNetworkTTL.
func (p *Provider) NodeNetwork(ctx context.Context, project, nodeCIDR string) (string, error) {
	key := [2]string{project, nodeCIDR}
	now := time.Now()
	p.nodeNetworks.mu.Lock()
	if f, ok := p.nodeNetworks.found[key]; ok && now.Before(f.expires) {
		p.nodeNetworks.mu.Unlock()
		return f.id, nil
	}
	p.nodeNetworks.mu.Unlock()

	query := fmt.Sprintf("the network of project %q with prefix %s", project, nodeCIDR)
	resp, err := p.api.Network.FindNetworks(network.NewFindNetworksParamsWithContext(ctx).WithTimeout(p.timeout).WithBody(&models.V1NetworkFindRequest{
		Projectid: project,
		Prefixes:  []string{nodeCIDR},
	}), nil)
	if err := metalclient.Wrap("finding "+query, err); err != nil {
		return "", err
	}
	var ids []string
	for _, n := range resp.Payload {
		if n != nil && ptr.Deref(n.ID, "") != "" {
			ids = append(ids, *n.ID)
		}
	}
	switch len(ids) {
	case 0:
		return "", fmt.Errorf("finding %s in the metal-api: there is none", query)
	case 1:
	default:
		sort.Strings(ids)
		return "", fmt.Errorf("finding %s in the metal-api: there are %d (%s)", query, len(ids), strings.Join(ids[:min(len(ids), 4)], ", "))
	}
	p.nodeNetworks.mu.Lock()
	defer p.nodeNetworks.mu.Unlock()
	if p.nodeNetworks.found == nil {
		p.nodeNetworks.found = map[[2]string]foundNetwork{}
	}
	// Entries of shoots gone expire and are dropped on the next find.
	for k, f := range p.nodeNetworks.found {
		if !now.Before(f.expires) {
			delete(p.nodeNetworks.found, k)
		}
	}
	p.nodeNetworks.found[key] = foundNetwork{id: ids[0], expires: now.Add(NodeNetworkTTL)}
	return ids[0], nil
}
