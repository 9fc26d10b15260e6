package healthcheck

import (
	"context"
	"fmt"

	"github.com/gardener/gardener/extensions/pkg/controller/healthcheck"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
)

// DeploymentChecker checks the shoot's FirewallDeployment in the seed.
type DeploymentChecker struct {
	client client.Client
	name   string
}

var _ healthcheck.HealthCheck = &DeploymentChecker{}

// NewDeploymentChecker checks the FirewallDeployment name of the Extension's namespace.
func NewDeploymentChecker(c client.Client, name string) *DeploymentChecker {
	return &DeploymentChecker{client: c, name: name}
}

// SetLoggerSuffix is part of the health check interface; the checker logs nothing.
func (c *DeploymentChecker) SetLoggerSuffix(_, _ string) {}

// Check is healthy when the deployment has its firewalls Ready, progressing
// while a rollout is within its deadline, unhealthy otherwise.
func (c *DeploymentChecker) Check(ctx context.Context, req types.NamespacedName) (*healthcheck.SingleCheckResult, error) {
	d := &firewallv1alpha1.FirewallDeployment{}
	if err := c.client.Get(ctx, client.ObjectKey{Namespace: req.Namespace, Name: c.name}, d); err != nil {
		if apierrors.IsNotFound(err) {
			return &healthcheck.SingleCheckResult{Status: gardencorev1beta1.ConditionFalse, Detail: fmt.Sprintf("FirewallDeployment %s does not exist", c.name)}, nil
		}
		return nil, err
	}
	available := meta.FindStatusCondition(d.Status.Conditions, firewallv1alpha1.ConditionAvailable)
	progressing := meta.FindStatusCondition(d.Status.Conditions, firewallv1alpha1.ConditionProgressing)
	switch {
	case available != nil && available.Status == "True" && available.ObservedGeneration == d.Generation:
		return &healthcheck.SingleCheckResult{Status: gardencorev1beta1.ConditionTrue}, nil
	case progressing != nil && progressing.Status == "False":
		return &healthcheck.SingleCheckResult{Status: gardencorev1beta1.ConditionFalse, Detail: "firewall rollout failed: " + progressing.Message}, nil
	case available != nil:
		return &healthcheck.SingleCheckResult{Status: gardencorev1beta1.ConditionProgressing, Detail: "firewall not ready: " + available.Message}, nil
	}
	return &healthcheck.SingleCheckResult{Status: gardencorev1beta1.ConditionProgressing, Detail: "firewall rollout has not reported yet"}, nil
}
