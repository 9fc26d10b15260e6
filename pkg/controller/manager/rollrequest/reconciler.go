// Package rollrequest rolls a shoot's firewall when the shoot's owner asks
// for it: the annotation roll-set on a FirewallMonitor in the shoot, as with
// metal-stack's firewall-controller-manager. The shoot's kube-apiserver is
// read through its `gardener` kubeconfig, every Interval, so that a broken
// firewall (whose agent relays nothing) can be rolled too.
package rollrequest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
)

// ReasonRollRequested is the reason of the FirewallDeployment's Event.
const ReasonRollRequested = "RollRequested"

// maxNote bounds what of the shoot's text goes into an Event.
const maxNote = 64

// Reconciler acts on roll requests from the shoot.
type Reconciler struct {
	// Client is the seed's.
	Client client.Client
	// ShootClient returns a client of the shoot of a shoot namespace.
	ShootClient func(ctx context.Context, namespace string) (client.Client, error)
	// Interval is how often a shoot is asked.
	Interval time.Duration
	// Recorder records the roll on the FirewallDeployment.
	Recorder events.EventRecorder
	// Workers is how many shoots are asked at once; 1 when 0.
	Workers int
}

// AddToManager registers the controller.
func (r *Reconciler) AddToManager(mgr manager.Manager) error {
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorder("rollrequest")
	}
	// Status updates are frequent and tell nothing new: the requeue asks again.
	return builder.ControllerManagedBy(mgr).Named("rollrequest").WithOptions(controller.Options{MaxConcurrentReconciles: r.Workers}).
		For(&firewallv1alpha1.FirewallDeployment{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Complete(r)
}

// Reconcile asks the deployment's shoot for roll requests.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	d := &firewallv1alpha1.FirewallDeployment{}
	if err := r.Client.Get(ctx, req.NamespacedName, d); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	// Paused: migrating. No replicas: the shoot hibernates, its kube-apiserver is gone.
	if d.DeletionTimestamp != nil || firewallv1alpha1.IsPaused(d.Annotations) || d.Spec.Replicas == 0 {
		return reconcile.Result{}, nil
	}
	next := reconcile.Result{RequeueAfter: r.Interval}
	shoot, err := r.ShootClient(ctx, d.Namespace)
	if err != nil {
		// A shoot being created or woken has no kube-apiserver yet: not an error of ours.
		log.FromContext(ctx).V(1).Info("Cannot ask the shoot for roll requests", "error", err.Error())
		return next, nil
	}
	monitors, err := listMonitors(ctx, shoot)
	if err != nil {
		log.FromContext(ctx).V(1).Info("Cannot list the shoot's FirewallMonitors", "error", err.Error())
		return next, nil
	}
	// The agent names its monitor after its Firewall: only a monitor of one
	// of the deployment's Firewalls speaks for this deployment.
	fws := &firewallv1alpha1.FirewallList{}
	if err := r.Client.List(ctx, fws, client.InNamespace(d.Namespace), client.MatchingLabels(d.Spec.Selector)); err != nil {
		return reconcile.Result{}, err
	}
	ours := map[string]bool{}
	for _, fw := range fws.Items {
		ours[fw.Name] = true
	}
	var requests []client.Object
	for _, m := range monitors {
		value, ok := m.GetAnnotations()[rollSetKey(m)]
		if !ok || !ours[m.GetName()] {
			continue
		}
		if yes, _ := strconv.ParseBool(value); !yes {
			// "false" or garbage asks for nothing; it goes, so that it does not linger.
			if err := r.acknowledge(ctx, shoot, m); err != nil {
				return reconcile.Result{}, err
			}
			continue
		}
		requests = append(requests, m)
	}
	if len(requests) == 0 {
		return next, nil
	}
	sort.Slice(requests, func(i, j int) bool { return requests[i].GetName() < requests[j].GetName() })
	return next, r.roll(ctx, shoot, d, requests)
}

