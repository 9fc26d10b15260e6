// Package firewallset keeps the number of Firewalls of a FirewallSet, adopts
// orphans that match its selector and passes mutable template changes on to
// its Firewalls.
package firewallset

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/validation"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/ownership"
)

// Finalizer keeps a FirewallSet until its Firewalls are gone.
const Finalizer = firewallv1alpha1.GroupName + "/firewalls"

// Reconciler reconciles FirewallSets.
type Reconciler struct {
	// Workers is how many objects are reconciled at once; 1 when 0.
	Workers int
	Client  client.Client
	Clock   clock.Clock
	// CreateTimeout is how long a Firewall whose agent never reported may
	// take to become Ready before it fails; HealthTimeout when 0. A set's
	// spec.createTimeout overrides it.
	CreateTimeout time.Duration
	// HealthTimeout is how long a Firewall whose agent has reported may stay
	// not Ready before it fails. A set's spec.healthTimeout overrides it.
	HealthTimeout time.Duration
	// MaxReplacements is how many Firewalls the set creates in place of
	// failed ones before it gives up and reports; 0 replaces none.
	MaxReplacements int32
	// ReplacementBackoff is the pause after a failure before the second
	// replacement, doubled for each further one; DefaultReplacementBackoff when 0.
	ReplacementBackoff time.Duration
	// Recorder, when set, records an Event for each replacement.
	Recorder events.EventRecorder
}

// DefaultReplacementBackoff is the default ReplacementBackoff.
const DefaultReplacementBackoff = time.Minute

// AddToManager registers the controller. Every Firewall event reaches every
// set of its namespace: the sets whose selector matches it adopt orphans
// without delay, and a set whose firewall waits for another set's firewall
// to carry the traffic (distances) sees that one's report.
func (r *Reconciler) AddToManager(mgr manager.Manager) error {
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorder("firewallset")
	}
	return builder.ControllerManagedBy(mgr).Named("firewallset").WithOptions(controller.Options{MaxConcurrentReconciles: r.Workers}).
		For(&firewallv1alpha1.FirewallSet{}).
		Watches(&firewallv1alpha1.Firewall{}, handler.EnqueueRequestsFromMapFunc(r.setsOfNamespace)).
		Complete(r)
}

func (r *Reconciler) setsOfNamespace(ctx context.Context, obj client.Object) []reconcile.Request {
	list := &firewallv1alpha1.FirewallSetList{}
	if err := r.Client.List(ctx, list, client.InNamespace(obj.GetNamespace())); err != nil {
		log.FromContext(ctx).Error(err, "Listing FirewallSets")
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, s := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&s)})
	}
	return reqs
}

// Reconcile converges one FirewallSet.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	set := &firewallv1alpha1.FirewallSet{}
	if err := r.Client.Get(ctx, req.NamespacedName, set); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if firewallv1alpha1.IsPaused(set.Annotations) {
		return reconcile.Result{}, nil
	}
	if errs := validation.ValidateFirewallSet(set); len(errs) > 0 {
		log.FromContext(ctx).Info("Invalid FirewallSet, not acting on it", "errors", errs.ToAggregate().Error())
		return reconcile.Result{}, nil
	}

	firewalls, err := r.ownedFirewalls(ctx, set)
	if err != nil {
		return reconcile.Result{}, err
	}
	if set.DeletionTimestamp != nil {
		return r.delete(ctx, set, firewalls)
	}
	if controllerutil.AddFinalizer(set, Finalizer) {
		if err := r.Client.Update(ctx, set); err != nil {
			return reconcile.Result{}, err
		}
	}

	var active []*firewallv1alpha1.Firewall
	for _, fw := range firewalls {
		if fw.DeletionTimestamp == nil {
			active = append(active, fw)
		}
	}
	others, err := r.othersInNamespace(ctx, set, firewalls)
	if err != nil {
		return reconcile.Result{}, err
	}
	ranks := distances(set, active, others)
	for _, fw := range active {
		if err := r.updateMutable(ctx, set, fw, ranks[fw.Name]); err != nil {
			return reconcile.Result{}, err
		}
		fw.Spec.Distance = ranks[fw.Name] // what create ranks a new one behind
	}
	h, err := r.replaceFailed(ctx, set, firewalls, active)
	if err != nil {
		return reconcile.Result{}, err
	}
	if missing := int(set.Spec.Replicas) - len(h.others); missing < 0 {
		others := make([]*firewallv1alpha1.Firewall, len(h.others))
		for i, v := range h.others {
			others[i] = v.fw
		}
		if err := r.deleteSurplus(ctx, others, -missing); err != nil {
			return reconcile.Result{}, err
		}
		h.drop(others[:-missing])
	}
	return r.updateStatus(ctx, set, h)
}

