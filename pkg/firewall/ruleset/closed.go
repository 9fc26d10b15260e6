package ruleset

// ClosedChain is the only chain of the closed table. Its name tells the
// agent that the kernel holds the boot step's stopgap, not a ruleset built
// from sources, so there is nothing to keep until the sources answer.
const ClosedChain = "forward-closed"

// Closed returns the table the boot step installs when no last good ruleset
// can be read, and that a metal-stack firewall's nftables.service loads
// with the image's own rules: forwarded packets of new connections are
// dropped, the firewall's own traffic (the agent reaching its sources) is
// not filtered. Never "no table", which would forward everything.
// Connections that are established pass, so that a reload of
// nftables.service, which loads this table in place of the agent's, cuts
// none of those the agent's ruleset had accepted until the boot step puts
// that ruleset back.
func Closed() *Ruleset {
	return &Ruleset{
		Table: TableName,
		Chains: []*Chain{{
			Name: ClosedChain, Type: "filter", Hook: "forward", Priority: 0, PolicyDrop: true,
			Rules: []*Rule{
				{ID: "established", CtEstablishedRelated: true, Counter: true, Verdict: Accept},
				{ID: "closed", Counter: true, Verdict: Drop},
			},
		}},
	}
}
