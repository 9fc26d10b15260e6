package nftables

import (
	"fmt"
	"strings"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/google/nftables/userdata"
)

// Counter is a rule's packet and byte count.
type Counter struct {
	Packets, Bytes uint64
}

// RuleCounters reads the counters of the rules in the agent's table, keyed by
// rule ID (the first word of the rule comment), e.g. for metrics and the
// monitor. Rules that share an ID (the shards of a set) are added up.
func (p *Programmer) RuleCounters(tableName string) (map[string]Counter, error) {
	conn, err := p.open()
	if err != nil {
		return nil, err
	}
	defer func() { _ = conn.CloseLasting() }()
	return ruleCounters(conn, tableName)
}

// ruleCounters reads the rule counters of the table through conn; none if
// the table does not exist.
func ruleCounters(conn *nftables.Conn, tableName string) (map[string]Counter, error) {
	table := &nftables.Table{Name: tableName, Family: nftables.TableFamilyINet}
	chains, err := conn.ListChainsOfTableFamily(nftables.TableFamilyINet)
	if err != nil {
		return nil, fmt.Errorf("listing chains: %w", err)
	}
	out := map[string]Counter{}
	for _, c := range chains {
		if c.Table.Name != tableName {
			continue
		}
		rules, err := conn.GetRules(table, c)
		if err != nil {
			return nil, fmt.Errorf("listing rules of chain %s: %w", c.Name, err)
		}
		for _, r := range rules {
			comment, _ := userdata.GetString(r.UserData, userdata.TypeComment)
			id, _, _ := strings.Cut(comment, " ")
			for _, e := range r.Exprs {
				if ctr, ok := e.(*expr.Counter); ok {
					sum := out[id]
					out[id] = Counter{Packets: sum.Packets + ctr.Packets, Bytes: sum.Bytes + ctr.Bytes}
				}
			}
		}
	}
	return out, nil
}
