// Package metalsource is the agent's metal-api source (metal-stack MEP-16):
// the firewall's own allocation, read with a Metal-View HMAC key, gives the
// internal prefixes and SNAT of the firewall controller, the rules of the
// cwnp controller (firewall_rules) and the networks map.
package metalsource

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"time"

	metalapi "github.com/metal-stack/metal-go/api/client"
	"github.com/metal-stack/metal-go/api/client/firewall"
	"github.com/metal-stack/metal-go/api/models"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	agentconfigv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/v1alpha1"
	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/validation"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/metalclient"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/metalrules"
)

// DefaultTimeout bounds one metal-api call of the agent.
const DefaultTimeout = 10 * time.Second

// Source reads the firewall's allocation from the metal-api.
type Source struct {
	Config agentconfigv1alpha1.MetalSource
	// Name is the firewall's name: its allocation's name in the metal-api.
	Name string
	Log  *slog.Logger
	// Timeout bounds each call; DefaultTimeout when 0.
	Timeout time.Duration
	// Transport, if set, carries the requests (tests).
	Transport http.RoundTripper

	api *metalapi.MetalAPI
	// id is the machine, once found by project and name.
	id string
	// seen is what the last read that was taken converted (seenOf).
	seen []byte
}

// Allocation is what the agent enforces from its machine's allocation.
type Allocation struct {
	MachineID string
	// Firewall is the firewall controller's part: the private networks'
	// prefixes as internal prefixes, SNAT to the machine's addresses in
	// every external network with NAT.
	Firewall *fwv1alpha1.FirewallTrafficSpec
	// Networks map the allocation's networks to the machine's interfaces.
	Networks []agentconfigv1alpha1.Network
	// Policies are the cwnp controller's part: one policy per valid rule of
	// firewall_rules.
	Policies []*fwv1alpha1.PolicySpec
	// Ignored says which rules were left out and why.
	Ignored []string
}

// Read returns the allocation, or nil and no error when what it is
// converted from (the machine, its networks and firewall rules) is the same
// as at the last Read that returned one. An unreachable metal-api, an answer
// that is no allocation of this firewall, or one whose networks give no
// valid firewall spec is an error: the caller keeps what it enforces.
func (s *Source) Read(ctx context.Context) (*Allocation, error) {
	if s.api == nil {
		key := metalclient.StaticKey(s.Config.HMAC)
		if s.Config.HMACFile != "" {
			key = metalclient.KeyFile(s.Config.HMACFile)
		}
		api, err := metalclient.New(metalclient.Options{URL: s.Config.URL, AuthType: s.authType(), Key: key, Transport: s.Transport})
		if err != nil {
			return nil, err
		}
		s.api = api
	}
	fw, err := s.firewall(ctx)
	if err != nil {
		return nil, err
	}
	seen, err := seenOf(fw)
	if err != nil {
		return nil, err
	}
	if s.id == *fw.ID && bytes.Equal(seen, s.seen) {
		return nil, nil
	}
	a, err := s.convert(fw)
	if err != nil {
		return nil, err
	}
	s.id, s.seen = a.MachineID, seen
	return a, nil
}

// seenOf is what convert reads of fw. The allocation's `changed` time would
// not do: the metal-api gives it in milliseconds, and a change within the
// millisecond of the last read would go unseen until the next Forget.
func seenOf(fw *models.V1FirewallResponse) ([]byte, error) {
	return json.Marshal(struct {
		ID       string
		Networks []*models.V1MachineNetwork
		Rules    *models.V1FirewallRules
	}{*fw.ID, fw.Allocation.Networks, fw.Allocation.FirewallRules})
}

// Forget makes the next Read return the allocation even if it did not
// change: what the last one returned was not applied.
func (s *Source) Forget() { s.seen = nil }

func (s *Source) authType() string {
	if s.Config.Type == "" {
		return agentconfigv1alpha1.MetalAuthTypeView
	}
	return s.Config.Type
}

func (s *Source) timeout() time.Duration {
	if s.Timeout <= 0 {
		return DefaultTimeout
	}
	return s.Timeout
}

