package nftables

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/google/nftables/userdata"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/ruleset"
)

// The firewall image's own table, as metal-stack's os-installer renders it
// into /etc/nftables/rules (pkg/nftables/nftrules.tpl): a forward chain with
// policy drop that accepts established traffic and the allocation's
// firewall_rules and logs the rest with this prefix, and an input chain with
// policy drop that admits BGP, VXLAN, SSH and two exporters' ports.
const (
	ImageTable       = "metal"
	imageForward     = "forward"
	imageInput       = "input"
	imageDropLogText = "nftables-metal-dropped: "
	// openingPrefix starts the comment of every rule the agent puts into the
	// image's table.
	openingPrefix = "firewall-agent: "
)

// OpenImageTable makes the firewall image's own table let through what the
// agent's table decides on, in the kernel only (what nftables.service loads
// from disk keeps the image's drop, so a reload or a reboot closes again
// until the agent's table is back): the forward policy becomes accept and
// the drop log goes, as metal-networker renders the table when a controller
// manages the firewall; the openings (ruleset.Ruleset.Openings) go to the top
// of its input chain, and openings of earlier rulesets that are no longer
// wanted are removed. Without the image's table it does nothing. It reports
// whether it changed anything; the change is one transaction.
func (p *Programmer) OpenImageTable(openings []*ruleset.Rule) (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	conn, err := p.open()
	if err != nil {
		return false, err
	}
	defer func() { _ = conn.CloseLasting() }()
	chains, err := conn.ListChainsOfTableFamily(nftables.TableFamilyINet)
	if err != nil {
		return false, fmt.Errorf("listing chains: %w", err)
	}
	var forward, input *nftables.Chain
	for _, c := range chains {
		if c.Table.Name != ImageTable {
			continue
		}
		switch c.Name {
		case imageForward:
			forward = c
		case imageInput:
			input = c
		}
	}
	if forward == nil && input == nil {
		return false, nil
	}
	genBefore, genErr := p.generation()
	changed := false
	if forward != nil {
		did, err := relaxForward(conn, forward)
		if err != nil {
			return false, err
		}
		changed = changed || did
	}
	if input != nil {
		did, err := syncOpenings(conn, input, openings)
		if err != nil {
			return false, err
		}
		changed = changed || did
	}
	if !changed {
		return false, nil
	}
	if err := conn.Flush(); err != nil {
		return false, fmt.Errorf("opening the image's table %s: %w", ImageTable, err)
	}
	// Only this change came between: the agent's own table is as it left it.
	if genErr == nil && p.last != nil && genBefore == p.lastGen {
		if gen, err := p.generation(); err == nil && gen == genBefore+1 {
			p.lastGen = gen
		}
	}
	return true, nil
}

// relaxForward queues the forward chain's policy accept and the removal of
// its drop log.
func relaxForward(conn *nftables.Conn, c *nftables.Chain) (bool, error) {
	changed := false
	if c.Policy != nil && *c.Policy == nftables.ChainPolicyDrop {
		accept := nftables.ChainPolicyAccept
		conn.AddChain(&nftables.Chain{Name: c.Name, Table: c.Table, Type: c.Type, Hooknum: c.Hooknum, Priority: c.Priority, Policy: &accept})
		changed = true
	}
	rules, err := conn.GetRules(c.Table, c)
	if err != nil {
		return false, fmt.Errorf("listing the rules of %s %s: %w", c.Table.Name, c.Name, err)
	}
	for _, r := range rules {
		if logsWith(r, imageDropLogText) {
			if err := conn.DelRule(r); err != nil {
				return false, err
			}
			changed = true
		}
	}
	return changed, nil
}

// syncOpenings queues what makes the input chain's agent rules the wanted
// ones: each identified by its comment, which holds a hash of its content.
func syncOpenings(conn *nftables.Conn, c *nftables.Chain, openings []*ruleset.Rule) (bool, error) {
	rules, err := conn.GetRules(c.Table, c)
	if err != nil {
		return false, fmt.Errorf("listing the rules of %s %s: %w", c.Table.Name, c.Name, err)
	}
	want := map[string]*ruleset.Rule{}
	for _, o := range openings {
		want[openingPrefix+ruleset.Comment(o)] = o
	}
	have := map[string]bool{}
	changed := false
	for _, r := range rules {
		comment, _ := userdata.GetString(r.UserData, userdata.TypeComment)
		if !strings.HasPrefix(comment, openingPrefix) {
			continue
		}
		if _, ok := want[comment]; ok && !have[comment] {
			have[comment] = true
			continue
		}
		if err := conn.DelRule(r); err != nil {
			return false, err
		}
		changed = true
	}
	// Inserted at the top in reverse, so they end up in the openings' order.
	for _, o := range slices.Backward(openings) {
		comment := openingPrefix + ruleset.Comment(o)
		if have[comment] {
			continue
		}
		e, err := exprs(o, nil)
		if err != nil {
			return false, err
		}
		conn.InsertRule(&nftables.Rule{Table: c.Table, Chain: c, Exprs: e, UserData: userdata.AppendString(nil, userdata.TypeComment, comment)})
		have[comment] = true
		changed = true
	}
	return changed, nil
}

// logsWith tells whether the rule logs with the given prefix.
func logsWith(r *nftables.Rule, prefix string) bool {
	for _, e := range r.Exprs {
		if l, ok := e.(*expr.Log); ok && bytes.Equal(bytes.TrimRight(l.Data, "\x00"), []byte(prefix)) {
			return true
		}
	}
	return false
}
