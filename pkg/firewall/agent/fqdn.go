package agent

import (
	"context"
	"fmt"
	"net/netip"
	"slices"

	agentconfigv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/v1alpha1"
	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/dnsproxy"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/fqdn"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/nftables"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/ruleset"
)

// FQDNApplier is an Applier that also keeps the DNS proxy's sets;
// *nftables.Programmer is one.
type FQDNApplier interface {
	Applier
	dnsproxy.Updater
	ReadFQDNSets() ([]nftables.FQDNSetContent, error)
}

// fqdnPolicies returns the policies with the toFQDNs the agent enforces:
// none without a DNS proxy (nothing would fill their sets), else the first
// limit distinct selectors, in the order of the policies. A policy that
// loses selectors is copied; the others are passed as they are.
func fqdnPolicies(policies []*fwv1alpha1.PolicySpec, dns *agentconfigv1alpha1.DNS) []*fwv1alpha1.PolicySpec {
	limit := 0
	if dns != nil {
		limit = dns.SelectorLimit()
	}
	seen := map[fqdn.Selector]bool{}
	out, cloned := policies, false
	for i, spec := range policies {
		if spec == nil {
			continue
		}
		var copied *fwv1alpha1.PolicySpec
		for j, rule := range spec.Egress {
			kept := rule.ToFQDNs[:0:0]
			for _, sel := range rule.ToFQDNs {
				s := fqdn.FromAPI(sel)
				if !seen[s] && len(seen) < limit {
					seen[s] = true
				}
				if seen[s] {
					kept = append(kept, sel)
				}
			}
			if len(kept) == len(rule.ToFQDNs) {
				continue
			}
			if copied == nil {
				copied = spec.DeepCopy()
				if !cloned {
					out, cloned = slices.Clone(policies), true
				}
				out[i] = copied
			}
			copied.Egress[j].ToFQDNs = kept
		}
	}
	return out
}

// withDNS adds the DNS redirect of the proxy's settings to rs.
func withDNS(rs *ruleset.Ruleset, dns *agentconfigv1alpha1.DNS) *ruleset.Ruleset {
	if dns == nil {
		return rs
	}
	var upstreams []netip.Addr
	for _, u := range dns.Upstreams {
		if a, err := netip.ParseAddr(u); err == nil {
			upstreams = append(upstreams, a)
		}
	}
	return ruleset.WithDNSRedirect(rs, ruleset.DNSRedirect{Upstreams: upstreams, Port: dns.ListenPort()})
}

// startDNSProxy starts the DNS proxy of cfg, from what the kernel's FQDN
// sets hold (a restart keeps them), and returns once it listens: the
// redirect may be in force from an earlier run already.
func (a *Agent) startDNSProxy(ctx context.Context, dns *agentconfigv1alpha1.DNS, devices []string) error {
	applier, ok := a.Applier.(FQDNApplier)
	if !ok {
		return fmt.Errorf("dns: the DNS proxy needs an applier that keeps FQDN sets")
	}
	var upstreams []netip.AddrPort
	for _, u := range dns.Upstreams {
		if addr, err := netip.ParseAddr(u); err == nil {
			upstreams = append(upstreams, netip.AddrPortFrom(addr.Unmap(), 53))
		}
	}
	p := dnsproxy.New(dnsproxy.Options{
		Upstreams: upstreams,
		Listen:    fmt.Sprintf(":%d", dns.ListenPort()),
		Devices:   devices,
		TTLFloor:  dns.TTLFloor(),
		Grace:     dns.GracePeriod(),
		Bounds: dnsproxy.Bounds{
			AddressesPerName: dns.AddressesPerName(),
			NamesPerSelector: dns.NamesPerSelector(),
			Addresses:        dns.AddressLimit(),
		},
		Updater:  applier,
		Observer: a.Metrics,
		Log:      a.Log.With("component", "dns-proxy"),
	})
	sets, err := applier.ReadFQDNSets()
	if err != nil {
		return fmt.Errorf("dns: reading the FQDN sets in force: %w", err)
	}
	p.Restore(sets)
	errs := make(chan error, 1)
	go func() { errs <- p.Run(ctx) }()
	if len(p.Addrs()) == 0 {
		return <-errs
	}
	go func() {
		if err := <-errs; err != nil {
			a.Log.Error("the DNS proxy stopped; the nodes' DNS through the firewall gets no answer", "error", err)
		}
	}()
	restored := 0
	for _, s := range sets {
		restored += len(s.Elements)
	}
	a.Log.Info("DNS proxy listening", "port", dns.ListenPort(), "upstreams", dns.Upstreams, "fqdnSetsRestored", len(sets), "addressesRestored", restored)
	a.dnsProxy, a.dnsConfig = p, dns
	return nil
}

// fqdnStatus is what the policy's status says about its FQDN selectors:
// for each (the first fwv1alpha1.MaxStatusFQDNs) the addresses allowed now,
// or why it is not enforced.
func (a *Agent) fqdnStatus(spec *fwv1alpha1.PolicySpec) []fwv1alpha1.FQDNSelectorStatus {
	var out []fwv1alpha1.FQDNSelectorStatus
	seen := map[fqdn.Selector]bool{}
	for _, rule := range spec.Egress {
		for _, sel := range rule.ToFQDNs {
			s := fqdn.FromAPI(sel)
			if seen[s] || len(out) == fwv1alpha1.MaxStatusFQDNs {
				continue
			}
			seen[s] = true
			st := fwv1alpha1.FQDNSelectorStatus{MatchName: sel.MatchName, MatchPattern: sel.MatchPattern}
			if a.dnsProxy == nil {
				st.Message = "not enforced: the firewall runs no DNS proxy (dns in the firewall's providerConfig), so names allow nothing"
				out = append(out, st)
				continue
			}
			now := a.dnsProxy.Status(s, fwv1alpha1.MaxStatusAddresses)
			st.Enforced, st.AddressCount, st.Message = now.Enforced, int32(now.Count), now.Bound
			for _, addr := range now.Addresses {
				st.Addresses = append(st.Addresses, addr.String())
			}
			if !now.Enforced {
				st.Message = fmt.Sprintf("not enforced: the firewall enforces at most %d distinct selectors (dns.maxSelectors)", a.dnsConfig.SelectorLimit())
			}
			out = append(out, st)
		}
	}
	return out
}

// proxyDevices are the interfaces the DNS proxy listens on: where the
// config's networks arrive (on metal-stack, each network's VRF device),
// since the agent may run bound to one VRF; none without networks (the
// proxy's sockets then bind to no interface).
func proxyDevices(cfg *agentconfigv1alpha1.Config) []string {
	var out []string
	for _, n := range cfg.Networks {
		if !slices.Contains(out, n.Interface) {
			out = append(out, n.Interface)
		}
	}
	return out
}
