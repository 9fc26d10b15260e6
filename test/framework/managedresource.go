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
	var objs []client.Object
	for _, ref := range mr.Spec.SecretRefs {
		secret := &corev1.Secret{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: ref.Name}, secret); err != nil {
			return nil, err
		}
		o, err := managedresources.ExtractObjectsFromSecret(decoder, secret)
		if err != nil {
			return nil, err
		}
		objs = append(objs, o...)
	}
	return objs, nil
}

// ACLSharedObjects decodes the objects of an ingress namespace's shared acl ManagedResources:
// the root (listener filters and dispatch) first, then each shard's, by name. None is an empty
// list, not an error.
func ACLSharedObjects(ctx context.Context, c client.Client, namespace string) ([]client.Object, error) {
	mrs := &resourcesv1alpha1.ManagedResourceList{}
	if err := c.List(ctx, mrs, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	var names []string
	for _, mr := range mrs.Items {
		if mr.Name == constants.ACLSharedManagedResourceName || strings.HasPrefix(mr.Name, constants.ACLSharedManagedResourceName+"-") {
			names = append(names, mr.Name)
		}
	}
	sort.Strings(names)
	var out []client.Object
	for _, name := range names {
		objs, err := ManagedResourceObjects(ctx, c, namespace, name)
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
	return out, nil
}
