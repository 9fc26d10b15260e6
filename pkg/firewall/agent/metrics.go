package agent

import (
	"context"
	"fmt"
	"net/netip"

	agentconfigv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/netdev"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/ruleset"
)

// metricsInterface is the interface of the config's metrics.internalNetwork,
// and whether the metrics are to be served there at all: an unmapped network
// serves nothing rather than refusing the rules.
func metricsInterface(cfg *agentconfigv1alpha1.Config) (string, bool) {
	if cfg.Metrics == nil {
		return "", false
	}
	return cfg.InterfaceOf(cfg.Metrics.InternalNetwork)
}

// withMetricsGuard adds the input rules of the metrics port when the
// metrics are served on the internal interface.
func withMetricsGuard(rs *ruleset.Ruleset, cfg *agentconfigv1alpha1.Config) *ruleset.Ruleset {
	iface, ok := metricsInterface(cfg)
	if !ok {
		return rs
	}
	return ruleset.WithMetricsGuard(rs, ruleset.MetricsGuard{Interface: iface, Port: cfg.Metrics.ListenPort()})
}

// metricsAddress is where the metrics are served to the shoot: the first
// address of the internal interface and the port; not valid when they are
// not to be served or the interface has no address yet.
func metricsAddress(cfg *agentconfigv1alpha1.Config, addresses func(string) ([]netip.Addr, error)) (netip.AddrPort, error) {
	if cfg.Metrics == nil {
		return netip.AddrPort{}, nil
	}
	iface, ok := metricsInterface(cfg)
	if !ok {
		return netip.AddrPort{}, fmt.Errorf("metrics.internalNetwork %q: no interface for this network in the config's networks", cfg.Metrics.InternalNetwork)
	}
	addrs, err := addresses(iface)
	if err != nil {
		return netip.AddrPort{}, err
	}
	if len(addrs) == 0 {
		return netip.AddrPort{}, fmt.Errorf("metrics: interface %q has no address yet", iface)
	}
	return netip.AddrPortFrom(addrs[0], cfg.Metrics.ListenPort()), nil
}

// serveInternalMetrics (re)binds the internal metrics listener to where the
// config says, or closes it; the published address follows with the next
// FirewallMonitor. A failure is logged: the rules never wait for metrics.
func (a *Agent) serveInternalMetrics(ctx context.Context, cfg *agentconfigv1alpha1.Config) {
	if a.Metrics == nil {
		return
	}
	if a.internalMetrics == nil {
		a.internalMetrics = &metricsServer{handler: a.Metrics.Handler(), log: a.Log}
	}
	networks := withMetalNetworks(cfg, a.in.Metal)
	addr, err := metricsAddress(networks, netdev.Addresses)
	if err != nil {
		a.internalMetrics.logOnce("not serving metrics on the internal address", err)
	}
	iface, _ := metricsInterface(networks)
	if err := a.internalMetrics.ensure(ctx, addr, iface); err != nil {
		a.internalMetrics.logOnce("cannot listen for metrics on the internal address; trying again later", err)
	}
}
