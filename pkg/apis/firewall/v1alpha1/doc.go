// Package v1alpha1 holds the firewall API of this project: FirewallDeployment,
// FirewallSet and Firewall in the seed, FirewallMonitor and
// ClusterwideNetworkPolicy in the shoot.
//
// The group is deliberately not firewall.metal-stack.io, which a seed may
// already serve from metal-stack's firewall-controller-manager.
//
// +kubebuilder:object:generate=true
// +groupName=firewall.metal-firewall.io
package v1alpha1
