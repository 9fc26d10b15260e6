package firewall

import (
	"context"
	"time"

	extensionscontroller "github.com/gardener/gardener/extensions/pkg/controller"
	"github.com/gardener/gardener/extensions/pkg/controller/extension"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
)

// ControllerName is the name of the firewall Extension controller.
const ControllerName = "firewall"

// reconcileMargin is the time a reconcile has besides its wait: its writes
// before, and the status after.
const reconcileMargin = 2 * time.Minute

// AddOptions configure the firewall Extension controller.
type AddOptions struct {
	// Controller are the controller.Options; MaxConcurrentReconciles are the
	// workers for reconciles, the controller gets Config.MaxWaiting more.
	Controller controller.Options
	// IgnoreOperationAnnotation makes the controller reconcile on every change, not only when
	// gardenlet sets the operation annotation.
	IgnoreOperationAnnotation bool
	// ExtensionClasses are the extension classes served.
	ExtensionClasses []extensionsv1alpha1.ExtensionClass
	// Resync is the requeue interval of a successfully reconciled Extension. Default 10 minutes.
	Resync time.Duration
	// Config is what the operator sets.
	Config Config
}

// AddToManagerWithOptions adds the firewall Extension controller (Gardener's
// generic Extension reconciler with this package's actuator) to mgr.
func AddToManagerWithOptions(ctx context.Context, mgr manager.Manager, opts AddOptions) error {
	resync := opts.Resync
	if resync == 0 {
		resync = 10 * time.Minute
	}
	direct, err := client.New(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()})
	if err != nil {
		return err
	}
	a := newActuator(mgr.GetClient(), direct, opts.Config, mgr.GetEventRecorder(ControllerName))
	// The waits for booting firewalls get workers of their own, so that they
	// never hold those that reconcile other shoots' changes.
	controllerOptions := opts.Controller
	a.working = make(chan struct{}, max(controllerOptions.MaxConcurrentReconciles, 1))
	controllerOptions.MaxConcurrentReconciles = cap(a.working) + a.config.MaxWaiting
	// Gardener's reconciler gives each reconcile 3 minutes unless told: the
	// wait would be cut short long before the ready timeout says what is missing.
	controllerOptions.ReconciliationTimeout = max(controllerOptions.ReconciliationTimeout, a.config.ReadyTimeout+reconcileMargin)
	return extension.Add(mgr, extension.AddArgs{
		Actuator:          a,
		ControllerOptions: controllerOptions,
		ExtensionClasses:  opts.ExtensionClasses,
		Name:              ControllerName,
		FinalizerSuffix:   constants.FirewallExtensionType,
		Resync:            resync,
		Predicates:        extension.DefaultPredicates(ctx, mgr, opts.IgnoreOperationAnnotation),
		Type:              constants.FirewallExtensionType,
		WatchBuilder: extensionscontroller.NewWatchBuilder(func(c controller.Controller) error {
			return c.Watch(source.Channel(a.waiting.wake, &handler.EnqueueRequestForObject{}))
		}),
	})
}
