package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"time"

	istionetworkingv1alpha3 "istio.io/client-go/pkg/apis/networking/v1alpha3"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/acl/envoy"
	aclv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/acl/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
	"github.com/metal-firewall/gardener-extension-firewall/test/framework"
)

// aclConfig is the shoot owner's allow-list, as users of the existing ACL
// extension write it.
const aclConfig = `{"rule":{"action":"ALLOW","type":"remote_ip","cidrs":["192.0.2.0/24","2001:db8::/32"]}}`

// reconciled matches a successful first reconciliation (Gardener calls it
// Create), a later one, or a restore.
var reconciled = regexp.MustCompile(`^(Create|Reconcile|Restore) Succeeded$`)

// enableACL enables the acl extension for the shoot in seed A.
func (d *demo) enableACL(ctx context.Context) error {
	var err error
	if d.acl, err = framework.Reconcile(ctx, d.seedA.c, shootNamespace, constants.ACLExtensionType, []byte(aclConfig)); err != nil {
		return err
	}
	d.n.say("Enabled the acl extension for the shoot: Extension %s/acl in seed A with providerConfig", shootNamespace)
	d.n.detail(aclConfig)
	if err := framework.WaitForLastOperation(ctx, d.seedA.c, d.acl, reconciled, time.Minute); err != nil {
		return err
	}
	if err := d.showACL(ctx, d.seedA); err != nil {
		return err
	}
	d.n.proved("the acl extension turned the shoot's allow-list, plus the seed's and shoot's own networks, into EnvoyFilters for the seed's Istio ingress gateway")
	return nil
}

// showACL reads what the acl extension reports and generated in a seed, and
// checks that every allowed CIDR is in each generated EnvoyFilter.
func (d *demo) showACL(ctx context.Context, s *seed) error {
	if err := s.c.Get(ctx, client.ObjectKeyFromObject(d.acl), d.acl); err != nil {
		return err
	}
	if d.acl.Status.ProviderStatus == nil {
		return fmt.Errorf("the acl Extension in %s reports no providerStatus", s.name)
	}
	st := &aclv1alpha1.ExtensionStatus{}
	if err := json.Unmarshal(d.acl.Status.ProviderStatus.Raw, st); err != nil {
		return err
	}
	if len(st.AllowedCIDRs) == 0 {
		return fmt.Errorf("the acl Extension in %s allows no CIDR", s.name)
	}
	d.n.say("The acl Extension in %s reports: %s for %s, hosts %s, ingress namespaces %s",
		s.name, st.Action, st.Type, strings.Join(st.Hosts, ", "), strings.Join(st.IngressNamespaces, ", "))
	d.n.detail(fmt.Sprintf("the rule's CIDRs:            %s\nalways allowed (seed and shoot networks from the Cluster): %s\neffectively allowed:         %s",
		strings.Join(st.RuleCIDRs, ", "), strings.Join(st.AlwaysAllowedCIDRs, ", "), strings.Join(st.AllowedCIDRs, ", ")))

	var filters []*istionetworkingv1alpha3.EnvoyFilter
	for _, mr := range []struct{ namespace, name string }{
		{shootNamespace, constants.ACLManagedResourceName},
	} {
		objs, err := framework.ManagedResourceObjects(ctx, s.c, mr.namespace, mr.name)
		if err != nil {
			return fmt.Errorf("ManagedResource %s/%s: %w", mr.namespace, mr.name, err)
		}
		filters = append(filters, envoyFilters(objs)...)
	}
	for _, ns := range st.IngressNamespaces {
		objs, err := framework.ACLSharedObjects(ctx, s.c, ns)
		if err != nil {
			return fmt.Errorf("the shared ManagedResources in %s: %w", ns, err)
		}
		for _, ef := range envoyFilters(objs) {
			// The root holds the listener filters and the dispatch to the shards, no CIDRs.
			if ef.Name != envoy.HTTPConnectEnvoyFilterName && strings.Contains(toJSONString(ef), "."+shootNamespace+".svc") {
				filters = append(filters, ef)
			}
		}
	}
	if len(filters) < 2 {
		return fmt.Errorf("%d EnvoyFilters generated in %s, want the shoot's and its shard of the shared one", len(filters), s.name)
	}
	for _, ef := range filters {
		content, err := json.Marshal(ef)
		if err != nil {
			return err
		}
		for _, cidr := range st.AllowedCIDRs {
			p, err := netip.ParsePrefix(cidr)
			if err != nil {
				return err
			}
			if !strings.Contains(string(content), fmt.Sprintf(`"address_prefix":%q`, p.Addr().String())) {
				return fmt.Errorf("EnvoyFilter %s/%s does not allow %s", ef.Namespace, ef.Name, cidr)
			}
		}
		d.n.say("EnvoyFilter %s/%s (%s) allows all %d CIDRs", ef.Namespace, ef.Name, describe(ef), len(st.AllowedCIDRs))
	}
	d.n.say("They are in seed ManagedResources for gardener-resource-manager to apply; no Istio runs on this host, so no Envoy loads them here")
	return nil
}

func envoyFilters(objs []client.Object) []*istionetworkingv1alpha3.EnvoyFilter {
	var out []*istionetworkingv1alpha3.EnvoyFilter
	for _, o := range objs {
		if ef, ok := o.(*istionetworkingv1alpha3.EnvoyFilter); ok {
			out = append(out, ef)
		}
	}
	return out
}

// describe names where an EnvoyFilter's patches apply: listeners and SNI
// host names, or listener ports.
func describe(ef *istionetworkingv1alpha3.EnvoyFilter) string {
	var where []string
	for _, p := range ef.Spec.ConfigPatches {
		l := p.GetMatch().GetListener()
		if l == nil {
			continue
		}
		var w string
		switch {
		case l.GetPortNumber() != 0 && l.GetFilterChain().GetSni() != "":
			w = fmt.Sprintf("port %d, SNI %s", l.GetPortNumber(), l.GetFilterChain().GetSni())
		case l.GetName() != "":
			w = "listener " + l.GetName()
		case l.GetPortNumber() != 0:
			w = fmt.Sprintf("port %d", l.GetPortNumber())
		default:
			continue
		}
		if !slices.Contains(where, w) {
			where = append(where, w)
		}
	}
	if len(where) == 0 {
		return "no listener match"
	}
	return strings.Join(where, "; ")
}

func toJSONString(o any) string {
	raw, _ := json.Marshal(o)
	return string(raw)
}
