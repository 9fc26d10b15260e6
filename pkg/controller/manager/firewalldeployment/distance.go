package firewalldeployment

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
)

// distancePoll is how often a roll that waits for firewalls to announce a
// distance looks again: their agents report every 10 s.
const distancePoll = 2 * time.Second

// maxNamed bounds the firewalls a condition names.
const maxNamed = 5

// distanceWait is what a step of the roll waits for: the firewalls of sets
// that do not yet announce the distance the manager set.
type distanceWait struct {
	// pending describes each firewall still waited for.
	pending []string
	// since is when the oldest of the sets' distances was set.
	since time.Time
}

// announced looks at the active Firewalls of sets and tells which do not
// yet announce their set's distance: a Firewall's spec must carry it (the
// set passed it on) and its agent must report it in force. A Firewall whose
// agent reports that it announces no distance (no routing, or an agent
// without it) is not waited for: it holds no route a distance could move.
func (r *Reconciler) announced(ctx context.Context, d *firewallv1alpha1.FirewallDeployment, sets ...*firewallv1alpha1.FirewallSet) (distanceWait, error) {
	var w distanceWait
	for _, set := range sets {
		list := &firewallv1alpha1.FirewallList{}
		if err := r.Client.List(ctx, list, client.InNamespace(d.Namespace), client.MatchingLabels(set.Spec.Selector)); err != nil {
			return w, err
		}
		since := distanceSince(set)
		if w.since.IsZero() || since.Before(w.since) {
			w.since = since
		}
		shortest := int32(-1)
		var firewalls []*firewallv1alpha1.Firewall
		for i := range list.Items {
			fw := &list.Items[i]
			if fw.DeletionTimestamp != nil || !metav1.IsControlledBy(fw, set) {
				continue
			}
			firewalls = append(firewalls, fw)
			if shortest < 0 || fw.Spec.Distance < shortest {
				shortest = fw.Spec.Distance
			}
		}
		if shortest >= 0 && shortest != set.Spec.Distance {
			// The set has not passed its new distance on yet.
			w.pending = append(w.pending, fmt.Sprintf("set %s passes distance %d to its firewalls", set.Name, set.Spec.Distance))
			continue
		}
		for _, fw := range firewalls {
			a := fw.Status.AgentStatus
			switch {
			case firewallv1alpha1.DistanceInForce(fw):
			case a == nil || a.Distance == nil:
				w.pending = append(w.pending, fmt.Sprintf("%s announces no distance yet (wants %d)", fw.Name, fw.Spec.Distance))
			default:
				w.pending = append(w.pending, fmt.Sprintf("%s announces %d (wants %d)", fw.Name, *a.Distance, fw.Spec.Distance))
			}
		}
	}
	return w, nil
}

// timedOut tells whether the wait has lasted longer than the deployment's
// distanceTimeout (the manager's when unset).
func (r *Reconciler) timedOut(d *firewallv1alpha1.FirewallDeployment, w distanceWait) (bool, time.Duration) {
	timeout := r.DistanceTimeout
	if t := d.Spec.DistanceTimeout; t != nil {
		timeout = t.Duration
	}
	return r.Clock.Now().Sub(w.since) > timeout, timeout
}

// describe names the pending firewalls, bounded.
func (w distanceWait) describe() string {
	named := w.pending
	more := ""
	if len(named) > maxNamed {
		more = fmt.Sprintf(" and %d more", len(named)-maxNamed)
		named = named[:maxNamed]
	}
	return strings.Join(named, "; ") + more
}

// setDistanceCondition reports whether the distances the roll set are in force.
func setDistanceCondition(d *firewallv1alpha1.FirewallDeployment, ok bool, reason, msg string) {
	meta.SetStatusCondition(&d.Status.Conditions, metav1.Condition{Type: firewallv1alpha1.ConditionDistanceInForce, Status: boolStatus(ok),
		Reason: reason, Message: msg, ObservedGeneration: d.Generation})
}

// distanceSince is when the set's distance was last set: its annotation,
// else its creation.
func distanceSince(set *firewallv1alpha1.FirewallSet) time.Time {
	if t, err := time.Parse(time.RFC3339, set.Annotations[firewallv1alpha1.AnnotationDistanceSince]); err == nil {
		return t
	}
	return set.CreationTimestamp.Time
}

