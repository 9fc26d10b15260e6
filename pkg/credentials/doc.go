// Package credentials holds the seed-side credentials of a firewall's agent:
// a short-lived bootstrap token per firewall, and the RBAC that lets the
// agent's certificate read exactly its own Firewall and secrets. Nothing here
// is long-lived: tokens expire within the hour, certificates are requested
// by the agent with keys that never leave the machine.
package credentials
