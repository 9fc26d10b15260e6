// Package metal is the machine provider for metal-stack: a firewall machine
// is allocated in the metal-api (POST /v1/firewall/allocate), found by its
// ID or by the tags that name its Firewall, and freed again. The client is
// metal-go, signed with the metal-api's HMAC scheme.
package metal

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	metalapi "github.com/metal-stack/metal-go/api/client"
	"github.com/metal-stack/metal-go/api/client/firewall"
	metalmachine "github.com/metal-stack/metal-go/api/client/machine"
	"github.com/metal-stack/metal-go/api/models"
	"k8s.io/utils/ptr"

	agentconfigv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/v1alpha1"
	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/machine"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/metalclient"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/metalrules"
)

// Options configure the metal provider.
type Options struct {
	// URL is the metal-api's base URL.
	URL string
	// AuthType is the HMAC auth type; Metal-Edit may allocate and free.
	AuthType string
	// Key returns the HMAC key (metalclient.KeyFile reads it from the
	// mounted Secret on every request, so a rotated key needs no restart).
	Key func() ([]byte, error)
	// Timeout bounds each metal-api call. Default 30s.
	Timeout time.Duration
	// Transport, if set, carries the requests (tests).
	Transport http.RoundTripper
	// AnnounceBy is how the firewalls' agents announce a new distance to
	// the fabric (agentconfig's routing.announceBy); the agent's default,
	// a session reset, when empty.
	AnnounceBy string
}

// DefaultTimeout is the default of Options.Timeout.
const DefaultTimeout = 30 * time.Second

// Provider implements machine.Provider with the metal-api.
type Provider struct {
	api        *metalapi.MetalAPI
	timeout    time.Duration
	announceBy string
	// nodeNetworks are the node networks found (NodeNetwork).
	nodeNetworks nodeNetworks
}

var _ machine.Provider = &Provider{}

