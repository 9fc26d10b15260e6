package ruleset

// ClosedChain is the only chain of the closed table. Its name tells the
// agent that the kernel holds the boot step's stopgap, not a ruleset built
// from sources, so there is nothing to keep until the sources answer.
const ClosedChain = "forward-closed"

// Closed returns the table the boot step installs when no last good ruleset
// can be read: forwarded packets are dropped, the firewall's own traffic
// (the agent reaching its sources) is not filtered. Never "no table", which
// would forward everything.
func Closed() *Ruleset {
	return &Ruleset{
		Table: TableName,
		Chains: []*Chain{{
			Name: ClosedChain, Type: "filter", Hook: "forward", Priority: 0, PolicyDrop: true,
			Rules: []*Rule{{ID: "closed", Counter: true, Verdict: Drop}},
		}},
	}
}
