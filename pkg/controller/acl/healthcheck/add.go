package healthcheck

import (
	"time"

	extensionsconfigv1alpha1 "github.com/gardener/gardener/extensions/pkg/apis/config/v1alpha1"
	"github.com/gardener/gardener/extensions/pkg/controller/healthcheck"
	"github.com/gardener/gardener/extensions/pkg/controller/healthcheck/general"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	aclcontroller "github.com/metal-firewall/gardener-extension-firewall/pkg/controller/acl"
)

// DefaultSyncPeriod is how often the acl's health is checked.
const DefaultSyncPeriod = 30 * time.Second

// AddToManager registers the health checks of `acl` Extensions: both report
// into SystemComponentsHealthy, the condition Gardener aggregates for
// extensions' seed components.
func AddToManager(mgr manager.Manager, syncPeriod time.Duration) error {
	if syncPeriod == 0 {
		syncPeriod = DefaultSyncPeriod
	}
	condition := string(gardencorev1beta1.ShootSystemComponentsHealthy)
	return healthcheck.DefaultRegistration(
		aclcontroller.Type,
		extensionsv1alpha1.SchemeGroupVersion.WithKind(extensionsv1alpha1.ExtensionResource),
		func() client.ObjectList { return &extensionsv1alpha1.ExtensionList{} },
		func() extensionsv1alpha1.Object { return &extensionsv1alpha1.Extension{} },
		mgr,
		healthcheck.DefaultAddArgs{HealthCheckConfig: extensionsconfigv1alpha1.HealthCheckConfig{SyncPeriod: metav1.Duration{Duration: syncPeriod}}},
		nil,
		[]healthcheck.ConditionTypeToHealthCheck{
			{ConditionType: condition, HealthCheck: general.CheckManagedResource(aclcontroller.ManagedResourceName)},
			{ConditionType: condition, HealthCheck: NewInjectionChecker(mgr.GetClient())},
		},
		nil,
	)
}
