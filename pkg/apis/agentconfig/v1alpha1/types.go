package v1alpha1

import (
	"path"

	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
)

// Source names.
const (
	SourceStatic = "static"
	SourceSeed   = "seed"
	SourceShoot  = "shoot"
	SourceMetal  = "metal"
)

// Config is the agent's configuration file.
type Config struct {
	// Name is the firewall's name; the hostname when empty.
	Name string `json:"name,omitempty"`
	// Sources say how to reach each place rules can come from.
	Sources Sources `json:"sources"`
	// Controllers say which source each controller reads. A controller that
	// is not listed is off.
	Controllers Controllers `json:"controllers"`
	// Networks map metal network IDs to this machine's interfaces, so that
	// SNAT rules and rate limits may name a network (as a Firewall from the
	// seed does) instead of an interface.
	Networks []Network `json:"networks,omitempty"`
	// DNS turns on the DNS proxy that enforces the policies' toFQDNs.
	DNS *DNS `json:"dns,omitempty"`
	// DropLog ships dropped packets to the shoot; off when unset (the kernel
	// log then has at most 10 drops per second).
	DropLog *DropLog `json:"dropLog,omitempty"`
	// Metrics serves the agent's metrics on its internal address, for the
	// shoot's Prometheus.
	Metrics *Metrics `json:"metrics,omitempty"`
	// Routing announces the Firewall's distance to the fabric through FRR.
	Routing *Routing `json:"routing,omitempty"`
}

// Network is one metal network the machine is attached to. On a metal-stack
// firewall the kernel names one network differently per netfilter hook: a
// packet from the network enters the forward hook on the VRF device
// (vrf<vrf>), a packet to it leaves through the VLAN interface (vlan<vrf>),
// which postrouting sees (metal-stack's own rules match the same names).
type Network struct {
	// ID is the metal network ID, e.g. "internet".
	ID string `json:"id"`
	// Interface is the machine's interface that packets from that network
	// arrive on, as the forward hook sees it: rate limits match it, and the
	// agent's listeners for the network bind to it. E.g. "vrf104009".
	Interface string `json:"interface"`
	// OutInterface is the interface that packets into that network leave
	// by, as the postrouting hook sees it: SNAT rules match it. E.g.
	// "vlan104009". Interface when empty.
	OutInterface string `json:"outInterface,omitempty"`
}

// InterfaceOf returns the interface packets of a network ID arrive on, and
// whether the network is known.
func (cfg *Config) InterfaceOf(networkID string) (string, bool) {
	for _, n := range cfg.Networks {
		if n.ID == networkID {
			return n.Interface, true
		}
	}
	return "", false
}

// OutInterfaceOf returns the interface packets into a network ID leave by
// (OutInterface, else Interface), and whether the network is known.
func (cfg *Config) OutInterfaceOf(networkID string) (string, bool) {
	for _, n := range cfg.Networks {
		if n.ID == networkID {
			if n.OutInterface != "" {
				return n.OutInterface, true
			}
			return n.Interface, true
		}
	}
	return "", false
}

// Sources are the places rules come from.
type Sources struct {
	Seed   *SeedSource   `json:"seed,omitempty"`
	Shoot  *ShootSource  `json:"shoot,omitempty"`
	Static *StaticSource `json:"static,omitempty"`
	Metal  *MetalSource  `json:"metal,omitempty"`
}

// SeedSource is the seed cluster the firewall belongs to.
type SeedSource struct {
	// BootstrapKubeconfig holds the short-lived bootstrap token.
	BootstrapKubeconfig string `json:"bootstrapKubeconfig,omitempty"`
	// Kubeconfig is where the agent keeps its certificate-based seed kubeconfig.
	Kubeconfig string `json:"kubeconfig,omitempty"`
	// IdentityKey is where the agent keeps its identity key (ECDSA P-256,
	// 0600), generated on first use; default: agent.key beside Kubeconfig.
	// The seed pins its public half, so the file must outlive restarts.
	IdentityKey string `json:"identityKey,omitempty"`
	// Namespace is the shoot's namespace in the seed.
	Namespace string `json:"namespace"`
}

