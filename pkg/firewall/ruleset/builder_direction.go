package ruleset

import (
	"slices"
	"strconv"
	"strings"

	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
)

// dirState is what the builder knows about one direction.
type dirState struct {
	// rules are the policy rules of the direction in input order, each with
	// what it contributes.
	rules []ruleEntry
	fams  [2]famState // IPv4, IPv6
}

// ruleEntry is one policy rule (a copy: the caller may change its input)
// and its parsed contribution.
type ruleEntry struct {
	blocks  []fwv1alpha1.IPBlock
	ports   []portCopy
	contrib direction
}

// portCopy is a PolicyPort without pointers.
type portCopy struct {
	protocol        string
	port, endPort   int32
	hasPort, hasEnd bool
}

// ruleView is a policy rule of the input: its peers and ports.
type ruleView struct {
	blocks []fwv1alpha1.IPBlock
	ports  []fwv1alpha1.PolicyPort
}

// dirPlan says how the rules of a direction change: the first prefix and
// the last suffix rules stay, the rules between are replaced by middle.
type dirPlan struct {
	prefix, suffix int
	middle         []ruleEntry
	// added are the middle entries that are new, removed the old ones
	// between prefix and suffix that are gone.
	added, removed []ruleEntry
}

// plan compares the new rules with the old ones by content: rules that
// stay in place are found by comparing from both ends (an edit, insertion
// or removal of a few rules leaves the others in place), the rest by a key
// of their content (rules that moved). Only new rules are parsed.
func (d *dirState) plan(views []ruleView) (dirPlan, error) {
	old := d.rules
	var p dirPlan
	for p.prefix < len(old) && p.prefix < len(views) && old[p.prefix].equal(views[p.prefix]) {
		p.prefix++
	}
	for p.suffix < len(old)-p.prefix && p.suffix < len(views)-p.prefix &&
		old[len(old)-1-p.suffix].equal(views[len(views)-1-p.suffix]) {
		p.suffix++
	}
	oldMiddle := old[p.prefix : len(old)-p.suffix]
	newMiddle := views[p.prefix : len(views)-p.suffix]
	var moved map[string][]int
	if len(oldMiddle) > 0 && len(newMiddle) > 0 {
		moved = make(map[string][]int, len(oldMiddle))
		for i := range oldMiddle {
			k := ruleKey(oldMiddle[i].blocks, oldMiddle[i].ports, nil)
			moved[k] = append(moved[k], i)
		}
	}
	kept := make([]bool, len(oldMiddle))
	p.middle = make([]ruleEntry, 0, len(newMiddle))
	for _, v := range newMiddle {
		if moved != nil {
			k := ruleKey(v.blocks, nil, v.ports)
			if idx := moved[k]; len(idx) > 0 {
				moved[k] = idx[1:]
				kept[idx[0]] = true
				p.middle = append(p.middle, oldMiddle[idx[0]])
				continue
			}
		}
		e := ruleEntry{blocks: copyBlocks(v.blocks), ports: copyPorts(v.ports)}
		if err := e.contrib.add(v.blocks, v.ports); err != nil {
			return dirPlan{}, err
		}
		p.middle = append(p.middle, e)
		p.added = append(p.added, e)
	}
	for i, k := range kept {
		if !k {
			p.removed = append(p.removed, oldMiddle[i])
		}
	}
	return p, nil
}

// commit applies a plan: the contributions of removed rules go, those of
// added rules come, and the sets are brought up to date.
func (d *dirState) commit(p dirPlan) {
	d.rules = slices.Replace(d.rules, p.prefix, len(d.rules)-p.suffix, p.middle...)
	if len(p.added) == 0 && len(p.removed) == 0 {
		return
	}
	for f := range d.fams {
		var ch famChanges
		for _, e := range p.removed {
			ch.collect(&e.contrib, f == 1, -1)
		}
		for _, e := range p.added {
			ch.collect(&e.contrib, f == 1, +1)
		}
		d.fams[f].apply(&ch)
	}
}

func (e *ruleEntry) equal(v ruleView) bool {
	if len(e.blocks) != len(v.blocks) || len(e.ports) != len(v.ports) {
		return false
	}
	for i := range e.blocks {
		if e.blocks[i].CIDR != v.blocks[i].CIDR || !slices.Equal(e.blocks[i].Except, v.blocks[i].Except) {
			return false
		}
	}
	for i := range e.ports {
		if e.ports[i] != copyPort(v.ports[i]) {
			return false
		}
	}
	return true
}

// ruleKey is the content of a rule as a string; the ports come either as
// copies or as the input's.
func ruleKey(blocks []fwv1alpha1.IPBlock, copies []portCopy, ports []fwv1alpha1.PolicyPort) string {
	var b strings.Builder
	for _, bl := range blocks {
		b.WriteString(bl.CIDR)
		for _, e := range bl.Except {
			b.WriteString("-" + e)
		}
		b.WriteString(",")
	}
	b.WriteString("|")
	for _, p := range ports {
		copies = append(copies, copyPort(p))
	}
	for _, p := range copies {
		b.WriteString(p.protocol)
		for _, n := range []struct {
			v   int32
			set bool
		}{{p.port, p.hasPort}, {p.endPort, p.hasEnd}} {
			b.WriteString(":")
			if n.set {
				b.WriteString(strconv.Itoa(int(n.v)))
			}
		}
		b.WriteString(",")
	}
	return b.String()
}

// copyBlocks copies blocks; strings are immutable, so only the slices are.
func copyBlocks(in []fwv1alpha1.IPBlock) []fwv1alpha1.IPBlock {
	out := slices.Clone(in)
	for i := range out {
		out[i].Except = slices.Clone(out[i].Except)
	}
	return out
}

func copyPorts(in []fwv1alpha1.PolicyPort) []portCopy {
	out := make([]portCopy, len(in))
	for i, p := range in {
		out[i] = copyPort(p)
	}
	return out
}

func copyPort(p fwv1alpha1.PolicyPort) portCopy {
	c := portCopy{protocol: p.Protocol}
	if p.Port != nil {
		c.port, c.hasPort = *p.Port, true
	}
	if p.EndPort != nil {
		c.endPort, c.hasEnd = *p.EndPort, true
	}
	return c
}
