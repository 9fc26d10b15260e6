// Package fqdn is what the agent makes of a policy's toFQDNs: a selector in
// canonical form, the names of its nftables sets, and the matching of DNS
// names against many selectors at once, with the meaning metal-stack's
// firewall-controller gives them (its FQDNSelector.GetRegex).
package fqdn
