// Package envoyfilter is the mutating webhook that puts a shoot's ACL into Gardener's own per-shoot
// EnvoyFilter `<shoot namespace>-istio-tls-termination` in the Istio ingress namespaces, so
// the policy lives in the shoot's own TLS filter chains next to Gardener's config.
//
// Scope: only EnvoyFilters (networking.istio.io/v1alpha3) in namespaces labelled
// gardener.cloud/role=istio-ingress, and among those, by a matchCondition evaluated in the
// kube-apiserver, only names ending in -istio-tls-termination. Every other Istio object
// never reaches the webhook, so an outage cannot block them.
//
// Failure policy: Ignore. Enforcement does not depend on the webhook: the acl controller
// touches Gardener's EnvoyFilter, reads back what was stored and deploys the shoot's own
// EnvoyFilter wherever the injected policy is missing; it also watches Gardener's
// EnvoyFilters, so when Gardener rewrites one while the webhook is down, the controller puts
// its own filter back at once. Fail would instead block Gardener's shoot reconciliation
// whenever this extension is unavailable.
//
// Gardener's `<shoot namespace>-apiserver-proxy` EnvoyFilter is deliberately not mutated: its
// listener is an internal pipe behind the HTTP-CONNECT listener and sees no client address;
// the shared HTTP-CONNECT RBAC filter enforces the ACL for that path before the tunnel opens.
package envoyfilter

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	istionetworkingv1alpha3 "istio.io/client-go/pkg/apis/networking/v1alpha3"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/acl/envoy"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/acl/providerstatus"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
)

const (
	// Path is where the webhook server serves the handler.
	Path = "/webhooks/acl-envoyfilter"
	// Name is the name of the MutatingWebhookConfiguration and of its webhook.
	Name = "acl.envoyfilters.metal-firewall.io"
)

// Mutator injects the shoot's policy into Gardener's per-shoot EnvoyFilter.
type Mutator struct {
	// Reader reads the shoot's acl Extension.
	Reader client.Reader
}

// Handle implements admission.Handler.
func (m *Mutator) Handle(ctx context.Context, req admission.Request) admission.Response {
	if !strings.HasSuffix(req.Name, constants.GardenerTLSTerminationSuffix) {
		return admission.Allowed("not a Gardener per-shoot EnvoyFilter")
	}
	ef := &istionetworkingv1alpha3.EnvoyFilter{}
	if err := json.Unmarshal(req.Object.Raw, ef); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	shootNamespace := strings.TrimSuffix(ef.Name, constants.GardenerTLSTerminationSuffix)

	patches := envoy.StripInjected(ef.Spec.ConfigPatches)
	policy, hosts, found, err := m.policy(ctx, shootNamespace)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	if found {
		injected, err := envoy.NetworkFilterPatches(hosts, policy)
		if err != nil {
			return admission.Errored(http.StatusInternalServerError, err)
		}
		patches = append(patches, injected...)
	}
	if len(patches) == len(ef.Spec.ConfigPatches) && envoy.ContainsAll(ef.Spec.ConfigPatches, patches) {
		return admission.Allowed("nothing to change")
	}
	ef.Spec.ConfigPatches = patches
	raw, err := json.Marshal(ef)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	return admission.PatchResponseFromRaw(req.Object.Raw, raw)
}

// policy is the shoot's enforced policy, from its acl Extension's status.
func (m *Mutator) policy(ctx context.Context, shootNamespace string) (envoy.ShootPolicy, []string, bool, error) {
	list := &extensionsv1alpha1.ExtensionList{}
	if err := m.Reader.List(ctx, list, client.InNamespace(shootNamespace)); err != nil {
		return envoy.ShootPolicy{}, nil, false, err
	}
	for i := range list.Items {
		ex := &list.Items[i]
		if ex.DeletionTimestamp != nil {
			continue
		}
		if p, hosts, ok := providerstatus.Policy(ex); ok {
			return p, hosts, true, nil
		}
	}
	return envoy.ShootPolicy{}, nil, false, nil
}

// AddToManager registers the handler at Path on the manager's webhook server. It reads with the
// API reader so that a status the controller has just written is seen at once.
func AddToManager(mgr manager.Manager) error {
	mgr.GetWebhookServer().Register(Path, &admission.Webhook{Handler: &Mutator{Reader: mgr.GetAPIReader()}})
	return nil
}

// MutatingWebhookConfiguration is the registration of the webhook with its scope.
func MutatingWebhookConfiguration(clientConfig admissionregistrationv1.WebhookClientConfig) *admissionregistrationv1.MutatingWebhookConfiguration {
	return &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: Name},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:                    Name,
			ClientConfig:            clientConfig,
			AdmissionReviewVersions: []string{"v1"},
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			FailurePolicy:           ptr.To(admissionregistrationv1.Ignore),
			TimeoutSeconds:          ptr.To[int32](5),
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule: admissionregistrationv1.Rule{
					APIGroups:   []string{"networking.istio.io"},
					APIVersions: []string{"v1alpha3"},
					Resources:   []string{"envoyfilters"},
					Scope:       ptr.To(admissionregistrationv1.NamespacedScope),
				},
			}},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{constants.IngressNamespaceLabel: constants.IngressNamespaceRole}},
			MatchConditions: []admissionregistrationv1.MatchCondition{{
				Name:       "gardener-per-shoot-tls-termination",
				Expression: "object.metadata.name.endsWith('" + constants.GardenerTLSTerminationSuffix + "')",
			}},
		}},
	}
}
