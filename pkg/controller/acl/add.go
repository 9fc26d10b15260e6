package acl

import (
	"context"
	"time"

	"github.com/gardener/gardener/extensions/pkg/controller/extension"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
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
var DefaultAddOptions = AddOptions{Controller: controller.Options{MaxConcurrentReconciles: 5}}

// AddToManagerWithOptions adds the acl Extension controller (Gardener's generic Extension
// reconciler with this package's actuator) to the manager.
func AddToManagerWithOptions(ctx context.Context, mgr manager.Manager, opts AddOptions) error {
	actuator, err := NewActuator(mgr.GetClient(), opts.Config)
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
		FinalizerSuffix:   Type,
		Resync:            resync,
		Predicates:        extension.DefaultPredicates(ctx, mgr, opts.IgnoreOperationAnnotation),
		Type:              Type,
	})
}

// AddToManager adds the controller with DefaultAddOptions.
func AddToManager(ctx context.Context, mgr manager.Manager) error {
	return AddToManagerWithOptions(ctx, mgr, DefaultAddOptions)
}
