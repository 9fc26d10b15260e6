package agent

import (
	"context"
	"log/slog"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/ruleset"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/cidr"
)

// serviceAllows turns LoadBalancer Services into what the firewall allows:
// their loadBalancerSourceRanges (anyone without) to each address in their
// status and each of their ports. A Service with an invalid source range is
// left out and logged, so that it never opens more than its owner asked for
// and never blocks the others.
func serviceAllows(services []corev1.Service, log *slog.Logger) []ruleset.ServiceAllow {
	var out []ruleset.ServiceAllow
	for _, svc := range services {
		var sources []cidr.Range
		valid := true
		for _, source := range svc.Spec.LoadBalancerSourceRanges {
			prefix, err := cidr.Parse(strings.TrimSpace(source))
			if err != nil {
				log.Error("Service left out: invalid loadBalancerSourceRanges", "service", svc.Namespace+"/"+svc.Name, "value", source, "error", err)
				valid = false
				break
			}
			sources = append(sources, cidr.RangeOf(prefix))
		}
		if !valid {
			continue
		}
		for _, ingress := range svc.Status.LoadBalancer.Ingress {
			addr, err := netip.ParseAddr(ingress.IP)
			if err != nil {
				continue // a hostname, or no address yet
			}
			for _, port := range svc.Spec.Ports {
				proto, ok := ruleset.ProtocolNumber(string(port.Protocol))
				if port.Protocol == "" {
					proto, ok = ruleset.ProtocolNumber("TCP")
				}
				if !ok || port.Port < 1 || port.Port > 65535 {
					continue
				}
				out = append(out, ruleset.ServiceAllow{Addr: addr.Unmap(), Proto: proto, Port: uint16(port.Port), Sources: sources})
			}
		}
	}
	slices.SortFunc(out, func(a, b ruleset.ServiceAllow) int {
		if c := a.Addr.Compare(b.Addr); c != 0 {
			return c
		}
		if a.Proto != b.Proto {
			return int(a.Proto) - int(b.Proto)
		}
		return int(a.Port) - int(b.Port)
	})
	return out
}

// sameAllows compares allows by value (netip.Addr defeats reflection-based
// comparison).
func sameAllows(a, b []ruleset.ServiceAllow) bool {
	return slices.EqualFunc(a, b, func(x, y ruleset.ServiceAllow) bool {
		return x.Addr == y.Addr && x.Proto == y.Proto && x.Port == y.Port && slices.Equal(x.Sources, y.Sources)
	})
}

// shootServices is the shoot's LoadBalancer Services in one round.
type shootServices struct {
	// err is why the Services could not be read.
	err error
}

// read reads the Services into the agent's inputs as allows and tells whether
// those changed.
func (s *shootServices) read(ctx context.Context, a *Agent) bool {
	services, err := a.shoot.LoadBalancers(ctx)
	if err != nil {
		s.err = err
		a.Log.Error("reading the Services from the shoot; the ruleset in force stays", "error", err)
		return false
	}
	if allows := serviceAllows(services, a.Log); !a.servicesRead || !sameAllows(allows, a.in.Services) {
		a.in.Services, a.servicesRead = allows, true
		return true
	}
	return false
}
