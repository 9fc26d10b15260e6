// Package ruleset is the agent's pure model of the nftables ruleset: it turns
// the firewall spec and the network policies into a desired ruleset of a few
// fixed rules and named interval sets, and renders it in nft syntax. It
// touches no kernel state; package nftables programs what it describes.
package ruleset