// roll rolls the deployment once for all requests: it marks them with the
// roll's token first, sets the token as the deployment's roll annotation
// (unless a previous try did), records who asked, and removes the requests.
func (r *Reconciler) roll(ctx context.Context, shoot client.Client, d *firewallv1alpha1.FirewallDeployment, requests []client.Object) error {
	token := ""
	for _, m := range requests {
		if t := m.GetAnnotations()[firewallv1alpha1.AnnotationRollSetAcknowledged]; t != "" {
			token = t
			break
		}
	}
	if token == "" {
		b := make([]byte, 8)
		_, _ = rand.Read(b)
		token = "shoot-" + hex.EncodeToString(b)
	}
	for _, m := range requests {
		if m.GetAnnotations()[firewallv1alpha1.AnnotationRollSetAcknowledged] == token {
			continue
		}
		patch := client.MergeFromWithOptions(m.DeepCopyObject().(client.Object), client.MergeFromWithOptimisticLock{})
		annotations := m.GetAnnotations()
		annotations[firewallv1alpha1.AnnotationRollSetAcknowledged] = token
		m.SetAnnotations(annotations)
		if err := shoot.Patch(ctx, m, patch); err != nil {
			return fmt.Errorf("acknowledging the roll request on FirewallMonitor %s: %w", m.GetName(), err)
		}
	}
	if d.Annotations[firewallv1alpha1.AnnotationRoll] != token {
		patch := client.MergeFrom(d.DeepCopy())
		if d.Annotations == nil {
			d.Annotations = map[string]string{}
		}
		d.Annotations[firewallv1alpha1.AnnotationRoll] = token
		if err := r.Client.Patch(ctx, d, patch); err != nil {
			return fmt.Errorf("rolling FirewallDeployment %s: %w", d.Name, err)
		}
		var who []string
		for _, m := range requests {
			who = append(who, requester(m))
		}
		note := fmt.Sprintf("Rolling the firewall (roll %s) as asked from the shoot: %s", token, strings.Join(who, "; "))
		log.FromContext(ctx).Info("Rolling the firewall as asked from the shoot", "roll", token, "requests", who)
		if r.Recorder != nil {
			r.Recorder.Eventf(d, nil, corev1.EventTypeNormal, ReasonRollRequested, "Roll", "%s", note)
		}
	}
	for _, m := range requests {
		if err := r.acknowledge(ctx, shoot, m); err != nil {
			return err
		}
	}
	return nil
}

// acknowledge removes the request from the monitor.
func (r *Reconciler) acknowledge(ctx context.Context, shoot client.Client, m client.Object) error {
	patch := client.MergeFrom(m.DeepCopyObject().(client.Object))
	annotations := m.GetAnnotations()
	delete(annotations, rollSetKey(m))
	delete(annotations, firewallv1alpha1.AnnotationRollSetAcknowledged)
	m.SetAnnotations(annotations)
	if err := shoot.Patch(ctx, m, patch); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("removing the roll request from FirewallMonitor %s: %w", m.GetName(), err)
	}
	return nil
}

// requester names the monitor and what set the annotation, as far as the
// shoot's managedFields tell (the field manager, e.g. kubectl-annotate, and
// when; the shoot's audit log names the user).
func requester(m client.Object) string {
	who := "FirewallMonitor " + m.GetNamespace() + "/" + bounded(m.GetName())
	if theirs(m) {
		who = "FirewallMonitor." + constants.MetalStackMonitorGroup + " " + m.GetNamespace() + "/" + bounded(m.GetName())
	}
	key := `"f:` + rollSetKey(m) + `"`
	for _, f := range m.GetManagedFields() {
		if f.FieldsV1 != nil && strings.Contains(f.FieldsV1.GetRawString(), key) {
			who += " (annotation set by " + bounded(f.Manager)
			if f.Time != nil {
				who += " at " + f.Time.UTC().Format(time.RFC3339)
			}
			who += ")"
			break
		}
	}
	return who
}

// bounded quotes the shoot's text, at most maxNote bytes of it.
func bounded(s string) string {
	if len(s) > maxNote {
		s = s[:maxNote] + "..."
	}
	return strconv.Quote(s)
}

// The FirewallMonitor kinds: ours, and metal-stack's
// (firewall-controller-manager's firewall.metal-stack.io/v2), which the agent
// keeps current in shoots that hold the kind: owners used to annotate those.
var (
	ourMonitor        = firewallv1alpha1.SchemeGroupVersion.WithKind("FirewallMonitor")
	metalStackMonitor = schema.GroupVersionKind{Group: constants.MetalStackMonitorGroup, Version: "v2", Kind: "FirewallMonitor"}
)

// metalStackRollSet is firewall-controller-manager's roll-set annotation.
const metalStackRollSet = constants.MetalStackMonitorGroup + "/roll-set"

// listMonitors lists the metadata of ours and, where the shoot serves the
// kind, metal-stack's FirewallMonitors in the firewall namespace: a request
// is an annotation, and a monitor's status (the agent's counters and rules)
// is no part of it.
func listMonitors(ctx context.Context, shoot client.Client) ([]client.Object, error) {
	var out []client.Object
	for _, kind := range []schema.GroupVersionKind{ourMonitor, metalStackMonitor} {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(kind.GroupVersion().WithKind(kind.Kind + "List"))
		err := shoot.List(ctx, list, client.InNamespace(firewallv1alpha1.FirewallMonitorNamespace))
		// A shoot without metal-stack's CRD: the kind is not found (a mapper
		// without discovery: 404 from the kube-apiserver).
		if kind == metalStackMonitor && (meta.IsNoMatchError(err) || apierrors.IsNotFound(err)) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for i := range list.Items {
			// The items come without their kind; patches and rollSetKey need it.
			list.Items[i].SetGroupVersionKind(kind)
			out = append(out, &list.Items[i])
		}
	}
	return out, nil
}

// theirs tells a monitor of metal-stack's API group.
func theirs(m client.Object) bool {
	return m.GetObjectKind().GroupVersionKind().Group == constants.MetalStackMonitorGroup
}

// rollSetKey is the roll-set annotation of the monitor's API group.
func rollSetKey(m client.Object) string {
	if theirs(m) {
		return metalStackRollSet
	}
	return firewallv1alpha1.AnnotationRollSet
}