// setOldDistance gives the old sets the longest distance, so that traffic
// leaves them for the new set before they go.
func (r *Reconciler) setOldDistance(ctx context.Context, sets []*firewallv1alpha1.FirewallSet) error {
	for _, s := range sets {
		if s.DeletionTimestamp != nil || s.Spec.Distance == firewallv1alpha1.LongestDistance {
			continue
		}
		patch := client.MergeFrom(s.DeepCopy())
		r.markDistance(s, firewallv1alpha1.LongestDistance)
		if err := r.Client.Patch(ctx, s, patch); err != nil {
			return err
		}
	}
	return nil
}

// markDistance sets the set's distance and when it was set.
func (r *Reconciler) markDistance(set *firewallv1alpha1.FirewallSet, distance int32) {
	if set.Annotations == nil {
		set.Annotations = map[string]string{}
	}
	set.Annotations[firewallv1alpha1.AnnotationDistanceSince] = r.Clock.Now().UTC().Format(time.RFC3339)
	set.Spec.Distance = distance
}

// rollStep is a step of a rolling update that waits for firewalls to
// announce a distance.
type rollStep struct {
	// name says what the step does.
	name string
	// waiting tells that the roll waits at this step.
	waiting bool
	// wait is what it waited for; timedOut tells that it went on without it.
	wait     distanceWait
	timedOut time.Duration
}

// awaitDistance tells whether the roll must wait for the sets' firewalls to
// announce their distance, or may go on: they do, or distanceTimeout passed.
func (r *Reconciler) awaitDistance(ctx context.Context, d *firewallv1alpha1.FirewallDeployment, name string, sets []*firewallv1alpha1.FirewallSet) (rollStep, error) {
	w, err := r.announced(ctx, d, sets...)
	if err != nil {
		return rollStep{}, err
	}
	step := rollStep{name: name, wait: w}
	if len(w.pending) == 0 {
		return step, nil
	}
	if out, timeout := r.timedOut(d, w); out {
		step.timedOut = timeout
		if saidBefore(d, name) {
			// An earlier reconcile of this generation went on already;
			// later ones pass this step while the next one waits.
			return step, nil
		}
		log.FromContext(ctx).Info("Going on without the distance of firewalls", "step", name, "timeout", timeout, "firewalls", w.describe())
		if r.Recorder != nil {
			r.Recorder.Eventf(d, nil, corev1.EventTypeWarning, "DistanceTimeout", "Roll", "%s: went on after %s without %s", name, timeout, w.describe())
		}
		return step, nil
	}
	step.waiting = true
	return step, nil
}

// saidBefore tells whether the DistanceInForce condition already says that
// this generation's roll went on without the distance at the named step.
func saidBefore(d *firewallv1alpha1.FirewallDeployment, step string) bool {
	c := meta.FindStatusCondition(d.Status.Conditions, firewallv1alpha1.ConditionDistanceInForce)
	return c != nil && c.Reason == reasonDistanceTimeout && c.ObservedGeneration == d.Generation &&
		strings.HasPrefix(c.Message, step+": went on after ")
}

// report writes the DistanceInForce condition. That this generation's roll
// went on without some firewalls' distance stays said (reason
// DistanceTimeout) until the next change of the spec.
func (s rollStep) report(d *firewallv1alpha1.FirewallDeployment, rolledOut bool) {
	var timedOut string
	if c := meta.FindStatusCondition(d.Status.Conditions, firewallv1alpha1.ConditionDistanceInForce); c != nil &&
		c.Reason == reasonDistanceTimeout && c.ObservedGeneration == d.Generation {
		timedOut, _, _ = strings.Cut(c.Message, " | ")
	}
	switch {
	case s.timedOut > 0:
		setDistanceCondition(d, false, reasonDistanceTimeout, fmt.Sprintf("%s: went on after %s without %s", s.name, s.timedOut, s.wait.describe()))
	case s.waiting && timedOut != "":
		setDistanceCondition(d, false, reasonDistanceTimeout, timedOut+" | "+s.name+": waiting for "+s.wait.describe())
	case s.waiting:
		setDistanceCondition(d, false, "Waiting", s.name+": waiting for "+s.wait.describe())
	case timedOut != "":
		setDistanceCondition(d, false, reasonDistanceTimeout, timedOut)
	case rolledOut:
		setDistanceCondition(d, true, "InForce", "the firewalls announce the distance the manager set, or none at all")
	}
}

// reasonDistanceTimeout: a step of the roll went on without some firewalls' distance.
const reasonDistanceTimeout = "DistanceTimeout"
