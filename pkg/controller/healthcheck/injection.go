package healthcheck

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/gardener/gardener/extensions/pkg/controller/healthcheck"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	istionetworkingv1alpha3 "istio.io/client-go/pkg/apis/networking/v1alpha3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/acl/providerstatus"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
)

// DriftThreshold is how long drift may last before the condition turns
// False: the controller re-triggers the webhook within seconds, so drift that
// outlasts this means the webhook is down.
const DriftThreshold = 5 * time.Minute

// InjectionChecker reports drift of the acl policy: Gardener's per-shoot
// EnvoyFilters must carry it (drift: the webhook was down when Gardener
// re-applied them).
type InjectionChecker struct {
	client client.Client
}

var _ healthcheck.HealthCheck = &InjectionChecker{}

// NewInjectionChecker returns the drift check.
func NewInjectionChecker(c client.Client) *InjectionChecker { return &InjectionChecker{client: c} }

// SetLoggerSuffix is part of the health check interface; the checker logs nothing.
func (c *InjectionChecker) SetLoggerSuffix(_, _ string) {}

// Check is progressing while a per-shoot EnvoyFilter lacks the current
// policy: the extension's own filter enforces it meanwhile, and the controller
// re-triggers the webhook.
func (c *InjectionChecker) Check(ctx context.Context, req types.NamespacedName) (*healthcheck.SingleCheckResult, error) {
	exts := &extensionsv1alpha1.ExtensionList{}
	if err := c.client.List(ctx, exts, client.InNamespace(req.Namespace)); err != nil {
		return nil, err
	}
	var stale []string
	for i := range exts.Items {
		ex := &exts.Items[i]
		if ex.Spec.Type != constants.ACLExtensionType {
			continue
		}
		for _, ns := range providerstatus.IngressNamespaces(ex) {
			ef := &istionetworkingv1alpha3.EnvoyFilter{}
			if err := c.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: req.Namespace + constants.GardenerTLSTerminationSuffix}, ef); err != nil {
				if apierrors.IsNotFound(err) {
					continue // Gardener has not exposed the shoot here (yet).
				}
				return nil, err
			}
			ok, err := providerstatus.InjectionCurrent(ef, ex)
			if err != nil {
				return nil, err
			}
			if !ok {
				stale = append(stale, ef.Namespace+"/"+ef.Name)
			}
		}
	}
	if len(stale) > 0 {
		return &healthcheck.SingleCheckResult{
			Status:               gardencorev1beta1.ConditionProgressing,
			ProgressingThreshold: ptr.To(DriftThreshold),
			Detail:               fmt.Sprintf("the acl policy is not injected into %s; the extension's own filter enforces it meanwhile", strings.Join(stale, ", ")),
		}, nil
	}
	return &healthcheck.SingleCheckResult{Status: gardencorev1beta1.ConditionTrue}, nil
}