// othersInNamespace returns the namespace's active Firewalls that are not
// the set's: during a roll, those of the other set carry the traffic while
// one of the set's firewalls announces a new distance.
func (r *Reconciler) othersInNamespace(ctx context.Context, set *firewallv1alpha1.FirewallSet, own []*firewallv1alpha1.Firewall) ([]*firewallv1alpha1.Firewall, error) {
	list := &firewallv1alpha1.FirewallList{}
	if err := r.Client.List(ctx, list, client.InNamespace(set.Namespace)); err != nil {
		return nil, err
	}
	mine := sets.New[string]()
	for _, fw := range own {
		mine.Insert(fw.Name)
	}
	var others []*firewallv1alpha1.Firewall
	for i := range list.Items {
		if fw := &list.Items[i]; fw.DeletionTimestamp == nil && !mine.Has(fw.Name) {
			others = append(others, fw)
		}
	}
	return others, nil
}

// ownedFirewalls returns the set's Firewalls, adopting those that match its
// selector but have no controller (e.g. restored after a migration).
func (r *Reconciler) ownedFirewalls(ctx context.Context, set *firewallv1alpha1.FirewallSet) ([]*firewallv1alpha1.Firewall, error) {
	list := &firewallv1alpha1.FirewallList{}
	if err := r.Client.List(ctx, list, client.InNamespace(set.Namespace), client.MatchingLabels(set.Spec.Selector)); err != nil {
		return nil, err
	}
	return ownership.Claim(ctx, r.Client, set, ownership.Pointers(list.Items))
}

// updateMutable passes the template's mutable parts (rules, agent,
// userdata) and labels on, and sets the Firewall's distance; the immutable
// machine parts never differ within a set because the deployment rolls a new
// set for them.
func (r *Reconciler) updateMutable(ctx context.Context, set *firewallv1alpha1.FirewallSet, fw *firewallv1alpha1.Firewall, distance int32) error {
	want := fw.DeepCopy()
	tmpl := set.Spec.Template.Spec
	want.Spec.FirewallTrafficSpec = tmpl.FirewallTrafficSpec
	want.Spec.AgentVersion = tmpl.AgentVersion
	want.Spec.AgentURL = tmpl.AgentURL
	want.Spec.AgentSHA256 = tmpl.AgentSHA256
	want.Spec.AgentSHA512 = tmpl.AgentSHA512
	want.Spec.SSHPublicKeys = tmpl.SSHPublicKeys
	want.Spec.UserdataContents = tmpl.UserdataContents
	want.Spec.Distance = distance
	for k, v := range set.Spec.Template.Metadata.Labels {
		if want.Labels == nil {
			want.Labels = map[string]string{}
		}
		want.Labels[k] = v
	}
	if equality.Semantic.DeepEqual(want.Spec, fw.Spec) && equality.Semantic.DeepEqual(want.Labels, fw.Labels) {
		return nil
	}
	return r.Client.Patch(ctx, want, client.MergeFrom(fw))
}

