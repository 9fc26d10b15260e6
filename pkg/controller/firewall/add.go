package firewall

import (
	"context"
	"time"

	"github.com/gardener/gardener/extensions/pkg/controller/extension"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
)

// ControllerName is the name of the firewall Extension controller.
const ControllerName = "firewall"

// AddOptions configure the firewall Extension controller.
type AddOptions struct {
	// Controller are the controller.Options.
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
	return extension.Add(mgr, extension.AddArgs{
		Actuator:          newActuator(mgr.GetClient(), direct, opts.Config, mgr.GetEventRecorder(ControllerName)),
		ControllerOptions: opts.Controller,
		ExtensionClasses:  opts.ExtensionClasses,
		Name:              ControllerName,
		FinalizerSuffix:   constants.FirewallExtensionType,
		Resync:            resync,
		Predicates:        extension.DefaultPredicates(ctx, mgr, opts.IgnoreOperationAnnotation),
		Type:              constants.FirewallExtensionType,
	})
}
