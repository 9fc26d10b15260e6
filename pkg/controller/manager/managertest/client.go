// Package managertest builds the fake seed the manager controllers' specs
// run against: controller-runtime's fake client with the firewall API, the
// status subresources the CRDs declare, and what kube-apiserver adds on
// create that the fake client leaves out.
package managertest

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
)

// Scheme is the seed's built-in types and the firewall API.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := firewallv1alpha1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

// NewClient returns a fake client holding objs. Created objects get a
// creation timestamp from clk, generation 1 and a UID, as kube-apiserver
// gives them: the controllers measure ages, compare generations and tell
// owners apart by UID. funcs
// intercept further calls; their Create, if any, runs after the stamping.
func NewClient(clk clock.Clock, funcs interceptor.Funcs, objs ...client.Object) client.WithWatch {
	create := funcs.Create
	funcs.Create = func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		if ts := obj.GetCreationTimestamp(); ts.IsZero() {
			obj.SetCreationTimestamp(metav1.NewTime(clk.Now()))
		}
		if obj.GetGeneration() == 0 {
			obj.SetGeneration(1)
		}
		if obj.GetUID() == "" {
			obj.SetUID(uuid.NewUUID())
		}
		if create != nil {
			return create(ctx, c, obj, opts...)
		}
		return c.Create(ctx, obj, opts...)
	}
	return fake.NewClientBuilder().WithScheme(Scheme()).WithObjects(objs...).
		WithStatusSubresource(&firewallv1alpha1.FirewallDeployment{}, &firewallv1alpha1.FirewallSet{}, &firewallv1alpha1.Firewall{}).
		WithInterceptorFuncs(funcs).Build()
}