// create adds missing Firewalls under the lowest free names <set>-<n>: a
// fixed name makes a retry after a stale cache fail with AlreadyExists
// instead of creating one Firewall too many. A new Firewall ranks after the
// existing ones, and further than every Ready one (which may keep a longer
// distance than its rank's, see distances): the set re-ranks them once it
// sees which is Ready.
func (r *Reconciler) create(ctx context.Context, set *firewallv1alpha1.FirewallSet, existing []*firewallv1alpha1.Firewall, count int) error {
	taken := sets.New[string]()
	rank, floor := 0, int32(0)
	for _, fw := range existing {
		taken.Insert(fw.Name)
		if fw.DeletionTimestamp == nil {
			rank++
			if isReady(fw) {
				floor = max(floor, fw.Spec.Distance+1)
			}
		}
	}
	for i := 0; count > 0; i++ {
		name := set.Name + "-" + strconv.Itoa(i)
		if taken.Has(name) {
			continue
		}
		fw := &firewallv1alpha1.Firewall{
			ObjectMeta: metav1.ObjectMeta{
				Name:        name,
				Namespace:   set.Namespace,
				Labels:      set.Spec.Template.Metadata.Labels,
				Annotations: set.Spec.Template.Metadata.Annotations,
			},
			Spec: *set.Spec.Template.Spec.DeepCopy(),
		}
		fw.Spec.Distance = min(max(rankDistance(set.Spec.Distance, rank), floor), firewallv1alpha1.LongestDistance)
		rank++
		if err := controllerutil.SetControllerReference(set, fw, r.Client.Scheme()); err != nil {
			return err
		}
		switch err := r.Client.Create(ctx, fw); {
		case apierrors.IsAlreadyExists(err):
			// Created before; this reconcile saw a stale cache.
		case err != nil:
			return fmt.Errorf("creating Firewall %s: %w", name, err)
		default:
			log.FromContext(ctx).Info("Created Firewall", "firewall", name)
		}
		count--
	}
	return nil
}

// deleteSurplus removes not-ready Firewalls first, then the newest.
func (r *Reconciler) deleteSurplus(ctx context.Context, active []*firewallv1alpha1.Firewall, count int) error {
	sort.SliceStable(active, func(i, j int) bool {
		ri, rj := isReady(active[i]), isReady(active[j])
		if ri != rj {
			return !ri
		}
		return active[i].CreationTimestamp.After(active[j].CreationTimestamp.Time)
	})
	for _, fw := range active[:count] {
		if err := r.Client.Delete(ctx, fw); client.IgnoreNotFound(err) != nil {
			return err
		}
		log.FromContext(ctx).Info("Deleted surplus Firewall", "firewall", fw.Name)
	}
	return nil
}

func (r *Reconciler) delete(ctx context.Context, set *firewallv1alpha1.FirewallSet, firewalls []*firewallv1alpha1.Firewall) (reconcile.Result, error) {
	if !controllerutil.ContainsFinalizer(set, Finalizer) {
		return reconcile.Result{}, nil
	}
	for _, fw := range firewalls {
		if fw.DeletionTimestamp == nil {
			if err := r.Client.Delete(ctx, fw); client.IgnoreNotFound(err) != nil {
				return reconcile.Result{}, err
			}
		}
	}
	if len(firewalls) > 0 {
		// Firewall events requeue the set; the timer is only a safety net.
		return reconcile.Result{RequeueAfter: 10 * time.Second}, nil
	}
	controllerutil.RemoveFinalizer(set, Finalizer)
	return reconcile.Result{}, client.IgnoreNotFound(r.Client.Update(ctx, set))
}

func (r *Reconciler) updateStatus(ctx context.Context, set *firewallv1alpha1.FirewallSet, h *health) (reconcile.Result, error) {
	status := firewallv1alpha1.FirewallSetStatus{
		ObservedGeneration: set.Generation,
		Replacements:       h.replacements,
		Conditions:         append([]metav1.Condition(nil), set.Status.Conditions...),
	}
	if h.condition != nil {
		h.condition.ObservedGeneration = set.Generation
		meta.SetStatusCondition(&status.Conditions, *h.condition)
	}
	requeue := h.requeue
	now := r.Clock.Now()
	for _, v := range h.all() {
		status.Replicas++
		switch {
		case v.ready:
			status.ReadyReplicas++
		case v.failed || v.fw.Status.Phase == firewallv1alpha1.FirewallPhaseCrashing:
			status.UnhealthyReplicas++
		default:
			status.ProgressingReplicas++
		}
		if !v.ready && !v.failed {
			if left := v.deadline.Sub(now); requeue == 0 || left < requeue {
				requeue = left
			}
		}
	}
	if equality.Semantic.DeepEqual(status, set.Status) {
		return reconcile.Result{RequeueAfter: requeue}, nil
	}
	patch := client.MergeFrom(set.DeepCopy())
	set.Status = status
	return reconcile.Result{RequeueAfter: requeue}, client.IgnoreNotFound(r.Client.Status().Patch(ctx, set, patch))
}
