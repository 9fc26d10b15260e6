// Package bgpdistance announces a firewall's distance to the switch fabric:
// an AS-path prepend per step of distance on the EVPN routes the firewall
// announces to the fabric's peer group (FABRIC in the FRR configuration
// metal-stack's os-installer renders), written into FRR's configuration,
// checked with `vtysh --dryrun` and applied by FRR's own reload
// (frr-reload.py), which changes the running bgpd without restarting it.
// The fabric then prefers the firewall with the shortest AS path: only one
// firewall of a shoot carries its traffic, and stateful filtering sees both
// directions of each connection.
package bgpdistance
