// Package firewalldeployment rolls out a shoot's firewalls: one FirewallSet
// per revision of the template's immutable part, RollingUpdate or Recreate.
package firewalldeployment

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/validation"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/ownership"
)

// Finalizer keeps a FirewallDeployment until its sets are gone.
const Finalizer = firewallv1alpha1.GroupName + "/firewallsets"

// Reconciler reconciles FirewallDeployments.
type Reconciler struct {
	// Workers is how many objects are reconciled at once; 1 when 0.
	Workers int
	Client  client.Client
	Clock   clock.Clock
	// ProgressDeadline is how long a new set may take to become Ready before
	// the rollout is reported as failed; the old set stays meanwhile.
	ProgressDeadline time.Duration
	// DistanceTimeout is how long each step of a rolling update waits for
	// the firewalls to announce the distance it set; a deployment's
	// spec.distanceTimeout overrides it.
	DistanceTimeout time.Duration
	// Recorder records the Events of a roll that goes on without a distance.
	Recorder events.EventRecorder

	// noProviderFirewallKind is until when the seed is taken to have no
	// firewall-controller-manager FirewallDeployment kind (providerfirewall.go).
	noProviderFirewallKind atomic.Pointer[time.Time]
}

// AddToManager registers the controller.
func (r *Reconciler) AddToManager(mgr manager.Manager) error {
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorder("firewalldeployment")
	}
	return builder.ControllerManagedBy(mgr).Named("firewalldeployment").WithOptions(controller.Options{MaxConcurrentReconciles: r.Workers}).
		For(&firewallv1alpha1.FirewallDeployment{}).
		Owns(&firewallv1alpha1.FirewallSet{}).
		Complete(r)
}

