package main

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// agentTable is the nftables table the agent owns on the machine.
const agentTable = "inet firewall-agent"

// showEnforcement shows the agent's rules in the machine and what they do
// to real connections.
func (d *demo) showEnforcement(ctx context.Context) error {
	ruleset, err := d.site.agentTable(ctx)
	if err != nil {
		return err
	}
	if nodes := d.site.nodes(); !strings.Contains(ruleset, nodes) {
		return fmt.Errorf("the agent's table does not hold the internal prefix %s from the providerConfig:\n%s", nodes, ruleset)
	}
	d.n.say("The agent programmed table %s on the machine (`nft list table %s`), excerpt:", agentTable, agentTable)
	d.n.detail(excerpt(ruleset))

	before, err := dropCounter(ruleset)
	if err != nil {
		return err
	}
	if err := d.droppedFromOutside(ctx); err != nil {
		return err
	}
	ruleset, err = d.site.agentTable(ctx)
	if err != nil {
		return err
	}
	after, err := dropCounter(ruleset)
	if err != nil {
		return err
	}
	if after <= before {
		return fmt.Errorf("the agent's drop rule counted no packet (%d before, %d after)", before, after)
	}
	d.n.say("A new connection from outside (%s) to the node's %s gets no answer within 2 s: dropped; the agent's drop rule counted %d packets of it",
		d.site.outside(), d.nodeAddr(), after-before)
	if err := d.kept.Echo("while seed A manages the firewall"); err != nil {
		return fmt.Errorf("the node's kept connection: %w", err)
	}
	d.n.say("The node's connection to %s, opened under the policy, still carries data: established connections stay accepted", d.outsideAddr())
	d.n.proved("the agent enforces its rules inside the machine: a new connection from outside is dropped, an established one is kept")
	return nil
}

var dropRule = regexp.MustCompile(`counter packets (\d+) bytes \d+ drop comment "drop `)

// dropCounter reads the packet counter of the agent's final drop rule.
func dropCounter(ruleset string) (int, error) {
	m := dropRule.FindStringSubmatch(ruleset)
	if m == nil {
		return 0, fmt.Errorf("no counted drop rule in the agent's table:\n%s", ruleset)
	}
	return strconv.Atoi(m[1])
}

// excerpt keeps what says what a ruleset does: the sets that hold
// elements, the chains with their hooks and policies, and their rules, where
// the rules that only look up empty policy sets are counted, not listed.
func excerpt(ruleset string) string {
	blocks := nftBlocks(ruleset)
	// Left out: sets without elements, the shard chains that only look
	// them up, and the verdict maps that only jump to such chains.
	empty, emptySets, idleChains := map[string]bool{}, 0, map[string]bool{}
	var out []string
	for _, b := range blocks {
		if strings.HasPrefix(b.header, "set ") && !strings.Contains(strings.Join(b.body, "\n"), "elements") {
			empty["@"+strings.Fields(b.header)[1]] = true
			emptySets++
		}
	}
	for _, b := range blocks {
		if !strings.HasPrefix(b.header, "chain ") || strings.Contains(strings.Join(b.body, "\n"), " hook ") {
			continue
		}
		idle := true
		for _, line := range b.body {
			idle = idle && (strings.TrimSpace(line) == "" || looksUpOnly(line, empty))
		}
		if idle {
			idleChains[strings.Fields(b.header)[1]] = true
		}
	}
	for _, b := range blocks {
		if !strings.HasPrefix(b.header, "map ") {
			continue
		}
		body := strings.Join(b.body, " ")
		idle := strings.Contains(body, ": jump ")
		for _, f := range strings.Split(body, ": jump ")[1:] {
			target := strings.Trim(strings.Fields(f)[0], ",}")
			idle = idle && idleChains[target]
		}
		if idle {
			empty["@"+strings.Fields(b.header)[1]] = true
		}
	}
	if len(blocks) > 0 {
		out = append(out, blocks[0].outer)
	}
	for _, b := range blocks {
		if name := strings.Fields(b.header)[1]; empty["@"+name] || strings.HasPrefix(b.header, "chain ") && idleChains[name] {
			continue
		}
		out = append(out, "\t"+b.header)
		skipped := 0
		for _, line := range b.body {
			if looksUpOnly(line, empty) {
				skipped++
				continue
			}
			if skipped > 0 {
				out = append(out, fmt.Sprintf("\t\t... %d rules that look up empty sets, left out", skipped))
				skipped = 0
			}
			out = append(out, "\t\t"+strings.TrimSpace(line))
		}
		if skipped > 0 {
			out = append(out, fmt.Sprintf("\t\t... %d rules that look up empty sets, left out", skipped))
		}
		out = append(out, "\t}")
	}
	out = append(out, "}", fmt.Sprintf("(%d empty sets, %d maps and %d chains of empty shards left out)", emptySets, len(empty)-emptySets, len(idleChains)))
	return strings.ReplaceAll(strings.Join(out, "\n"), "\t", "  ")
}

// looksUpOnly tells whether a rule accepts only what an empty set holds.
func looksUpOnly(rule string, empty map[string]bool) bool {
	for _, f := range strings.Fields(rule) {
		if strings.HasPrefix(f, "@") && empty[f] {
			return true
		}
	}
	return false
}

// nftBlock is one set or chain of `nft list table` output.
type nftBlock struct {
	outer  string
	header string
	body   []string
}

// nftBlocks splits `nft list table` output (one table, blocks one level
// deep, each closed by a line holding only "}") into its sets and chains.
func nftBlocks(ruleset string) []nftBlock {
	var (
		out   []nftBlock
		outer string
		cur   *nftBlock
	)
	for _, line := range strings.Split(ruleset, "\n") {
		t := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(t, "table "):
			outer = t
		case cur == nil && (strings.HasPrefix(t, "set ") || strings.HasPrefix(t, "chain ") || strings.HasPrefix(t, "map ")):
			cur = &nftBlock{outer: outer, header: t}
		case cur != nil && t == "}":
			out = append(out, *cur)
			cur = nil
		case cur != nil && t != "":
			cur.body = append(cur.body, line)
		}
	}
	return out
}
