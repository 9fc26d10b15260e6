package acl

import (
	"context"
	"strings"
	"time"

	extensionscontroller "github.com/gardener/gardener/extensions/pkg/controller"
	"github.com/gardener/gardener/extensions/pkg/controller/extension"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	istionetworkingv1alpha3 "istio.io/client-go/pkg/apis/networking/v1alpha3"
	istionetworkingv1beta1 "istio.io/client-go/pkg/apis/networking/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
)

// ControllerName is the name of the acl Extension controller.
const ControllerName = "acl"

// AddOptions configure the acl Extension controller.
type AddOptions struct {
	// Controller are the controller.Options.
	Controller controller.Options
	// IgnoreOperationAnnotation makes the controller reconcile on every change, not only when
	// gardenlet sets the operation annotation.
	IgnoreOperationAnnotation bool
	// ExtensionClasses are the extension classes served.
	ExtensionClasses []extensionsv1alpha1.ExtensionClass
	// Config is the operator's configuration (always-allowed CIDRs, limits).
	Config Config
	// Resync is the requeue interval of a successfully reconciled Extension. It also heals
	// the shared filter after concurrent changes of two shoots. Default 10 minutes.
	Resync time.Duration
}

// DefaultAddOptions are used by AddToManager.
var DefaultAddOptions = AddOptions{Controller: controller.Options{MaxConcurrentReconciles: 20}}

// AddToManagerWithOptions adds the acl Extension controller (Gardener's generic Extension
// reconciler with this package's actuator) to the manager.
func AddToManagerWithOptions(ctx context.Context, mgr manager.Manager, opts AddOptions) error {
	actuator, err := NewActuator(mgr.GetClient(), mgr.GetAPIReader(), opts.Config)
	if err != nil {
		return err
	}
	resync := opts.Resync
	if resync == 0 {
		resync = 10 * time.Minute
	}
	return extension.Add(mgr, extension.AddArgs{
		Actuator:          actuator,
		ControllerOptions: opts.Controller,
		ExtensionClasses:  opts.ExtensionClasses,
		Name:              ControllerName,
		FinalizerSuffix:   constants.ACLExtensionType,
		Resync:            resync,
		Predicates:        extension.DefaultPredicates(ctx, mgr, opts.IgnoreOperationAnnotation),
		Type:              constants.ACLExtensionType,
		WatchBuilder: extensionscontroller.NewWatchBuilder(func(c controller.Controller) error {
			// When Gardener rewrites its per-shoot EnvoyFilter (and the webhook may have been
			// down), reconcile the shoot at once so that its own EnvoyFilter comes back.
			return c.Watch(source.Kind[client.Object](mgr.GetCache(), &istionetworkingv1alpha3.EnvoyFilter{},
				handler.EnqueueRequestsFromMapFunc(gardenerEnvoyFilterToExtensions(mgr.GetClient()))))
		}, func(c controller.Controller) error {
			// When a Gateway of the shoot changes (kube-apiserver hosts, an observability host,
			// or a selector after a zone change), the policy must follow at once.
			return c.Watch(source.Kind[client.Object](mgr.GetCache(), &istionetworkingv1beta1.Gateway{},
				handler.EnqueueRequestsFromMapFunc(namespaceToExtensions(mgr.GetClient()))))
		}, func(c controller.Controller) error {
			// The always-allowed CIDRs and the seed's ingress domain come from the Cluster; follow
			// them without waiting for gardenlet's next reconciliation of the Extension.
			return c.Watch(source.Kind[client.Object](mgr.GetCache(), &extensionsv1alpha1.Cluster{},
				handler.EnqueueRequestsFromMapFunc(clusterToExtensions(mgr.GetClient())),
				inputsChanged(clusterInputs)))
		}, func(c controller.Controller) error {
			// The provider may report new egress CIDRs or node networks at any time.
			return c.Watch(source.Kind[client.Object](mgr.GetCache(), &extensionsv1alpha1.Infrastructure{},
				handler.EnqueueRequestsFromMapFunc(namespaceToExtensions(mgr.GetClient())),
				inputsChanged(infrastructureInputs)))
		}, func(c controller.Controller) error {
			// gardenlet's RemoveHTTPProxyLegacyPort takes the legacy VPN port off the gateway's
			// Service: the shared filters drop its listener without waiting for a shoot's change.
			return c.Watch(source.Kind[client.Object](mgr.GetCache(), &corev1.Service{},
				handler.EnqueueRequestsFromMapFunc(gatewayServiceToExtension(mgr.GetClient())),
				inputsChanged(gatewayPorts)))
		}),
	})
}

// gardenerEnvoyFilterToExtensions maps <shoot namespace>-istio-tls-termination to the shoot's acl Extensions.
func gardenerEnvoyFilterToExtensions(c client.Reader) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		if !strings.HasSuffix(obj.GetName(), constants.GardenerTLSTerminationSuffix) {
			return nil
		}
		return aclExtensionsIn(ctx, c, strings.TrimSuffix(obj.GetName(), constants.GardenerTLSTerminationSuffix))
	}
}

func aclExtensionsIn(ctx context.Context, c client.Reader, namespace string) []reconcile.Request {
	list := &extensionsv1alpha1.ExtensionList{}
	if err := c.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, ex := range list.Items {
		if ex.Spec.Type == constants.ACLExtensionType {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&ex)})
		}
	}
	return out
}

// AddToManager adds the controller with DefaultAddOptions.
func AddToManager(ctx context.Context, mgr manager.Manager) error {
	return AddToManagerWithOptions(ctx, mgr, DefaultAddOptions)
}
