package firewall

import (
	agentconfigv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/v1alpha1"
	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
)

// agentConfig is the agent's config (metal-stack MEP-16 shape) for a shoot's
// firewall: the firewall spec from the seed; the owner's
// ClusterwideNetworkPolicies and LoadBalancer Services from the shoot, where
// the agent also writes its FirewallMonitor. The shoot is reached with the
// kubeconfig the agent reads through the seed, which also brings a new
// bootstrap kubeconfig after a migration. It carries no credential: the
// bootstrap kubeconfig is a file of its own, minted per firewall by the
// manager. dns, from the providerConfig, turns on the DNS proxy that
// enforces the policies' toFQDNs. dropLog sends the logged packets to the
// shoot's receiver; metrics serves the metrics to the shoot. selfUpdate
// turns the agent's self-update on, with the operator's key at
// UpdatePublicKeyPath (see agentFiles).
func agentConfig(namespace string, dns *agentconfigv1alpha1.DNS, dropLog *agentconfigv1alpha1.DropLog, metrics *agentconfigv1alpha1.Metrics, selfUpdate bool) ([]byte, error) {
	firewall := &agentconfigv1alpha1.Controller{Source: agentconfigv1alpha1.SourceSeed}
	if selfUpdate {
		firewall.SelfUpdate = &agentconfigv1alpha1.SelfUpdate{Enabled: true, PublicKeyFile: agentconfigv1alpha1.UpdatePublicKeyPath}
	}
	return agentconfigv1alpha1.Marshal(&agentconfigv1alpha1.Config{
		DNS:     dns,
		DropLog: dropLog,
		Metrics: metrics,
		Sources: agentconfigv1alpha1.Sources{
			Seed: &agentconfigv1alpha1.SeedSource{
				BootstrapKubeconfig: agentconfigv1alpha1.BootstrapKubeconfigPath,
				Kubeconfig:          agentconfigv1alpha1.SeedKubeconfigPath,
				Namespace:           namespace,
			},
			Shoot: &agentconfigv1alpha1.ShootSource{
				Kubeconfig:   agentconfigv1alpha1.ShootKubeconfigPath,
				AccessSecret: constants.ShootAccessSecretName,
				Namespace:    constants.ShootNamespace,
			},
		},
		Controllers: agentconfigv1alpha1.Controllers{
			Firewall: firewall,
			CWNP:     &agentconfigv1alpha1.Controller{Source: agentconfigv1alpha1.SourceShoot},
			Service:  &agentconfigv1alpha1.Controller{Source: agentconfigv1alpha1.SourceShoot},
			Monitor:  &agentconfigv1alpha1.Controller{Source: agentconfigv1alpha1.SourceShoot},
		},
	})
}

// dropLogConfig is the agent's dropLog section: on (with the defaults) when
// the operator deployed the receiver, with new accepted connections when
// the providerConfig asks for them.
func dropLogConfig(droptailerImage string, logAccepted bool) *agentconfigv1alpha1.DropLog {
	if droptailerImage == "" {
		return nil
	}
	return &agentconfigv1alpha1.DropLog{LogAcceptedConnections: logAccepted}
}

// agentFiles are the files the machine gets besides its boot credential:
// the agent's config and, with the self-update on, the operator's public key
// (no secret, but like every userdata file root's only).
func agentFiles(config, updateKey []byte) []firewallv1alpha1.UserdataContent {
	files := []firewallv1alpha1.UserdataContent{{Path: agentconfigv1alpha1.ConfigPath, Content: string(config)}}
	if len(updateKey) > 0 {
		files = append(files, firewallv1alpha1.UserdataContent{Path: agentconfigv1alpha1.UpdatePublicKeyPath, Content: string(updateKey)})
	}
	return files
}
