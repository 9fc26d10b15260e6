package metalimage

import (
	"fmt"
	"strconv"
	"strings"
)

// NftablesConf is the firewall image's /etc/nftables.conf, which
// nftables.service loads at boot and on every reload: it flushes every table
// and loads the installer's files (metal-images firewall/context/etc/nftables.conf).
const NftablesConf = `#!/usr/sbin/nft -f

flush ruleset

include "/etc/nftables/*"
`

// NftablesRulesPath is where the installer writes its rules
// (os-installer pkg/nftables/nftables.go nftrulesPath).
const NftablesRulesPath = "/etc/nftables/rules"

// NftablesDropLogPrefix is the image table's drop log prefix, which the
// droptailer reads (os-installer pkg/nftables/nftrules.tpl,
// pkg/services/droptailer/droptailer.service.tpl).
const NftablesDropLogPrefix = "nftables-metal-dropped: "

// NftablesRules renders the installer's /etc/nftables/rules for a firewall
// as os-installer does at installation (pkg/installer/os/common/
// configure_network.go: forward policy drop, no DNS proxy; the template is
// pkg/nftables/nftrules.tpl, its data pkg/nftables/nftables.go):
//   - table inet metal: input (policy drop) admits ICMPv6, the loopback, BGP
//     and VXLAN from the fabric ports lan0 and lan1, established traffic,
//     SSH, and the node and nftables exporters' ports from every private
//     network's VRF; forward (policy drop) admits established traffic and
//     the allocation's firewall_rules and logs the rest; output (accept).
//   - table inet nat: postrouting (priority 0) masquerades the private
//     primary network's prefixes leaving through the SVI of every network
//     with NAT.
func NftablesRules(a *Allocation) (string, error) {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	var tenantVRFs []string
	for _, n := range a.routed() {
		if n.Private {
			tenantVRFs = append(tenantVRFs, fmt.Sprintf("vrf%d", n.VRF))
		}
	}
	w("# generated as metal-stack's os-installer renders it")
	w("table inet metal {")
	w("    chain input {")
	w("        type filter hook input priority 0; policy drop;")
	w(`        meta l4proto ipv6-icmp counter accept comment "icmpv6 input required for neighbor discovery"`)
	w(`        iifname "lo" counter accept comment "BGP unnumbered"`)
	for _, lan := range []string{"lan0", "lan1"} {
		w(`        iifname %q ip6 saddr fe80::/64 tcp dport bgp counter accept comment "bgp unnumbered input from %s"`, lan, lan)
	}
	for _, lan := range []string{"lan0", "lan1"} {
		w(`        iifname %q ip saddr 10.0.0.0/8 udp dport 4789 counter accept comment "incoming VXLAN %s"`, lan, lan)
	}
	w(`        ct state established,related counter accept comment "stateful input"`)
	w(`        tcp dport ssh ct state new counter accept comment "SSH incoming connections"`)
	for _, vrf := range tenantVRFs {
		w(`        iifname %q tcp dport 9100 counter accept comment "node metrics"`, vrf)
		w(`        iifname %q tcp dport 9630 counter accept comment "nftables metrics"`, vrf)
	}
	w(`        ct state invalid counter drop comment "drop invalid packets to prevent malicious activity"`)
	w("        counter jump refuse")
	w("    }")
	w("    chain forward {")
	w("        type filter hook forward priority 0; policy drop;")
	w(`        ct state invalid counter drop comment "drop invalid packets from forwarding to prevent malicious activity"`)
	w(`        ct state established,related counter accept comment "stateful forward"`)
	w(`        tcp dport bgp ct state new counter jump refuse comment "block bgp forward to machines"`)
	rules, err := firewallRules(a, tenantVRFs)
	if err != nil {
		return "", err
	}
	for _, r := range rules {
		w("        %s", r)
	}
	w(`        limit rate 2/minute counter log prefix %q`, NftablesDropLogPrefix)
	w("    }")
	w("    chain output {")
	w("        type filter hook output priority 0; policy accept;")
	w(`        meta l4proto ipv6-icmp counter accept comment "icmpv6 output required for neighbor discovery"`)
	w(`        oifname "lo" counter accept comment "lo output required e.g. for chrony"`)
	for _, lan := range []string{"lan0", "lan1"} {
		w(`        oifname %q ip6 saddr fe80::/64 tcp dport bgp counter accept comment "bgp unnumbered output at %s"`, lan, lan)
	}
	w(`        ip daddr 10.0.0.0/8 udp dport 4789 counter accept comment "outgoing VXLAN"`)
	w(`        ct state established,related counter accept comment "stateful output"`)
	w(`        ct state invalid counter drop comment "drop invalid packets"`)
	w("    }")
	w("    chain output_ct {")
	w("        type filter hook output priority raw; policy accept;")
	w("    }")
	w("    chain refuse {")
	w(`        limit rate 2/minute counter log prefix %q`, NftablesDropLogPrefix)
	w("        counter drop")
	w("    }")
	w("}")
	w("table inet nat {")
	w("    set proxy_dns_servers {")
	w("        type ipv4_addr")
	w("        flags interval")
	w("        auto-merge")
	w("        elements = { 8.8.8.8, 8.8.4.4, 1.1.1.1, 1.0.0.1 }")
	w("    }")
	for _, c := range []struct{ name, spec string }{
		{"prerouting", "type nat hook prerouting priority 0; policy accept;"},
		{"prerouting_ct", "type filter hook prerouting priority raw; policy accept;"},
		{"input", "type nat hook input priority 0; policy accept;"},
		{"output", "type nat hook output priority 0; policy accept;"},
	} {
		w("    chain %s {", c.name)
		w("        %s", c.spec)
		w("    }")
	}
	w("    chain postrouting {")
	w("        type nat hook postrouting priority 0; policy accept;")
	primary, hasPrimary := a.privatePrimary()
	for _, n := range a.routed() {
		if !n.NAT || !hasPrimary {
			continue
		}
		for _, p := range primary.Prefixes {
			fam, err := family(p)
			if err != nil {
				return "", err
			}
			w(`        oifname "vlan%d" %s saddr %s counter masquerade random comment "snat (networkid: %s)"`, n.VRF, fam, p, n.ID)
		}
	}
	w("    }")
	w("}")
	return b.String(), nil
}

