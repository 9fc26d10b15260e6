package framework

import (
	"github.com/gardener/gardener/pkg/client/kubernetes"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/test/testenv"
)

// SeedScheme knows a seed's kinds (Gardener's extension and resource kinds,
// Istio's) and the firewall API, as the extension's manager does.
var SeedScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(kubernetes.AddSeedSchemeToScheme(s))
	utilruntime.Must(firewallv1alpha1.AddToScheme(s))
	return s
}()

// ShootScheme knows a shoot's kinds and the firewall API's kinds the
// extension installs into shoots.
var ShootScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(kubernetes.AddShootSchemeToScheme(s))
	utilruntime.Must(firewallv1alpha1.AddToScheme(s))
	return s
}()

// SeedClient is an administrator's client of a seed with SeedScheme.
func SeedClient(seed *testenv.ControlPlane) (client.Client, error) {
	return client.New(seed.Config, client.Options{Scheme: SeedScheme})
}
