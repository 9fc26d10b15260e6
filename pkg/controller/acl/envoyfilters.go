package acl

import (
	"context"
	"strings"
	"time"

	"github.com/gardener/gardener/pkg/client/kubernetes"
	"github.com/gardener/gardener/pkg/resourcemanager/controller/garbagecollector/references"
	"github.com/gardener/gardener/pkg/utils/managedresources"
	istionetworkingv1alpha3 "istio.io/client-go/pkg/apis/networking/v1alpha3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// cleanupTimeout bounds the wait for gardener-resource-manager to delete the EnvoyFilters.
const cleanupTimeout = 2 * time.Minute

// envoyFilters is what the actuator deploys: EnvoyFilters in the seed, through one seed
// ManagedResource, so that gardener-resource-manager applies them and deletes them with it. It
// serves the shoot's own filters (in the shoot namespace) as well as the shared HTTP-CONNECT
// filter (in an ingress namespace).
type envoyFilters struct {
	client    client.Client
	namespace string
	name      string
	filters   []*istionetworkingv1alpha3.EnvoyFilter
}

func newEnvoyFilters(c client.Client, namespace, name string, filters ...*istionetworkingv1alpha3.EnvoyFilter) *envoyFilters {
	return &envoyFilters{client: c, namespace: namespace, name: name, filters: filters}
}

// Deploy creates or updates the ManagedResource with the filters; none leaves it empty.
func (e *envoyFilters) Deploy(ctx context.Context) error {
	registry := managedresources.NewRegistry(kubernetes.SeedScheme, kubernetes.SeedCodec, kubernetes.SeedSerializer)
	for _, ef := range e.filters {
		if err := registry.Add(ef); err != nil {
			return err
		}
	}
	return e.create(ctx, registry)
}

// deployOne creates or updates the ManagedResource with one EnvoyFilter given as its JSON (a
// shard or the root, up to 1 MiB). JSON is YAML to gardener-resource-manager's decoder, and the
// registry's conversion to YAML cost more than all the rest of a rebuild at thousands of shoots.
func (e *envoyFilters) deployOne(ctx context.Context, raw []byte) error {
	registry := managedresources.NewRegistry(kubernetes.SeedScheme, kubernetes.SeedCodec, kubernetes.SeedSerializer)
	registry.AddSerialized("envoyfilter__"+e.namespace+"__"+e.name+".json", raw)
	return e.create(ctx, registry)
}

// create writes the registry's objects as the seed ManagedResource.
func (e *envoyFilters) create(ctx context.Context, registry *managedresources.Registry) error {
	data, err := registry.SerializedObjects()
	if err != nil {
		return err
	}
	return managedresources.CreateForSeed(ctx, e.client, e.namespace, e.name, false, data)
}

// Destroy deletes the ManagedResource (gardener-resource-manager then deletes the filters) and
// every data Secret it ever had.
func (e *envoyFilters) Destroy(ctx context.Context) error {
	if err := managedresources.DeleteForSeed(ctx, e.client, e.namespace, e.name); err != nil {
		return err
	}
	return e.deleteSecrets(ctx)
}

// WaitCleanup waits until gardener-resource-manager has deleted the filters and the
// ManagedResource.
func (e *envoyFilters) WaitCleanup(ctx context.Context) error {
	timeoutCtx, cancel := context.WithTimeout(ctx, cleanupTimeout)
	defer cancel()
	return managedresources.WaitUntilDeleted(timeoutCtx, e.client, e.namespace, e.name)
}

// deleteSecrets deletes the immutable data Secrets of the ManagedResource
// (managedresource-<name>-<hash>), not only the one it refers to now. gardener-resource-manager's
// garbage collector would remove them too, later; the extension leaves nothing behind in
// namespaces it shares with others. They are found by the garbage collector's label and their
// name, reading metadata only: the shared ingress namespace holds other components' Secrets.
func (e *envoyFilters) deleteSecrets(ctx context.Context) error {
	secrets := &metav1.PartialObjectMetadataList{}
	secrets.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
	if err := e.client.List(ctx, secrets, client.InNamespace(e.namespace),
		client.MatchingLabels{references.LabelKeyGarbageCollectable: references.LabelValueGarbageCollectable}); err != nil {
		return err
	}
	for i := range secrets.Items {
		s := &secrets.Items[i]
		if strings.HasPrefix(s.Name, managedresources.SecretPrefix+e.name+"-") {
			if err := client.IgnoreNotFound(e.client.Delete(ctx, s)); err != nil {
				return err
			}
		}
	}
	return nil
}
