// Package healthcheck reports the health of both extension types into the
// shoot's conditions through Gardener's health check library, as Gardener's
// extensions do: the `firewall` Extension from its FirewallDeployment, the
// `acl` Extension from its ManagedResource and from the injection of its
// policy into Gardener's per-shoot EnvoyFilters.
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

	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
)

// DefaultSyncPeriod is how often health is checked.
const DefaultSyncPeriod = 30 * time.Second

// AddToManager registers the health checks of both extension types. Every
// check reports into SystemComponentsHealthy, the condition Gardener
// aggregates for extensions' seed components. Their requests to the seed's
// kube-apiserver share a budget of qps per second of their own (budget.go);
// 0 means the defaults.
func AddToManager(mgr manager.Manager, syncPeriod time.Duration, qps float32) error {
	if syncPeriod == 0 {
		syncPeriod = DefaultSyncPeriod
	}
	if qps == 0 {
		qps = DefaultQPS
	}
	hc, err := withBudget(mgr, qps)
	if err != nil {
		return err
	}
	return addChecks(hc, syncPeriod)
}

func addChecks(mgr manager.Manager, syncPeriod time.Duration) error {
	condition := string(gardencorev1beta1.ShootSystemComponentsHealthy)
	if err := register(mgr, constants.FirewallExtensionType, syncPeriod, []healthcheck.ConditionTypeToHealthCheck{
		{ConditionType: condition, HealthCheck: NewDeploymentChecker(mgr.GetClient(), constants.FirewallDeploymentName)},
	}); err != nil {
		return err
	}
	return register(mgr, constants.ACLExtensionType, syncPeriod, []healthcheck.ConditionTypeToHealthCheck{
		{ConditionType: condition, HealthCheck: general.CheckManagedResource(constants.ACLManagedResourceName)},
		{ConditionType: condition, HealthCheck: NewInjectionChecker(mgr.GetClient())},
	})
}

func register(mgr manager.Manager, extensionType string, syncPeriod time.Duration, checks []healthcheck.ConditionTypeToHealthCheck) error {
	return healthcheck.DefaultRegistration(
		extensionType,
		extensionsv1alpha1.SchemeGroupVersion.WithKind(extensionsv1alpha1.ExtensionResource),
		func() client.ObjectList { return &extensionsv1alpha1.ExtensionList{} },
		func() extensionsv1alpha1.Object { return &extensionsv1alpha1.Extension{} },
		mgr,
		healthcheck.DefaultAddArgs{HealthCheckConfig: extensionsconfigv1alpha1.HealthCheckConfig{SyncPeriod: metav1.Duration{Duration: syncPeriod}}},
		nil,
		checks,
		nil,
	)
}
