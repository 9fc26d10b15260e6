package ruleset

import (
	"fmt"
	"strings"

	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/cidr"
)

// Protocol numbers of the protocols a PolicyPort may name.
var protocolNumbers = map[string]uint8{"TCP": 6, "UDP": 17, "SCTP": 132}

// direction collects the allowed peers of egress or ingress.
type direction struct {
	any   []cidr.Range
	ports []portItem
}

// portItem allows the peers in ranges on one protocol and port range.
type portItem struct {
	ranges   []cidr.Range
	proto    uint8
	from, to uint16
}

func (d *direction) add(blocks []fwv1alpha1.IPBlock, ports []fwv1alpha1.PolicyPort) error {
	ranges, err := blockRanges(blocks)
	if err != nil {
		return err
	}
	if len(ports) == 0 {
		d.any = append(d.any, ranges...)
		return nil
	}
	for _, p := range ports {
		proto, ok := protocolNumbers[strings.ToUpper(p.Protocol)]
		if p.Protocol == "" {
			proto, ok = protocolNumbers["TCP"]
		}
		if !ok {
			return fmt.Errorf("unknown protocol %q", p.Protocol)
		}
		item := portItem{ranges: ranges, proto: proto, from: 0, to: 65535}
		if p.Port != nil {
			item.from, item.to = uint16(*p.Port), uint16(*p.Port)
			if p.EndPort != nil {
				item.to = uint16(*p.EndPort)
			}
		}
		d.ports = append(d.ports, item)
	}
	return nil
}

// blockRanges returns the addresses of the blocks, each CIDR minus its
// excepts, merged.
func blockRanges(blocks []fwv1alpha1.IPBlock) ([]cidr.Range, error) {
	if len(blocks) == 1 && len(blocks[0].Except) == 0 {
		prefix, err := cidr.Parse(blocks[0].CIDR)
		if err != nil {
			return nil, fmt.Errorf("cidr %q: %w", blocks[0].CIDR, err)
		}
		return []cidr.Range{cidr.RangeOf(prefix)}, nil
	}
	var out []cidr.Range
	for _, b := range blocks {
		prefix, err := cidr.Parse(b.CIDR)
		if err != nil {
			return nil, fmt.Errorf("cidr %q: %w", b.CIDR, err)
		}
		var except []cidr.Range
		for _, e := range b.Except {
			ep, err := cidr.Parse(e)
			if err != nil {
				return nil, fmt.Errorf("except %q: %w", e, err)
			}
			except = append(except, cidr.RangeOf(ep))
		}
		out = append(out, cidr.SubtractRanges([]cidr.Range{cidr.RangeOf(prefix)}, cidr.MergeRanges(except))...)
	}
	return cidr.MergeRanges(out), nil
}