// Reconcile converges one FirewallDeployment.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	d := &firewallv1alpha1.FirewallDeployment{}
	if err := r.Client.Get(ctx, req.NamespacedName, d); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if firewallv1alpha1.IsPaused(d.Annotations) {
		return reconcile.Result{}, nil
	}
	if _, ok := d.Annotations[firewallv1alpha1.AnnotationReconcile]; ok {
		// Asked for (its change brought this reconcile): done with it.
		patch := client.MergeFrom(d.DeepCopy())
		delete(d.Annotations, firewallv1alpha1.AnnotationReconcile)
		if err := r.Client.Patch(ctx, d, patch); err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(err)
		}
	}
	ownedSets, err := r.ownedSets(ctx, d)
	if err != nil {
		return reconcile.Result{}, err
	}
	if d.DeletionTimestamp != nil {
		return r.delete(ctx, d, ownedSets)
	}
	if errs := validation.ValidateFirewallDeployment(d); len(errs) > 0 {
		return reconcile.Result{}, r.patchStatus(ctx, d, func() {
			meta.SetStatusCondition(&d.Status.Conditions, metav1.Condition{Type: firewallv1alpha1.ConditionProgressing, Status: metav1.ConditionFalse,
				Reason: "InvalidSpec", Message: errs.ToAggregate().Error(), ObservedGeneration: d.Generation})
		})
	}
	if controllerutil.AddFinalizer(d, Finalizer) {
		if err := r.Client.Update(ctx, d); err != nil {
			return reconcile.Result{}, err
		}
	}

	hash := templateHash(d)
	var current *firewallv1alpha1.FirewallSet
	var old []*firewallv1alpha1.FirewallSet
	var maxRevision int64
	for _, s := range ownedSets {
		if rev, _ := strconv.ParseInt(s.Annotations[firewallv1alpha1.AnnotationRevision], 10, 64); rev > maxRevision {
			maxRevision = rev
		}
		if s.Labels[firewallv1alpha1.LabelTemplateHash] == hash && s.DeletionTimestamp == nil {
			current = s
		} else {
			old = append(old, s)
		}
	}

	if current == nil && d.Spec.Strategy == firewallv1alpha1.StrategyRecreate && len(old) > 0 {
		// Recreate: the old firewalls go first, the new set follows once they are gone.
		if err := r.deleteSets(ctx, old); err != nil {
			return reconcile.Result{}, err
		}
		return reconcile.Result{RequeueAfter: 10 * time.Second}, r.patchStatus(ctx, d, func() {
			r.setProgressing(d, true, "DeletingOldSets", "Recreate: waiting for the old firewalls to be gone")
		})
	}
	// While provider-metal's firewall may carry the shoot (a running shoot
	// switching over, or back), every set of this deployment announces the
	// longest distance and the roll waits. It is read once, where a distance
	// is decided: for a new set, a set not at the shortest, a Ready one.
	foreign := ""
	if current == nil || current.Spec.Distance != firewallv1alpha1.ShortestDistance || isRolledOut(d, current) {
		if foreign, err = r.providerFirewall(ctx, d.Namespace); err != nil {
			return reconcile.Result{}, err
		}
	}

	if current == nil {
		// A set rolling in next to old firewalls announces longer routes
		// than theirs: it attracts no traffic until it is Ready. Beside
		// provider-metal's firewall, the longest.
		distance := firewallv1alpha1.ShortestDistance
		if len(old) > 0 {
			distance = firewallv1alpha1.RollingUpdateDistance
		}
		if foreign != "" {
			distance = firewallv1alpha1.LongestDistance
		}
		if current, err = r.createSet(ctx, d, hash, maxRevision+1, distance); err != nil {
			return reconcile.Result{}, err
		}
		maxRevision++
	}

	rolledOut := isRolledOut(d, current)
	var leaving []*firewallv1alpha1.FirewallSet
	for _, s := range old {
		if s.DeletionTimestamp == nil {
			leaving = append(leaving, s)
		}
	}
	// Make before break, once the new set is Ready: the old sets take the
	// longest distance, so traffic moves to the new set (3); once they
	// announce it, the new set takes the shortest; once it announces that,
	// the old sets go. Traffic moves once, and never onto a set that is not
	// Ready or away from one that still announces the shortest routes.
	distance := current.Spec.Distance
	var steps []rollStep
	waiting := false
	if foreign != "" {
		distance = firewallv1alpha1.LongestDistance
		if err := r.setOldDistance(ctx, leaving); err != nil {
			return reconcile.Result{}, err
		}
		steps = append(steps, rollStep{name: providerFirewallStep, waiting: true, wait: distanceWait{pending: []string{foreign}}})
		waiting = true
	} else if rolledOut {
		distance = firewallv1alpha1.ShortestDistance
		if len(leaving) > 0 {
			if err := r.setOldDistance(ctx, leaving); err != nil {
				return reconcile.Result{}, err
			}
			step, err := r.awaitDistance(ctx, d, "the old sets take the longest distance", leaving)
			if err != nil {
				return reconcile.Result{}, err
			}
			steps, waiting = append(steps, step), step.waiting
			if waiting {
				distance = current.Spec.Distance
			}
		}
	}
	if err := r.updateSet(ctx, d, current, distance); err != nil {
		return reconcile.Result{}, err
	}
	if rolledOut && len(leaving) > 0 && !waiting && foreign == "" {
		step, err := r.awaitDistance(ctx, d, "the new set takes the shortest distance", []*firewallv1alpha1.FirewallSet{current})
		if err != nil {
			return reconcile.Result{}, err
		}
		steps, waiting = append(steps, step), step.waiting
		if !waiting {
			// RollingUpdate: the old sets go only now that traffic left them.
			if err := r.deleteSets(ctx, old); err != nil {
				return reconcile.Result{}, err
			}
		}
	}

	var requeue time.Duration
	err = r.patchStatus(ctx, d, func() {
		requeue = r.updateStatus(d, current, ownedSets, maxRevision, rolledOut)
		if len(steps) == 0 {
			steps = append(steps, rollStep{})
		}
		for _, step := range steps {
			step.report(d, rolledOut)
		}
	})
	if waiting && (requeue == 0 || requeue > distancePoll) {
		requeue = distancePoll
	}
	return reconcile.Result{RequeueAfter: requeue}, err
}

