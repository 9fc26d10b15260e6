package framework

import (
	"fmt"
	"os/exec"
	"strings"
)

// Wiring gives a local machine's links addresses: the shoot's nodes behind
// int0 (one node in the internal namespace, routing through the machine) and
// a server outside behind ext0 (in the external namespace, routing the
// nodes' network to the machine).
type Wiring struct {
	InternalNetNS, ExternalNetNS string
	// InternalLink and ExternalLink are the machine's links (int0 and ext0
	// by default; vrf<vrf> on a machine of the metal test server).
	InternalLink, ExternalLink string
	// Prefix length of both networks.
	Bits int
	// MachineInternal and Node are on int0's network, MachineExternal and
	// Outside on ext0's.
	MachineInternal, Node, MachineExternal, Outside string
	// NodesCIDR is the nodes' network, routed from outside via the machine.
	NodesCIDR string
}

// DefaultWiring: nodes 10.250.0.0/24 (the machine .1, a node .2), outside
// 203.0.113.0/24 (the machine .1, a server .2).
func DefaultWiring(internalNetNS, externalNetNS string) Wiring {
	return Wiring{
		InternalNetNS: internalNetNS, ExternalNetNS: externalNetNS, Bits: 24,
		InternalLink: "int0", ExternalLink: "ext0",
		MachineInternal: "10.250.0.1", Node: "10.250.0.2", NodesCIDR: "10.250.0.0/24",
		MachineExternal: "203.0.113.1", Outside: "203.0.113.2",
	}
}

// Wire sets the addresses and routes. The peers of the machine's int0 and
// ext0 are named fw<id>i and fw<id>e by the local provider.
func (w Wiring) Wire(rec MachineRecord) error {
	short := strings.TrimPrefix(rec.ID, "local-")
	cidr := func(ip string) string { return fmt.Sprintf("%s/%d", ip, w.Bits) }
	for _, step := range [][]string{
		{"-n", rec.NetNS, "addr", "add", cidr(w.MachineInternal), "dev", w.InternalLink},
		{"-n", rec.NetNS, "addr", "add", cidr(w.MachineExternal), "dev", w.ExternalLink},
		{"-n", w.InternalNetNS, "addr", "add", cidr(w.Node), "dev", "fw" + short + "i"},
		{"-n", w.InternalNetNS, "route", "add", "default", "via", w.MachineInternal},
		{"-n", w.ExternalNetNS, "addr", "add", cidr(w.Outside), "dev", "fw" + short + "e"},
		{"-n", w.ExternalNetNS, "route", "add", w.NodesCIDR, "via", w.MachineExternal},
	} {
		if out, err := exec.Command("ip", step...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %s: %w: %s", strings.Join(step, " "), err, out)
		}
	}
	return nil
}
