// Package netdev reads what the kernel knows of the firewall's interfaces
// through netlink: their addresses and their traffic statistics.
package netdev
