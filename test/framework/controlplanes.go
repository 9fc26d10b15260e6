package framework

import (
	"github.com/metal-firewall/gardener-extension-firewall/test/testenv"
)

// StartSeed starts a seed's control plane: the seed CRDs (Gardener's, Istio's,
// the firewall API's) and a kube-controller-manager that really signs the
// agents' CSRs once the extension approves them.
func StartSeed(name string) (*testenv.ControlPlane, error) {
	return StartSeedAt(name, "")
}

// StartSeedAt starts a seed that listens on address (see StartSeed).
func StartSeedAt(name, address string) (*testenv.ControlPlane, error) {
	return testenv.Start(testenv.Options{Name: name, CRDDirectoryPaths: testenv.SeedCRDPaths(), ControllerManager: true, Address: address})
}

// StartShoot starts a shoot's control plane, empty: the CRDs the agent
// needs there come through the extension's shoot ManagedResource, as in a
// real shoot. Nothing signs certificates there: the agent only holds a
// token for the shoot.
func StartShoot(name string) (*testenv.ControlPlane, error) {
	return StartShootAt(name, "")
}

// StartShootAt starts a shoot that listens on address (see StartShoot).
func StartShootAt(name, address string) (*testenv.ControlPlane, error) {
	return testenv.Start(testenv.Options{Name: name, Address: address})
}