// ShootSource is the shoot cluster behind the firewall.
type ShootSource struct {
	// Kubeconfig is the path of the kubeconfig that reaches the shoot. With
	// AccessSecret, the agent writes it (0600) from the seed and keeps it
	// fresh; without, it is the admin's file.
	Kubeconfig string `json:"kubeconfig,omitempty"`
	// AccessSecret is the Secret in the seed namespace (sources.seed) whose
	// `kubeconfig` Gardener's TokenRequestor keeps filled with the agent's
	// short-lived shoot token.
	AccessSecret string `json:"accessSecret,omitempty"`
	// Namespace holds the ClusterwideNetworkPolicies and, after a control
	// plane migration, the agent's new bootstrap kubeconfig.
	Namespace string `json:"namespace"`
}

// MetalSource is the metal-api, where this firewall's allocation holds its
// rules (firewall_rules), networks and addresses (metal-stack MEP-16). The
// agent finds its machine by project and name (the allocation's name, which
// is the firewall's name) and polls it.
type MetalSource struct {
	// URL is the metal-api's base URL.
	URL string `json:"url"`
	// HMAC is the HMAC key itself (MEP-16's shape). Exactly one of hmac and
	// hmacFile is set; a file keeps the key out of the config.
	HMAC string `json:"hmac,omitempty"`
	// HMACFile is the path of a file holding the HMAC key; the agent reads
	// it (at most 4 KiB) on every request, so a rotated key needs no restart.
	HMACFile string `json:"hmacFile,omitempty"`
	// Type is the HMAC auth type: Metal-View, the only one the agent takes
	// (it only reads; a firewall's key is readable by whoever is root on it).
	// Metal-View when empty.
	Type string `json:"type,omitempty"`
	// ProjectID is the metal project of the firewall.
	ProjectID string `json:"projectID"`
	// AllowHTTP accepts an http:// URL: the HMAC-signed requests and the
	// answers (the firewall's rules) then cross the network unencrypted.
	// https only when false.
	AllowHTTP bool `json:"allowHTTP,omitempty"`
}

// MetalAuthTypeView is the one HMAC auth type the agent takes.
const MetalAuthTypeView = "Metal-View"

// StaticSource holds rules directly in the file, so the agent works without
// any API.
type StaticSource struct {
	// Firewall is what the firewall controller would read from the Firewall.
	Firewall *fwv1alpha1.FirewallTrafficSpec `json:"firewall,omitempty"`
	// CWNP is one policy with the ClusterwideNetworkPolicy spec schema.
	CWNP *fwv1alpha1.PolicySpec `json:"cwnp,omitempty"`
	// Agent is the agent version to run, for controllers.firewall.selfUpdate.
	Agent *AgentRelease `json:"agent,omitempty"`
}

// Controllers select a source per controller.
type Controllers struct {
	Firewall *Controller `json:"firewall,omitempty"`
	CWNP     *Controller `json:"cwnp,omitempty"`
	Service  *Controller `json:"service,omitempty"`
	Monitor  *Controller `json:"monitor,omitempty"`
}

// Controller configures one controller.
type Controller struct {
	// Source is the name of the source the controller reads.
	Source string `json:"source"`
	// SelfUpdate, on the firewall controller only, updates the agent to the
	// version its source names.
	SelfUpdate *SelfUpdate `json:"selfUpdate,omitempty"`
}

// IdentityKeyOf is where the agent keeps its identity key: IdentityKey, or
// agent.key beside the seed kubeconfig; empty when neither is set.
func IdentityKeyOf(s *SeedSource) string {
	switch {
	case s.IdentityKey != "":
		return s.IdentityKey
	case s.Kubeconfig != "":
		return path.Join(path.Dir(s.Kubeconfig), path.Base(IdentityKeyPath))
	}
	return ""
}

// DeliveryStateOf is where the agent keeps the delivery key pinned from its
// seed and the last delivery's generation: delivery.json beside its identity
// key; empty when that has no place.
func DeliveryStateOf(s *SeedSource) string {
	if key := IdentityKeyOf(s); key != "" {
		return path.Join(path.Dir(key), path.Base(DeliveryStatePath))
	}
	return ""
}
