// Package csrapprover approves the client certificate requests of firewall
// agents, the way kube-controller-manager's csrapproving controller does for
// kubelets: only for the firewall's own bootstrap identity or its current
// certificate, for exactly its own subject, for client auth only, with a
// strong key and a short validity, and only if a SubjectAccessReview passes.
// kube-controller-manager signs what it approves.
package csrapprover

import (
	"context"
	"fmt"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
)

// Reconciler approves or denies firewall agents' CSRs.
type Reconciler struct {
	Client client.Client
	// BootNamespace holds the firewalls' boot ServiceAccounts (the extension's namespace).
	BootNamespace string
	// MaxDuration is the longest validity a firewall may ask for.
	MaxDuration time.Duration
}

// AddToManager registers the controller for pending kube-apiserver-client CSRs.
func (r *Reconciler) AddToManager(mgr manager.Manager) error {
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	if r.MaxDuration == 0 {
		r.MaxDuration = DefaultMaxDuration
	}
	return builder.ControllerManagedBy(mgr).Named("firewall-csr-approver").
		For(&certificatesv1.CertificateSigningRequest{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(obj client.Object) bool {
			csr, ok := obj.(*certificatesv1.CertificateSigningRequest)
			return ok && csr.Spec.SignerName == certificatesv1.KubeAPIServerClientSignerName && !decided(csr)
		}))).
		Complete(r)
}

// Reconcile decides one CSR.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	csr := &certificatesv1.CertificateSigningRequest{}
	if err := r.Client.Get(ctx, req.NamespacedName, csr); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if csr.Spec.SignerName != certificatesv1.KubeAPIServerClientSignerName || decided(csr) {
		return reconcile.Result{}, nil
	}
	fr, err := parse(csr)
	if err != nil {
		// Unparseable requests are not ours to judge: another approver may know them.
		log.FromContext(ctx).V(1).Info("Ignoring CSR", "reason", err.Error())
		return reconcile.Result{}, nil
	}
	if fr == nil {
		return reconcile.Result{}, nil
	}
	log := log.FromContext(ctx).WithValues("firewall", fr.namespace+"/"+fr.name, "requester", csr.Spec.Username)

	reason := check(csr, fr, r.BootNamespace, r.MaxDuration)
	if reason == "" {
		reason, err = r.checkAPI(ctx, csr, fr)
		if err != nil {
			return reconcile.Result{}, err
		}
	}
	if reason != "" {
		log.Info("Denying firewall CSR", "reason", reason)
		return reconcile.Result{}, r.decide(ctx, csr, certificatesv1.CertificateDenied, "FirewallCSRInvalid", reason)
	}
	log.Info("Approving firewall CSR")
	return reconcile.Result{}, r.decide(ctx, csr, certificatesv1.CertificateApproved, "FirewallCSRApproved",
		"approved by gardener-extension-firewall for "+firewallv1alpha1.AgentUserName(fr.namespace, fr.name))
}

// checkAPI checks that the Firewall exists and is neither being migrated
// away nor deleted, that the requester may create the firewallclient
// subresource, and that the request carries the firewall's key.
func (r *Reconciler) checkAPI(ctx context.Context, csr *certificatesv1.CertificateSigningRequest, fr *firewallRequest) (string, error) {
	fw := &firewallv1alpha1.Firewall{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: fr.namespace, Name: fr.name}, fw); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Sprintf("no Firewall %s/%s in this seed", fr.namespace, fr.name), nil
		}
		return "", err
	}
	if firewallv1alpha1.IsPaused(fw.Annotations) {
		// A paused Firewall is being migrated away: this seed no longer vouches for it.
		return fmt.Sprintf("Firewall %s/%s is paused", fr.namespace, fr.name), nil
	}
	if fw.DeletionTimestamp != nil {
		return fmt.Sprintf("Firewall %s/%s is being deleted", fr.namespace, fr.name), nil
	}

	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range csr.Spec.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: csr.Spec.Username, Groups: csr.Spec.Groups, UID: csr.Spec.UID, Extra: extra,
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Group: certificatesv1.GroupName, Resource: "certificatesigningrequests", Subresource: firewallv1alpha1.CSRSubresource, Verb: "create",
		},
	}}
	if err := r.Client.Create(ctx, sar); err != nil {
		return "", fmt.Errorf("SubjectAccessReview: %w", err)
	}
	if !sar.Status.Allowed {
		return fmt.Sprintf("requester %q may not create certificatesigningrequests/%s: %s", csr.Spec.Username, firewallv1alpha1.CSRSubresource, sar.Status.Reason), nil
	}
	// Last: it pins the key of a first certificate.
	return r.checkKey(ctx, fr, fw)
}

func (r *Reconciler) decide(ctx context.Context, csr *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType, reason, message string) error {
	csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: t, Status: corev1.ConditionTrue, Reason: reason, Message: message, LastUpdateTime: metav1.Now(),
	})
	return client.IgnoreNotFound(r.Client.SubResource("approval").Update(ctx, csr))
}

func decided(csr *certificatesv1.CertificateSigningRequest) bool {
	for _, c := range csr.Status.Conditions {
		if c.Type == certificatesv1.CertificateApproved || c.Type == certificatesv1.CertificateDenied {
			return true
		}
	}
	return false
}
