package framework

import (
	"context"
	"encoding/json"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metal-firewall/gardener-extension-firewall/test/testenv"
)

// ShootNamespace is what gardenlet has in a seed for one shoot: the
// namespace, the Cluster and the `gardener` Secret through which extensions
// reach the shoot's API.
type ShootNamespace struct {
	// Name is the shoot namespace, shoot--<project>--<shoot>.
	Name string
	// Shoot is the shoot's control plane.
	Shoot *testenv.ControlPlane
	// SeedNodes, SeedPods and ShootNodes are the networks in the Cluster;
	// the acl extension always allows them. Optional.
	SeedNodes, SeedPods, ShootNodes string
}

// Create creates the namespace, the Cluster and the `gardener` Secret.
func (s ShootNamespace) Create(ctx context.Context, c client.Client) error {
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name:   s.Name,
		Labels: map[string]string{v1beta1constants.GardenRole: v1beta1constants.GardenRoleShoot},
	}}); err != nil {
		return err
	}
	cluster, err := s.cluster()
	if err != nil {
		return err
	}
	if err := c.Create(ctx, cluster); err != nil {
		return err
	}
	gardenerSecret, err := testenv.GardenerSecret(s.Name, s.Shoot.Config)
	if err != nil {
		return err
	}
	return c.Create(ctx, gardenerSecret)
}

func (s ShootNamespace) cluster() (*extensionsv1alpha1.Cluster, error) {
	seed := &gardencorev1beta1.Seed{
		TypeMeta:   metav1.TypeMeta{APIVersion: gardencorev1beta1.SchemeGroupVersion.String(), Kind: "Seed"},
		ObjectMeta: metav1.ObjectMeta{Name: "seed"},
	}
	if s.SeedNodes != "" {
		seed.Spec.Networks.Nodes = &s.SeedNodes
	}
	seed.Spec.Networks.Pods = s.SeedPods
	shoot := &gardencorev1beta1.Shoot{
		TypeMeta:   metav1.TypeMeta{APIVersion: gardencorev1beta1.SchemeGroupVersion.String(), Kind: "Shoot"},
		ObjectMeta: metav1.ObjectMeta{Name: shootName(s.Name), Namespace: "garden-local"},
	}
	if s.ShootNodes != "" {
		shoot.Spec.Networking = &gardencorev1beta1.Networking{Nodes: &s.ShootNodes}
	}
	raw := func(o any) (runtime.RawExtension, error) {
		data, err := json.Marshal(o)
		return runtime.RawExtension{Raw: data}, err
	}
	seedRaw, err := raw(seed)
	if err != nil {
		return nil, err
	}
	shootRaw, err := raw(shoot)
	if err != nil {
		return nil, err
	}
	return &extensionsv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: s.Name},
		Spec: extensionsv1alpha1.ClusterSpec{
			CloudProfile: runtime.RawExtension{Raw: []byte(`{"apiVersion":"core.gardener.cloud/v1beta1","kind":"CloudProfile","metadata":{"name":"local"}}`)},
			Seed:         &seedRaw,
			Shoot:        shootRaw,
		},
	}, nil
}

// shootName is the last part of shoot--<project>--<shoot>.
func shootName(namespace string) string {
	for i := len(namespace) - 1; i > 0; i-- {
		if namespace[i] == '-' && namespace[i-1] == '-' {
			return namespace[i+1:]
		}
	}
	return namespace
}

// CreateSelfHosted creates the namespace and the Cluster of a self-hosted
// shoot (GEP-28, Gardener v1.147 on): a worker pool runs the control plane,
// and the Cluster names no seed.
func CreateSelfHosted(ctx context.Context, c client.Client, namespace string) error {
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name:   namespace,
		Labels: map[string]string{v1beta1constants.GardenRole: v1beta1constants.GardenRoleShoot},
	}}); err != nil {
		return err
	}
	shoot, err := json.Marshal(&gardencorev1beta1.Shoot{
		TypeMeta:   metav1.TypeMeta{APIVersion: gardencorev1beta1.SchemeGroupVersion.String(), Kind: "Shoot"},
		ObjectMeta: metav1.ObjectMeta{Name: shootName(namespace), Namespace: "garden-local"},
		Spec: gardencorev1beta1.ShootSpec{Provider: gardencorev1beta1.Provider{Type: "local", Workers: []gardencorev1beta1.Worker{
			{Name: "control-plane", Minimum: 1, Maximum: 1, ControlPlane: &gardencorev1beta1.WorkerControlPlane{}},
		}}},
	})
	if err != nil {
		return err
	}
	return c.Create(ctx, &extensionsv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: namespace},
		Spec: extensionsv1alpha1.ClusterSpec{
			CloudProfile: runtime.RawExtension{Raw: []byte(`{"apiVersion":"core.gardener.cloud/v1beta1","kind":"CloudProfile","metadata":{"name":"local"}}`)},
			Shoot:        runtime.RawExtension{Raw: shoot},
		},
	})
}
