// Package snataddr keeps the addresses the egress rules source-NAT to on the
// interfaces the traffic leaves through: a SNAT address that is not local
// gets no replies, because nobody answers ARP or neighbour discovery for it.
// Only addresses this package added are ever removed; it records them in a
// file, so an address an operator configured stays, across restarts too.
package snataddr
