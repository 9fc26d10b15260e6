package rollrequest

import (
	"context"
	"fmt"
	"sync"

	extensionsconfigv1alpha1 "github.com/gardener/gardener/extensions/pkg/apis/config/v1alpha1"
	"github.com/gardener/gardener/extensions/pkg/util"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
)

var shootScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := firewallv1alpha1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}()

// monitorMapper maps the two kinds a roll request is read from, and nothing
// else. Without it, each shoot's client would discover and keep every API
// group of its shoot: 80 MB at 300 shoots, growing with each shoot.
var monitorMapper = func() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(ourMonitor, meta.RESTScopeNamespace)
	m.Add(metalStackMonitor, meta.RESTScopeNamespace)
	return m
}()

// ShootClients returns shoot clients built from a shoot namespace's
// `gardener` kubeconfig Secret, as every Gardener extension reaches a shoot.
// A client is kept while the Secret (whose token Gardener renews) is
// unchanged, so that asking every shoot each interval costs no new
// connection each time.
func ShootClients(seed client.Client) func(ctx context.Context, namespace string) (client.Client, error) {
	type cached struct {
		version string
		client  client.Client
	}
	var mu sync.Mutex
	clients := map[string]cached{}
	return func(ctx context.Context, namespace string) (client.Client, error) {
		secret := &corev1.Secret{}
		if err := seed.Get(ctx, client.ObjectKey{Namespace: namespace, Name: v1beta1constants.SecretNameGardener}, secret); err != nil {
			mu.Lock()
			delete(clients, namespace)
			mu.Unlock()
			return nil, fmt.Errorf("the shoot's kubeconfig %s/%s: %w", namespace, v1beta1constants.SecretNameGardener, err)
		}
		mu.Lock()
		c, ok := clients[namespace]
		mu.Unlock()
		if ok && c.version == secret.ResourceVersion {
			return c.client, nil
		}
		_, shoot, err := util.NewClientForShoot(ctx, seed, namespace, client.Options{Scheme: shootScheme, Mapper: monitorMapper}, extensionsconfigv1alpha1.RESTOptions{})
		if err != nil {
			return nil, fmt.Errorf("client for the shoot of %s: %w", namespace, err)
		}
		mu.Lock()
		clients[namespace] = cached{version: secret.ResourceVersion, client: shoot}
		mu.Unlock()
		return shoot, nil
	}
}
