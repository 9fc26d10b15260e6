// Package dnsproxy is the agent's DNS proxy, which enforces the policies'
// toFQDNs. The nodes' queries to their resolvers are redirected to it; it
// asks the resolver and, before it releases the answer, allows the answer's
// addresses in the nftables sets of every selector that matches the name
// (following CNAME chains inside the answer), each for its TTL with a floor
// and a grace period. So the first connection after an answer already passes.
// The selectors of one port list share a set; the proxy keeps which of them
// allow each element, and deletes an element when none does any more.
//
// Only the answer section counts, only records of the asked name or of its
// CNAME chain, of the asked type, with a unicast address; a response must
// carry the query's ID and question; and bounds on the addresses per name,
// the names per selector and the addresses in all keep memory in check.
// What breaks a rule is passed through unlearned or dropped, never allowed.
package dnsproxy
