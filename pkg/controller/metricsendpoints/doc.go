// Package metricsendpoints publishes each firewall's metrics address in its
// shoot: one EndpointSlice per firewall of the Service
// firewall/firewall-agent-metrics, from the address the agent reports in its
// Firewall's status in the seed, kept through a ManagedResource per shoot
// namespace. The agent itself writes no EndpointSlice, so a stolen shoot
// credential of a firewall cannot point any Service elsewhere.
package metricsendpoints