// firewallRules renders the allocation's firewall_rules for the forward
// chain: egress from the private networks' VRFs to their destinations,
// ingress to their destinations or, without one, into the private primary
// network (os-installer pkg/nftables/nftables.go getFirewallRules).
func firewallRules(a *Allocation, tenantVRFs []string) ([]string, error) {
	fr := a.FirewallRules
	if fr == nil {
		return nil, nil
	}
	quoted := make([]string, len(tenantVRFs))
	for i, v := range tenantVRFs {
		quoted[i] = strconv.Quote(v)
	}
	ports := func(ps []int32) string {
		s := make([]string, len(ps))
		for i, p := range ps {
			s[i] = strconv.Itoa(int(p))
		}
		return strings.Join(s, ",")
	}
	out := []string{"# egress rules specified during firewall creation"}
	for _, r := range fr.Egress {
		for _, to := range r.To {
			fam, err := family(to)
			if err != nil {
				return nil, err
			}
			out = append(out, fmt.Sprintf("iifname { %s } %s daddr %s %s dport { %s } counter accept comment %q",
				strings.Join(quoted, ","), fam, to, strings.ToLower(r.Protocol), ports(r.Ports), r.Comment))
		}
	}
	out = append(out, "# ingress rules specified during firewall creation")
	primary, hasPrimary := a.privatePrimary()
	for _, r := range fr.Ingress {
		var dest string
		switch {
		case len(r.To) > 0:
			fam, err := family(r.To[0])
			if err != nil {
				continue
			}
			dest = fmt.Sprintf("%s daddr { %s }", fam, strings.Join(r.To, ", "))
		case hasPrimary:
			dest = fmt.Sprintf(`oifname { "vrf%[1]d", "vni%[1]d", "vlan%[1]d" }`, primary.VRF)
		default:
			continue
		}
		for _, from := range r.From {
			fam, err := family(from)
			if err != nil {
				return nil, err
			}
			out = append(out, fmt.Sprintf("%s %s saddr %s %s dport { %s } counter accept comment %q",
				dest, fam, from, strings.ToLower(r.Protocol), ports(r.Ports), r.Comment))
		}
	}
	return out, nil
}
