package firewall

import (
	"sigs.k8s.io/yaml"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
)

// Paths of the agent's files on the firewall machine.
const (
	AgentConfigPath         = "/etc/firewall-agent/config.yaml"
	AgentSeedKubeconfigPath = "/etc/firewall-agent/seed.kubeconfig"
	// AgentShootKubeconfigPath keeps the shoot kubeconfig the agent reads
	// through the seed, so that it reaches the shoot when the seed is gone.
	AgentShootKubeconfigPath = "/etc/firewall-agent/shoot.kubeconfig"
)

// agentConfig is the agent's config (metal-stack MEP-16 shape) for a shoot's
// firewall: the firewall spec from the seed; the owner's
// ClusterwideNetworkPolicies and LoadBalancer Services from the shoot, where
// the agent also writes its FirewallMonitor. The shoot is reached with the
// kubeconfig the agent reads through the seed, which also brings a new
// bootstrap kubeconfig after a migration. It carries no credential: the
// bootstrap kubeconfig is a file of its own, minted per firewall by the
// manager.
func agentConfig(namespace string) ([]byte, error) {
	return yaml.Marshal(map[string]any{
		"sources": map[string]any{
			"seed": map[string]any{
				"bootstrapKubeconfig": "/etc/firewall-agent/bootstrap.kubeconfig",
				"kubeconfig":          AgentSeedKubeconfigPath,
				"namespace":           namespace,
			},
			"shoot": map[string]any{
				"kubeconfig":   AgentShootKubeconfigPath,
				"accessSecret": ShootAccessSecretName,
				"namespace":    firewallv1alpha1.ClusterwideNetworkPolicyNamespace,
			},
		},
		"controllers": map[string]any{
			"firewall": map[string]any{"source": "seed"},
			"cwnp":     map[string]any{"source": "shoot"},
			"service":  map[string]any{"source": "shoot"},
			"monitor":  map[string]any{"source": "shoot"},
		},
	})
}