// isRolledOut tells whether set, the deployment's current one, has all its
// firewalls Ready for its present generation.
func isRolledOut(d *firewallv1alpha1.FirewallDeployment, set *firewallv1alpha1.FirewallSet) bool {
	return set.Status.ObservedGeneration == set.Generation && set.Status.ReadyReplicas >= d.Spec.Replicas
}

func (r *Reconciler) ownedSets(ctx context.Context, d *firewallv1alpha1.FirewallDeployment) ([]*firewallv1alpha1.FirewallSet, error) {
	list := &firewallv1alpha1.FirewallSetList{}
	if err := r.Client.List(ctx, list, client.InNamespace(d.Namespace), client.MatchingLabels(d.Spec.Selector)); err != nil {
		return nil, err
	}
	// A set restored after a migration has no owner yet.
	return ownership.Claim(ctx, r.Client, d, ownership.Pointers(list.Items))
}

// desiredSetSpec is the set's spec for this deployment: the template hash
// label separates the Firewalls of different revisions.
func desiredSetSpec(d *firewallv1alpha1.FirewallDeployment, hash string, distance int32) firewallv1alpha1.FirewallSetSpec {
	tmpl := *d.Spec.Template.DeepCopy()
	tmpl.Metadata.Labels = maps.Clone(tmpl.Metadata.Labels)
	if tmpl.Metadata.Labels == nil {
		tmpl.Metadata.Labels = map[string]string{}
	}
	tmpl.Metadata.Labels[firewallv1alpha1.LabelTemplateHash] = hash
	selector := maps.Clone(d.Spec.Selector)
	selector[firewallv1alpha1.LabelTemplateHash] = hash
	// The distance is the set's and its Firewalls', not the template's.
	tmpl.Spec.Distance = 0
	return firewallv1alpha1.FirewallSetSpec{Replicas: d.Spec.Replicas, Selector: selector, Template: tmpl, Distance: distance,
		FirewallTimeouts: *d.Spec.FirewallTimeouts.DeepCopy()}
}

// createSet names the set after the hash, so a manager restarted between
// creating it and seeing it in its cache gets AlreadyExists, not a twin.
func (r *Reconciler) createSet(ctx context.Context, d *firewallv1alpha1.FirewallDeployment, hash string, revision int64, distance int32) (*firewallv1alpha1.FirewallSet, error) {
	setLabels := maps.Clone(d.Spec.Selector)
	setLabels[firewallv1alpha1.LabelTemplateHash] = hash
	set := &firewallv1alpha1.FirewallSet{
		ObjectMeta: metav1.ObjectMeta{
			Name:        d.Name + "-" + hash,
			Namespace:   d.Namespace,
			Labels:      setLabels,
			Annotations: map[string]string{firewallv1alpha1.AnnotationRevision: strconv.FormatInt(revision, 10)},
		},
		Spec: desiredSetSpec(d, hash, distance),
	}
	if err := controllerutil.SetControllerReference(d, set, r.Client.Scheme()); err != nil {
		return nil, err
	}
	if err := r.Client.Create(ctx, set); err != nil {
		if !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("creating FirewallSet %s: %w", set.Name, err)
		}
		// Created before; this reconcile saw a stale cache.
		if err := r.Client.Get(ctx, client.ObjectKeyFromObject(set), set); err != nil {
			return nil, err
		}
	} else {
		log.FromContext(ctx).Info("Created FirewallSet", "firewallset", set.Name, "revision", revision, "distance", distance)
	}
	return set, nil
}

// updateSet passes replicas, mutable template changes and the distance to the current set.
func (r *Reconciler) updateSet(ctx context.Context, d *firewallv1alpha1.FirewallDeployment, set *firewallv1alpha1.FirewallSet, distance int32) error {
	want := desiredSetSpec(d, set.Labels[firewallv1alpha1.LabelTemplateHash], distance)
	if equality.Semantic.DeepEqual(want, set.Spec) {
		return nil
	}
	patch := client.MergeFrom(set.DeepCopy())
	if want.Distance != set.Spec.Distance {
		log.FromContext(ctx).Info("Changing the distance of FirewallSet", "firewallset", set.Name, "from", set.Spec.Distance, "to", want.Distance)
		r.markDistance(set, want.Distance)
	}
	set.Spec = want
	return r.Client.Patch(ctx, set, patch)
}

