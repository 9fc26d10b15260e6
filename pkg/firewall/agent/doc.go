// Package agent is the firewall agent's run loop: it reads the configuration,
// lets each enabled controller contribute its part of the ruleset, and has
// the one ruleset controller apply the merged result.
package agent
