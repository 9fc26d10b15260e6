package bgpdistance

import (
	"fmt"
	"regexp"
	"strings"
)

// RouteMap is the route-map the agent owns in FRR's configuration: its one
// entry prepends the firewall's own AS once per step of distance.
const RouteMap = "firewall-agent-distance"

// DefaultPeerGroup is the fabric's peer group in os-installer's firewall
// configuration (pkg/frr/frr.firewall.tpl).
const DefaultPeerGroup = "FABRIC"

// MaxDistance bounds the prepends, as the Firewall's spec.distance is bounded.
const MaxDistance = 8

// delayTimer is bgpd's global route-map delay-timer the agent sets: 0 keeps
// bgpd from sending routes again by itself when the route-map changes, so
// that a new distance reaches the fabric only with the session reset that
// follows (see Announcer.Announce), never as an update of a route in place.
const delayTimer = "bgp route-map delay-timer 0"

// OwnRoutes is the extended community list an agent of 5c8ca43 wrote to send
// the fabric only the firewall's own EVPN routes, by the route target bgpd
// derives for them (the low 16 bits of its AS, and a VNI). bgpd does not
// always derive that: in the lab, FRR 10.3 gave one of a firewall's two
// VRFs the route target 1:<VNI> at boot, now and then, and the list kept
// all of that VRF's routes from the fabric, the agent's way to its seed
// included. Render drops a list written before; the firewall again sends
// the fabric the routes it learned from it too (see docs/operations/firewall/distance.md).
const OwnRoutes = "firewall-agent-own"

// routerBGP matches the default VRF's BGP instance; instances of VRFs have
// a " vrf " after the ASN.
var routerBGP = regexp.MustCompile(`^router bgp ([0-9]+)\s*$`)

// Render returns conf, an FRR configuration as os-installer writes it, with
// the distance announced: the route-map RouteMap prepending the default
// VRF's ASN distance times, applied outbound to peerGroup (DefaultPeerGroup
// when empty), and bgpd's route-map delay-timer at 0 (replacing any other),
// in the l2vpn evpn
// address family, where the routes that carry the shoot's traffic (EVPN
// type-5 of the VRFs) are announced. Rendering an already rendered
// configuration replaces the agent's route-map, so Render(Render(c, 3), 0)
// is Render(c, 0). A configuration without those parts is refused, naming
// what is missing.
func Render(conf string, distance int, peerGroup string) (string, error) {
	if distance < 0 || distance > MaxDistance {
		return "", fmt.Errorf("distance %d: must be within [0, %d]", distance, MaxDistance)
	}
	peerGroup = or(peerGroup, DefaultPeerGroup)
	lines := strings.Split(strings.TrimRight(conf, "\n"), "\n")
	lines = withoutRouteMap(lines)

	start, asn := -1, ""
	for i, l := range lines {
		if m := routerBGP.FindStringSubmatch(l); m != nil {
			if start >= 0 {
				return "", fmt.Errorf("two BGP instances of the default VRF (lines %d and %d)", start+1, i+1)
			}
			start, asn = i, m[1]
		}
	}
	if start < 0 {
		return "", fmt.Errorf("no BGP instance of the default VRF (%q)", "router bgp <asn>")
	}
	end := blockEnd(lines, start)
	if !hasLine(lines[start+1:end], "neighbor "+peerGroup+" peer-group") {
		return "", fmt.Errorf("router bgp %s has no peer group %q", asn, peerGroup)
	}
	afStart, afEnd := -1, -1
	for i := start + 1; i < end; i++ {
		switch strings.TrimSpace(lines[i]) {
		case "address-family l2vpn evpn":
			afStart = i
		case "exit-address-family":
			if afStart >= 0 && afEnd < 0 {
				afEnd = i
			}
		}
	}
	if afStart < 0 || afEnd < 0 {
		return "", fmt.Errorf("router bgp %s has no address-family l2vpn evpn", asn)
	}
	attach := "neighbor " + peerGroup + " route-map " + RouteMap + " out"
	found := false
	for _, l := range lines[afStart+1 : afEnd] {
		t := strings.TrimSpace(l)
		if t == attach {
			found = true
			continue
		}
		if strings.HasPrefix(t, "neighbor "+peerGroup+" route-map ") && strings.HasSuffix(t, " out") {
			return "", fmt.Errorf("the l2vpn evpn address family already applies another outbound route-map to %s: %q", peerGroup, t)
		}
	}
	if !found {
		lines = append(lines[:afEnd], append([]string{"  " + attach}, lines[afEnd:]...)...)
	}

	block := []string{
		"! " + RouteMap + ": the firewall's distance, written by the firewall agent",
		delayTimer,
		"route-map " + RouteMap + " permit 10",
	}
	if distance > 0 {
		block = append(block, " set as-path prepend "+strings.TrimSpace(strings.Repeat(asn+" ", distance)))
	}
	block = append(block, "!")
	// Before "line vty", the end of os-installer's configuration, or at the end.
	at := len(lines)
	for i, l := range lines {
		if strings.TrimSpace(l) == "line vty" {
			at = i
		}
	}
	lines = append(lines[:at], append(block, lines[at:]...)...)
	return strings.Join(lines, "\n") + "\n", nil
}

// Distance reads the distance a rendered configuration announces; ok is
// false when it announces none.
func Distance(conf string) (distance int, ok bool) {
	lines := strings.Split(conf, "\n")
	for i, l := range lines {
		if strings.TrimSpace(l) != "route-map "+RouteMap+" permit 10" {
			continue
		}
		for _, m := range lines[i+1 : blockEnd(lines, i)] {
			if f, found := strings.CutPrefix(strings.TrimSpace(m), "set as-path prepend "); found {
				return len(strings.Fields(f)), true
			}
		}
		return 0, true
	}
	return 0, false
}

// withoutRouteMap drops the agent's route-map (with its comment and closing
// "!"), its extended community list and any route-map delay-timer (the
// agent's is written with the route-map) from lines; the route-map's attachment stays, to be found again.
func withoutRouteMap(lines []string) []string {
	out := make([]string, 0, len(lines))
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if strings.HasPrefix(l, "! "+RouteMap+":") || strings.HasPrefix(l, "bgp route-map delay-timer ") ||
			strings.HasPrefix(l, "bgp extcommunity-list expanded "+OwnRoutes+" ") {
			continue
		}
		if strings.HasPrefix(l, "route-map "+RouteMap+" ") {
			i = blockEnd(lines, i) - 1
			if i+1 < len(lines) && strings.TrimSpace(lines[i+1]) == "!" {
				i++
			}
			continue
		}
		out = append(out, l)
	}
	return out
}

// blockEnd is the index after the block that starts at lines[start]: its
// indented lines ("exit" closing it, as FRR writes it, included).
func blockEnd(lines []string, start int) int {
	for i := start + 1; i < len(lines); i++ {
		l := lines[i]
		if l == "exit" {
			return i + 1
		}
		if l != "" && !strings.HasPrefix(l, " ") {
			return i
		}
	}
	return len(lines)
}

func hasLine(lines []string, want string) bool {
	for _, l := range lines {
		if strings.TrimSpace(l) == want {
			return true
		}
	}
	return false
}