func (r *Reconciler) deleteSets(ctx context.Context, sets []*firewallv1alpha1.FirewallSet) error {
	for _, s := range sets {
		if s.DeletionTimestamp != nil {
			continue
		}
		if err := r.Client.Delete(ctx, s); client.IgnoreNotFound(err) != nil {
			return err
		}
		log.FromContext(ctx).Info("Deleted old FirewallSet", "firewallset", s.Name)
	}
	return nil
}

func (r *Reconciler) delete(ctx context.Context, d *firewallv1alpha1.FirewallDeployment, sets []*firewallv1alpha1.FirewallSet) (reconcile.Result, error) {
	if !controllerutil.ContainsFinalizer(d, Finalizer) {
		return reconcile.Result{}, nil
	}
	if err := r.deleteSets(ctx, sets); err != nil {
		return reconcile.Result{}, err
	}
	if len(sets) > 0 {
		return reconcile.Result{RequeueAfter: 10 * time.Second}, nil
	}
	controllerutil.RemoveFinalizer(d, Finalizer)
	return reconcile.Result{}, client.IgnoreNotFound(r.Client.Update(ctx, d))
}

func (r *Reconciler) updateStatus(d *firewallv1alpha1.FirewallDeployment, current *firewallv1alpha1.FirewallSet, sets []*firewallv1alpha1.FirewallSet, revision int64, rolledOut bool) time.Duration {
	d.Status.ObservedGeneration = d.Generation
	d.Status.ObservedRevision = revision
	d.Status.ReadyReplicas = current.Status.ReadyReplicas
	d.Status.ProgressingReplicas = current.Status.ProgressingReplicas
	d.Status.UnhealthyReplicas = current.Status.UnhealthyReplicas
	d.Status.Replicas = 0
	for _, s := range sets {
		d.Status.Replicas += s.Status.Replicas
	}

	available := current.Status.ReadyReplicas >= d.Spec.Replicas
	msg := fmt.Sprintf("%d of %d firewalls ready", current.Status.ReadyReplicas, d.Spec.Replicas)
	meta.SetStatusCondition(&d.Status.Conditions, metav1.Condition{Type: firewallv1alpha1.ConditionAvailable, Status: boolStatus(available),
		Reason: "FirewallsReady", Message: msg, ObservedGeneration: d.Generation})
	if rolledOut {
		r.setProgressing(d, true, "RolloutComplete", "set "+current.Name+" is ready")
		return 0
	}
	age := r.Clock.Now().Sub(current.CreationTimestamp.Time)
	if age > r.ProgressDeadline {
		r.setProgressing(d, false, "ProgressDeadlineExceeded", fmt.Sprintf("set %s not ready after %s: %s", current.Name, r.ProgressDeadline, msg))
		return 0
	}
	r.setProgressing(d, true, "SetProgressing", "set "+current.Name+": "+msg)
	return r.ProgressDeadline - age
}

func (r *Reconciler) setProgressing(d *firewallv1alpha1.FirewallDeployment, ok bool, reason, msg string) {
	meta.SetStatusCondition(&d.Status.Conditions, metav1.Condition{Type: firewallv1alpha1.ConditionProgressing, Status: boolStatus(ok),
		Reason: reason, Message: msg, ObservedGeneration: d.Generation})
}

func (r *Reconciler) patchStatus(ctx context.Context, d *firewallv1alpha1.FirewallDeployment, mutate func()) error {
	patch := client.MergeFrom(d.DeepCopy())
	mutate()
	return client.IgnoreNotFound(r.Client.Status().Patch(ctx, d, patch))
}

func boolStatus(ok bool) metav1.ConditionStatus {
	if ok {
		return metav1.ConditionTrue
	}
	return metav1.ConditionFalse
}
