// Package nftables programs the agent's ruleset into the kernel through
// netlink (github.com/google/nftables), as one atomic batch per change, in the
// agent's own table only. A change that only adds or removes set elements
// updates those elements and keeps the table, its rules and their counters.
package nftables
