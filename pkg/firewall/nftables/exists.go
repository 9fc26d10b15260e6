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