// firewall reads the machine by its ID once known, else finds it by
// project and name; it must be exactly one.
func (s *Source) firewall(ctx context.Context) (*models.V1FirewallResponse, error) {
	if s.id != "" {
		resp, err := s.api.Firewall.FindFirewall(firewall.NewFindFirewallParamsWithContext(ctx).WithTimeout(s.timeout()).WithID(s.id), nil)
		if err := metalclient.Wrap("reading firewall "+s.id, err); err != nil {
			if metalclient.StatusCode(err) == http.StatusNotFound {
				// Freed? Find it again by name next time.
				s.id = ""
			}
			return nil, err
		}
		return s.checked(resp.Payload)
	}
	resp, err := s.api.Firewall.FindFirewalls(firewall.NewFindFirewallsParamsWithContext(ctx).WithTimeout(s.timeout()).WithBody(&models.V1FirewallFindRequest{
		AllocationProject: s.Config.ProjectID, AllocationName: s.Name,
	}), nil)
	if err := metalclient.Wrap("finding this firewall by project and name", err); err != nil {
		return nil, err
	}
	switch n := len(resp.Payload); n {
	case 0:
		return nil, fmt.Errorf("the metal-api has no firewall named %q in project %s", s.Name, s.Config.ProjectID)
	case 1:
		return s.checked(resp.Payload[0])
	default:
		return nil, fmt.Errorf("the metal-api has %d firewalls named %q in project %s: cannot tell which is this one", n, s.Name, s.Config.ProjectID)
	}
}

// checked refuses an answer that is not this firewall's allocation.
func (s *Source) checked(fw *models.V1FirewallResponse) (*models.V1FirewallResponse, error) {
	switch {
	case fw == nil || fw.ID == nil || fw.Allocation == nil:
		return nil, errors.New("the metal-api answered without an allocated firewall")
	case ptr.Deref(fw.Allocation.Project, "") != s.Config.ProjectID:
		return nil, fmt.Errorf("machine %s is allocated to project %q, not %s", *fw.ID, ptr.Deref(fw.Allocation.Project, ""), s.Config.ProjectID)
	case ptr.Deref(fw.Allocation.Name, "") != s.Name:
		return nil, fmt.Errorf("machine %s is allocated as %q, not %q", *fw.ID, ptr.Deref(fw.Allocation.Name, ""), s.Name)
	}
	return fw, nil
}

// convert turns the allocation into what the controllers contribute.
func (s *Source) convert(fw *models.V1FirewallResponse) (*Allocation, error) {
	a := &Allocation{MachineID: *fw.ID, Firewall: &fwv1alpha1.FirewallTrafficSpec{}}
	for _, n := range fw.Allocation.Networks {
		if n == nil || n.Networkid == nil || ptr.Deref(n.Underlay, false) {
			continue
		}
		network := agentconfigv1alpha1.MetalNetwork(*n.Networkid, ptr.Deref(n.Vrf, 0))
		if ptr.Deref(n.Vrf, 0) != 0 {
			a.Networks = append(a.Networks, network)
		}
		switch {
		case ptr.Deref(n.Private, false):
			a.Firewall.InternalPrefixes = append(a.Firewall.InternalPrefixes, n.Prefixes...)
		case ptr.Deref(n.Nat, false) && ptr.Deref(n.Vrf, 0) != 0:
			a.Firewall.EgressRules = append(a.Firewall.EgressRules, fwv1alpha1.EgressRuleSNAT{Interface: network.OutInterface, IPs: slices.Clone(n.Ips)})
		}
	}
	if errs := validation.ValidateFirewallTrafficSpec(a.Firewall, field.NewPath("allocation"), false); len(errs) > 0 {
		return nil, fmt.Errorf("machine %s: the networks of its allocation give no valid firewall spec: %w", a.MachineID, errs.ToAggregate())
	}
	policies, skipped := metalrules.ToPolicies(fw.Allocation.FirewallRules)
	for _, sk := range skipped {
		a.Ignored = append(a.Ignored, sk.Rule+": "+sk.Reason)
	}
	for _, p := range policies {
		if errs := validation.ValidatePolicySpec(p, field.NewPath("firewall_rules")); len(errs) > 0 {
			a.Ignored = append(a.Ignored, p.Description+": "+errs.ToAggregate().Error())
			continue
		}
		a.Policies = append(a.Policies, p)
	}
	return a, nil
}
