package nftables

import (
	"fmt"

	"github.com/google/nftables"
)

// TableExists tells whether the namespace has the inet table name. The agent
// asks on start: a table of its own means an earlier run enforces rules that
// must not be replaced by less before every source has answered.
func (p *Programmer) TableExists(name string) (bool, error) {
	conn, err := p.open()
	if err != nil {
		return false, err
	}
	defer func() { _ = conn.CloseLasting() }()
	tables, err := conn.ListTablesOfFamily(nftables.TableFamilyINet)
	if err != nil {
		return false, fmt.Errorf("listing tables: %w", err)
	}
	for _, t := range tables {
		if t.Name == name {
			return true, nil
		}
	}
	return false, nil
}

// ChainExists tells whether the inet table holds the chain. The agent asks
// for ruleset.ClosedChain on start: the boot step's closed table keeps
// nothing the sources said, so applying need not wait for all of them.
func (p *Programmer) ChainExists(table, chain string) (bool, error) {
	conn, err := p.open()
	if err != nil {
		return false, err
	}
	defer func() { _ = conn.CloseLasting() }()
	chains, err := conn.ListChainsOfTableFamily(nftables.TableFamilyINet)
	if err != nil {
		return false, fmt.Errorf("listing chains: %w", err)
	}
	for _, c := range chains {
		if c.Table.Name == table && c.Name == chain {
			return true, nil
		}
	}
	return false, nil
}
