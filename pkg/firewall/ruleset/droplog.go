package ruleset

import "slices"

// Prefixes of the events sent to the NFLOG group: the first word is the
// verdict, the rest says which chain and rule decided. The agent's reader
// passes them on as the event's policy context. The kernel truncates a
// prefix at 127 bytes; these stay far below.
const (
	// DropPrefixDefault marks the forward chain's final drop: no policy,
	// Service or established connection allowed the packet.
	DropPrefixDefault = "drop forward default-deny"
	// AcceptPrefixNew marks the first packet of a connection that the
	// forward chain accepted.
	AcceptPrefixNew = "accept forward new-connection"
)

// AcceptLogChain is the chain that logs new accepted connections. It hooks
// forward after the forward chain, so it sees only what that chain accepted.
const AcceptLogChain = "log-accepted"

// NFLog sends logged packets to a netfilter log group (nflog), where the
// agent reads them, instead of the kernel log.
type NFLog struct {
	// Group is the NFLOG group, 1-65535.
	Group uint16
	// RatePerSecond limits the events per second the kernel sends, per
	// rule; the rest are not logged (but still dropped or accepted).
	RatePerSecond uint32
	// Accepted also logs the first packet of every accepted connection.
	Accepted bool
}

// WithNFLog returns rs with its logged drop sent to the NFLOG group and,
// with Accepted, a chain that logs new accepted connections. rs is not
// modified.
func WithNFLog(rs *Ruleset, l NFLog) *Ruleset {
	out := *rs
	out.Chains = slices.Clone(rs.Chains)
	for i, c := range out.Chains {
		if c.Name != "forward" {
			continue
		}
		chain := *c
		chain.Rules = slices.Clone(c.Rules)
		for j, r := range chain.Rules {
			if r.ID == "log-drop" {
				logged := *r
				logged.LogLimitPerSecond, logged.LogPrefix, logged.LogGroup = l.RatePerSecond, DropPrefixDefault, l.Group
				chain.Rules[j] = &logged
			}
		}
		out.Chains[i] = &chain
	}
	if l.Accepted {
		out.Chains = append(out.Chains, &Chain{
			Name: AcceptLogChain, Type: "filter", Hook: "forward", Priority: 10,
			Rules: []*Rule{{ID: "log-accepted", CtNew: true, LogLimitPerSecond: l.RatePerSecond, LogPrefix: AcceptPrefixNew, LogGroup: l.Group}},
		})
	}
	return &out
}
