package framework

import (
	"context"
	"sort"
	"strings"

	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"github.com/gardener/gardener/pkg/client/kubernetes"
	"github.com/gardener/gardener/pkg/utils/managedresources"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
)

// ManagedResourceObjects decodes the objects a seed ManagedResource carries:
// what the seed's gardener-resource-manager would apply.
func ManagedResourceObjects(ctx context.Context, c client.Client, namespace, name string) ([]client.Object, error) {
	return managedResourceObjects(ctx, c, namespace, name, kubernetes.SeedCodec.UniversalDeserializer())
}

// ShootManagedResourceObjects decodes the objects a shoot ManagedResource
// (class shoot) carries: what the shoot's gardener-resource-manager applies.
func ShootManagedResourceObjects(ctx context.Context, c client.Client, namespace, name string) ([]client.Object, error) {
	return managedResourceObjects(ctx, c, namespace, name, kubernetes.ShootCodec.UniversalDeserializer())
}

func managedResourceObjects(ctx context.Context, c client.Client, namespace, name string, decoder runtime.Decoder) ([]client.Object, error) {
	mr := &resourcesv1alpha1.ManagedResource{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, mr); err != nil {
		return nil, err
	}
	return refsObjects(ctx, c, mr, decoder)
}

// refsObjects decodes the objects of all data Secrets the ManagedResource refers to.
func refsObjects(ctx context.Context, c client.Client, mr *resourcesv1alpha1.ManagedResource, decoder runtime.Decoder) ([]client.Object, error) {
	var objs []client.Object
	for _, ref := range mr.Spec.SecretRefs {
		o, err := dataSecretObjects(ctx, c, mr.Namespace, ref.Name, decoder)
		if err != nil {
			return nil, err
		}
		objs = append(objs, o...)
	}
	return objs, nil
}

// DataSecretObjects decodes the objects of one data Secret of a seed ManagedResource. Data
// Secrets are immutable and named by their content: a caller may keep what it decoded by name.
func DataSecretObjects(ctx context.Context, c client.Client, namespace, name string) ([]client.Object, error) {
	return dataSecretObjects(ctx, c, namespace, name, kubernetes.SeedCodec.UniversalDeserializer())
}

func dataSecretObjects(ctx context.Context, c client.Client, namespace, name string, decoder runtime.Decoder) ([]client.Object, error) {
	secret := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, secret); err != nil {
		return nil, err
	}
	return managedresources.ExtractObjectsFromSecret(decoder, secret)
}

// ACLSharedManagedResources are an ingress namespace's shared acl ManagedResources: the root
// first, then each shard's, by name.
func ACLSharedManagedResources(ctx context.Context, c client.Client, namespace string) ([]resourcesv1alpha1.ManagedResource, error) {
	mrs := &resourcesv1alpha1.ManagedResourceList{}
	if err := c.List(ctx, mrs, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	var out []resourcesv1alpha1.ManagedResource
	for _, mr := range mrs.Items {
		if mr.Name == constants.ACLSharedManagedResourceName || strings.HasPrefix(mr.Name, constants.ACLSharedManagedResourceName+"-") {
			out = append(out, mr)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// ACLSharedObjects decodes the objects of an ingress namespace's shared acl ManagedResources:
// the root (listener filters and dispatch) first, then each shard's, by name. None is an empty
// list, not an error.
func ACLSharedObjects(ctx context.Context, c client.Client, namespace string) ([]client.Object, error) {
	mrs, err := ACLSharedManagedResources(ctx, c, namespace)
	if err != nil {
		return nil, err
	}
	var out []client.Object
	for i := range mrs {
		objs, err := refsObjects(ctx, c, &mrs[i], kubernetes.SeedCodec.UniversalDeserializer())
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
	return out, nil
}