// New returns a provider; it checks the options, and the key once, but
// sends nothing: the metal-api's answers show on the Firewalls.
func New(opts Options) (*Provider, error) {
	if opts.Key == nil {
		return nil, errors.New("metal provider: no HMAC key")
	}
	if _, err := opts.Key(); err != nil {
		return nil, fmt.Errorf("metal provider: %w", err)
	}
	if !slices.Contains(metalclient.AuthTypes, opts.AuthType) {
		return nil, fmt.Errorf("metal provider: HMAC auth type %q is none of %v", opts.AuthType, metalclient.AuthTypes)
	}
	api, err := metalclient.New(metalclient.Options{URL: opts.URL, AuthType: opts.AuthType, Key: opts.Key, Transport: opts.Transport})
	if err != nil {
		return nil, fmt.Errorf("metal provider: %w", err)
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	return &Provider{api: api, timeout: opts.Timeout, announceBy: opts.AnnounceBy}, nil
}

// Find looks the machine up by the ID in the Firewall's status, then by the
// tags that name the Firewall. A machine whose allocation no longer belongs
// to the Firewall (freed and allocated again) is not it.
func (p *Provider) Find(ctx context.Context, fw *firewallv1alpha1.Firewall) (*machine.Machine, error) {
	if ms := fw.Status.MachineStatus; ms != nil && ms.MachineID != "" {
		resp, err := p.api.Firewall.FindFirewall(firewall.NewFindFirewallParamsWithContext(ctx).WithTimeout(p.timeout).WithID(ms.MachineID), nil)
		err = metalclient.Wrap("finding firewall "+ms.MachineID, err)
		switch {
		case metalclient.StatusCode(err) == http.StatusNotFound:
			// Freed, or never a firewall: search by tags below.
		case err != nil:
			return nil, err
		default:
			if m := toMachine(resp.Payload); m != nil && machine.MatchesTags(m, fw) {
				return m, nil
			}
		}
	}
	resp, err := p.api.Firewall.FindFirewalls(firewall.NewFindFirewallsParamsWithContext(ctx).WithTimeout(p.timeout).WithBody(&models.V1FirewallFindRequest{
		AllocationName:    fw.Name,
		AllocationProject: fw.Spec.Project,
		Tags:              tags(fw),
	}), nil)
	if err := metalclient.Wrap("searching the firewall by its tags", err); err != nil {
		return nil, err
	}
	var found []*machine.Machine
	for _, f := range resp.Payload {
		if m := toMachine(f); m != nil && machine.MatchesTags(m, fw) {
			found = append(found, m)
		}
	}
	switch len(found) {
	case 0:
		return nil, nil
	case 1:
		return found[0], nil
	}
	ids := make([]string, 0, len(found))
	for _, m := range found {
		ids = append(ids, m.ID)
	}
	sort.Strings(ids)
	return nil, fmt.Errorf("%d machines carry the tags of Firewall %s/%s (%s): free all but one in the metal-api", len(found), fw.Namespace, fw.Name, strings.Join(ids, ", "))
}

// Create allocates a firewall in one call: size, image, partition, project,
// networks, hostname, SSH keys, the tags that name the Firewall, the
// Ignition userdata (with the agent config's networks and routing, the agent's units and,
// with agentSHA512, the agent's download) and the initial rules. An answer
// of the metal-api that refuses (4xx) is a plain error; no answer, a timeout
// or a 5xx may have allocated it (machine.InDoubtError).
func (p *Provider) Create(ctx context.Context, fw *firewallv1alpha1.Firewall, userdata []machine.File) (*machine.Machine, error) {
	attached, err := p.networks(ctx, fw.Spec.Networks)
	if err != nil {
		return nil, err
	}
	// metal-stack's firewall announces the shoot's routes with FRR: the
	// agent announces its distance there.
	if userdata, err = machine.WithMachine(userdata, attached.networks, &agentconfigv1alpha1.Routing{AnnounceBy: p.announceBy}); err != nil {
		return nil, err
	}
	setup := Setup{DefaultRouteVRF: attached.defaultRouteVRF}
	if s := fw.Spec; s.AgentSHA512 != "" {
		setup.Release = &Release{Version: s.AgentVersion, URL: s.AgentURL, SHA256: s.AgentSHA256, SHA512: s.AgentSHA512}
	}
	ignition, err := Userdata(userdata, setup)
	if err != nil {
		return nil, err
	}
	req := &models.V1FirewallCreateRequest{
		Name:        fw.Name,
		Hostname:    fw.Name,
		Description: fmt.Sprintf("firewall of %s, created by gardener-extension-firewall", fw.Namespace),
		Sizeid:      ptr.To(fw.Spec.Size),
		Imageid:     ptr.To(fw.Spec.Image),
		Partitionid: ptr.To(fw.Spec.Partition),
		Projectid:   ptr.To(fw.Spec.Project),
		// The spec requires the array: none is [], never null.
		SSHPubKeys: append([]string{}, fw.Spec.SSHPublicKeys...),
		Tags:       tags(fw),
		UserData:   base64.StdEncoding.EncodeToString(ignition),
	}
	for _, n := range fw.Spec.Networks {
		req.Networks = append(req.Networks, &models.V1MachineAllocationNetwork{Networkid: ptr.To(n), Autoacquire: ptr.To(true)})
	}
	if fw.Spec.InitialRules != nil {
		if req.FirewallRules, err = metalrules.FromPolicy(fw.Spec.InitialRules); err != nil {
			return nil, fmt.Errorf("spec.initialRules: %w", err)
		}
	}
	resp, err := p.api.Firewall.AllocateFirewall(firewall.NewAllocateFirewallParamsWithContext(ctx).WithTimeout(p.timeout).WithBody(req), nil)
	if err = metalclient.Wrap("allocating a firewall", err); err != nil {
		if metalclient.Definite(err) {
			return nil, err
		}
		return nil, &machine.InDoubtError{Err: err}
	}
	m := toMachine(resp.Payload)
	if m == nil {
		return nil, &machine.InDoubtError{Err: errors.New("the metal-api answered the allocation without an allocated machine")}
	}
	return m, nil
}

// Delete frees the machine; a machine the metal-api does not know is gone.
func (p *Provider) Delete(ctx context.Context, id string) error {
	_, err := p.api.Machine.FreeMachine(metalmachine.NewFreeMachineParamsWithContext(ctx).WithTimeout(p.timeout).WithID(id), nil)
	err = metalclient.Wrap("freeing machine "+id, err)
	if metalclient.StatusCode(err) == http.StatusNotFound {
		return nil
	}
	return err
}

// tags are machine.Tags as the metal-api holds them, key=value, sorted.
func tags(fw *firewallv1alpha1.Firewall) []string {
	var out []string
	for k, v := range machine.Tags(fw) {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}
