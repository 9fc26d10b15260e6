// Package ruleset is the agent's pure model of the nftables ruleset: it turns
// the firewall spec and the network policies into a desired ruleset of a few
// fixed rules and named interval sets, and renders it in nft syntax. It
// touches no kernel state; package nftables programs what it describes.
//
// Build (oracle.go) computes a ruleset from scratch and is the reference; the
// agent uses a Builder (builder*.go), which updates only what a change of the
// policies touches and is tested to build exactly what Build builds.
package ruleset
