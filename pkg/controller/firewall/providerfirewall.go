package firewall

import (
	"context"
	"fmt"
	"strconv"
	"time"

	reconcilerutils "github.com/gardener/gardener/pkg/controllerutils/reconciler"
	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
)

// giveBackProviderFirewall gives provider-metal's firewall the replicas the webhook held
// and waits until firewall-controller-manager reports them Ready: only then may this
// extension's firewalls go, so that the shoot is never without one. Nothing is given back
// where nothing was held, or to a shoot that is being deleted (its Worker goes too).
func (a *actuator) giveBackProviderFirewall(ctx context.Context, log logr.Logger, namespace string) error {
	deploy, err := a.providerFirewall(ctx, namespace)
	if deploy == nil || err != nil {
		return err
	}
	held, ok := deploy.GetAnnotations()[constants.AnnotationHeldReplicas]
	if !ok || deploy.GetDeletionTimestamp() != nil {
		return nil
	}
	shoot, err := a.shootOf(ctx, namespace)
	if err != nil {
		return err
	}
	if shoot != nil && shoot.DeletionTimestamp != nil {
		return nil
	}
	want, err := strconv.ParseInt(held, 10, 64)
	if err != nil || want < 0 {
		return fmt.Errorf("FirewallDeployment %s/%s of provider-metal: annotation %s=%.20q is not a number of replicas", namespace, deploy.GetName(), constants.AnnotationHeldReplicas, held)
	}
	replicas, _, _ := unstructured.NestedInt64(deploy.Object, "spec", "replicas")
	if replicas != want {
		log.Info("Giving provider-metal's firewall its replicas back before this extension's firewall goes", "replicas", want)
		patch := fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, want)
		if err := a.direct.Patch(ctx, deploy, client.RawPatch(types.MergePatchType, patch)); err != nil {
			return err
		}
		// The manager moves this extension's firewalls to the longest distance
		// now, so that provider-metal's new one takes the traffic when it
		// announces; it does not watch provider-metal's deployment.
		own := &firewallv1alpha1.FirewallDeployment{ObjectMeta: metav1.ObjectMeta{Name: constants.FirewallDeploymentName, Namespace: namespace}}
		reconcileNow := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:"true"}}}`, firewallv1alpha1.AnnotationReconcile)
		if err := a.direct.Patch(ctx, own, client.RawPatch(types.MergePatchType, reconcileNow)); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	ready, _, _ := unstructured.NestedInt64(deploy.Object, "status", "readyReplicas")
	if ready < want {
		log.Info("Waiting for provider-metal's firewall before this extension's firewall goes", "ready", ready, "replicas", want)
		return &reconcilerutils.RequeueAfterError{RequeueAfter: 10 * time.Second,
			Cause: fmt.Errorf("provider-metal's firewall (FirewallDeployment %s/%s of firewall-controller-manager): %d of %d Ready", namespace, deploy.GetName(), ready, want)}
	}
	// Given back: the annotation goes, so that a later Extension holds afresh.
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:null}}}`, constants.AnnotationHeldReplicas)
	return a.direct.Patch(ctx, deploy, client.RawPatch(types.MergePatchType, patch))
}

// holdProviderFirewall sets provider-metal's firewall to 0 replicas, once this
// extension's firewall forwards, as the webhook does at provider-metal's next
// write: a running shoot switches over now, not at its next Worker reconcile.
// The replicas asked for are kept in the webhook's annotation, for the give-back.
// This extension's firewall keeps the longest distance until
// firewall-controller-manager reports provider-metal's gone (the manager).
func (a *actuator) holdProviderFirewall(ctx context.Context, log logr.Logger, namespace string) error {
	deploy, err := a.providerFirewall(ctx, namespace)
	if deploy == nil || err != nil || deploy.GetDeletionTimestamp() != nil {
		return err
	}
	replicas, _, _ := unstructured.NestedInt64(deploy.Object, "spec", "replicas")
	if replicas == 0 {
		return nil
	}
	log.Info("Holding provider-metal's firewall: this extension's firewall forwards", "replicas", replicas)
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}},"spec":{"replicas":0}}`, constants.AnnotationHeldReplicas, strconv.FormatInt(replicas, 10))
	return a.direct.Patch(ctx, deploy, client.RawPatch(types.MergePatchType, patch))
}

// providerFirewall reads firewall-controller-manager's FirewallDeployment of
// provider-metal; nil when there is none, or no such kind (not a metal seed).
func (a *actuator) providerFirewall(ctx context.Context, namespace string) (*unstructured.Unstructured, error) {
	deploy := &unstructured.Unstructured{}
	deploy.SetGroupVersionKind(constants.ProviderFirewallDeploymentGVK)
	if err := a.direct.Get(ctx, client.ObjectKey{Namespace: namespace, Name: constants.ProviderFirewallDeploymentName}, deploy); err != nil {
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	return deploy, nil
}
