// Package providerfirewall is the mutating webhook that makes the firewall of
// gardener-extension-provider-metal (GEPM) stand aside in shoots whose firewall this
// extension drives. GEPM writes firewall-controller-manager's (FCM's) FirewallDeployment
// (firewall.metal-stack.io/v2) `firewall` with `spec.replicas: 1` into every metal shoot's
// namespace, again on every Worker reconcile, and nothing of GEPM turns it off. The webhook
// keeps `spec.replicas` at 0 there (the value asked for in AnnotationHeldReplicas), so that
// FCM allocates nothing and reports 0 of 0, which GEPM's health check takes as healthy.
//
// When it holds: the namespace's `firewall` Extension exists and is not being deleted, and
// either this extension's own FirewallDeployment has a Ready firewall (a running shoot switches
// over only once its new firewall forwards) or FCM's has none (nothing to switch from: a new
// shoot). Otherwise the write passes as it is.
//
// Scope: only FirewallDeployments in shoot namespaces that gardenlet labels with the `firewall`
// extension type (constants.ShootNamespaceFirewallLabel); no other namespace's writes reach it.
//
// Failure policy: Fail. With Ignore, a write of GEPM while the extension is unavailable would
// give the shoot a second firewall announcing its networks beside this extension's. Fail costs
// GEPM's Worker reconcile of these shoots (only) an error until the extension answers again.
package providerfirewall

import (
	"context"
	"fmt"
	"net/http"
	"strconv"

	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
)

const (
	// Path is where the webhook server serves the handler.
	Path = "/webhooks/firewalldeployment"
	// Name is the name of the webhook.
	Name = "firewalldeployments.firewall.metal-firewall.io"
)

// Mutator holds the replicas of FCM's FirewallDeployment at 0 where this extension drives
// the firewall.
type Mutator struct {
	// Reader reads the namespace's Extensions and this extension's FirewallDeployment.
	Reader client.Reader
}

// Handle implements admission.Handler. It reads FCM's object as unstructured: FCM's module
// is kept out of this one (its dependencies disagree with ignition's, which the userdata is
// checked with); the fields are FCM's CRD's, which the tests install.
func (m *Mutator) Handle(ctx context.Context, req admission.Request) admission.Response {
	deploy := &unstructured.Unstructured{}
	if err := deploy.UnmarshalJSON(req.Object.Raw); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding the FirewallDeployment %s/%s: %.300s", req.Namespace, req.Name, err.Error()))
	}
	replicas, _, err := unstructured.NestedInt64(deploy.Object, "spec", "replicas")
	if err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("FirewallDeployment %s/%s: spec.replicas: %.300s", req.Namespace, req.Name, err.Error()))
	}
	ready, _, err := unstructured.NestedInt64(deploy.Object, "status", "readyReplicas")
	if err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("FirewallDeployment %s/%s: status.readyReplicas: %.300s", req.Namespace, req.Name, err.Error()))
	}
	hold, why, err := Holds(ctx, m.Reader, req.Namespace, ready)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	if !hold {
		return admission.Allowed(why)
	}
	if replicas == 0 {
		return admission.Allowed("held at 0 replicas: " + why)
	}
	annotations := deploy.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[constants.AnnotationHeldReplicas] = strconv.FormatInt(replicas, 10)
	deploy.SetAnnotations(annotations)
	if err := unstructured.SetNestedField(deploy.Object, int64(0), "spec", "replicas"); err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	raw, err := deploy.MarshalJSON()
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	resp := admission.PatchResponseFromRaw(req.Object.Raw, raw)
	resp.Result = &metav1.Status{Message: "held at 0 replicas: " + why}
	return resp
}

// Holds reports whether FCM's FirewallDeployment in namespace, with fcmReady Ready replicas,
// is held at 0 replicas, and why.
func Holds(ctx context.Context, r client.Reader, namespace string, fcmReady int64) (bool, string, error) {
	list := &extensionsv1alpha1.ExtensionList{}
	if err := r.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return false, "", fmt.Errorf("listing the Extensions of namespace %s: %w", namespace, err)
	}
	found := false
	for i := range list.Items {
		if ex := &list.Items[i]; ex.Spec.Type == constants.FirewallExtensionType && ex.DeletionTimestamp == nil {
			found = true
		}
	}
	if !found {
		return false, "no firewall Extension in the namespace, or it is being deleted", nil
	}
	if fcmReady == 0 {
		return true, "the firewall Extension drives the firewall, and this deployment has no Ready firewall", nil
	}
	own := &firewallv1alpha1.FirewallDeployment{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: constants.FirewallDeploymentName}, own); err != nil {
		if apierrors.IsNotFound(err) {
			return false, "the firewall Extension's FirewallDeployment does not exist yet", nil
		}
		return false, "", fmt.Errorf("reading the FirewallDeployment %s/%s: %w", namespace, constants.FirewallDeploymentName, err)
	}
	if own.Status.ReadyReplicas == 0 {
		return false, "the firewall Extension's firewall is not Ready yet", nil
	}
	return true, "the firewall Extension's firewall is Ready", nil
}

// AddToManager registers the handler at Path on the manager's webhook server. It reads with
// the API reader: the webhook answers GEPM's rare writes, and a cache of every namespace's
// Extensions is not worth it.
func AddToManager(mgr manager.Manager) error {
	mgr.GetWebhookServer().Register(Path, &admission.Webhook{Handler: &Mutator{Reader: mgr.GetAPIReader()}})
	return nil
}

// Webhook is the registration of the webhook with its scope.
func Webhook(clientConfig admissionregistrationv1.WebhookClientConfig) admissionregistrationv1.MutatingWebhook {
	return admissionregistrationv1.MutatingWebhook{
		Name:                    Name,
		ClientConfig:            clientConfig,
		AdmissionReviewVersions: []string{"v1"},
		SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
		FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
		TimeoutSeconds:          ptr.To[int32](10),
		// Other mutating webhooks (FCM's defaulting) must not bring the replicas back.
		ReinvocationPolicy: ptr.To(admissionregistrationv1.IfNeededReinvocationPolicy),
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
			Rule: admissionregistrationv1.Rule{
				APIGroups:   []string{constants.MetalStackFirewallGroup},
				APIVersions: []string{constants.MetalStackFirewallVersion},
				Resources:   []string{"firewalldeployments"},
				Scope:       ptr.To(admissionregistrationv1.NamespacedScope),
			},
		}},
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{constants.ShootNamespaceFirewallLabel: "true"}},
	}
}
