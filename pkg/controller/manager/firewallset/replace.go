package firewallset

import (
	"context"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
)

// Reasons of the Healthy condition and of the set's events.
const (
	ReasonReplacing               = "Replacing"
	ReasonReplaced                = "Replaced"
	ReasonBackingOff              = "BackingOff"
	ReasonReplacementLimitReached = "ReplacementLimitReached"
	ReasonReplacementDisabled     = "ReplacementDisabled"
	ReasonRecovered               = "Recovered"
)

// health is the set's Firewalls after replaceFailed: the failed ones it
// keeps as a fallback and the others, and what goes into the status.
type health struct {
	failed, others []verdict
	replacements   int32
	condition      *metav1.Condition
	requeue        time.Duration
}

func (h *health) all() []verdict { return append(append([]verdict(nil), h.others...), h.failed...) }

// drop forgets Firewalls that were deleted.
func (h *health) drop(deleted []*firewallv1alpha1.Firewall) {
	gone := map[*firewallv1alpha1.Firewall]bool{}
	for _, fw := range deleted {
		gone[fw] = true
	}
	var others []verdict
	for _, v := range h.others {
		if !gone[v.fw] {
			others = append(others, v)
		}
	}
	h.others = others
}

// replaceFailed creates new Firewalls in place of those past their create or
// health timeout, and deletes a failed one only once enough others are Ready:
// until then it may still forward with its last rules. Of the failed ones it
// keeps as many as Ready ones are missing, the most useful first, so that
// failed replacements do not pile up machines. Replacements stop at
// MaxReplacements and wait a back-off between tries; each one is an Event and
// shows in the Healthy condition. It also creates the Firewalls simply
// missing (scale-up, deleted ones).
func (r *Reconciler) replaceFailed(ctx context.Context, set *firewallv1alpha1.FirewallSet, firewalls, active []*firewallv1alpha1.Firewall) (*health, error) {
	now := r.Clock.Now()
	createTimeout, healthTimeout := r.timeouts(set)
	h := &health{replacements: set.Status.Replacements}
	var latestFailure time.Time
	for _, fw := range active {
		v := judge(fw, createTimeout, healthTimeout, now)
		if v.failed && r.MaxReplacements > 0 && !firewallv1alpha1.IsPaused(fw.Annotations) {
			h.failed = append(h.failed, v)
			if v.deadline.After(latestFailure) {
				latestFailure = v.deadline
			}
			continue
		}
		h.others = append(h.others, v)
	}
	ready := 0
	for _, v := range h.others {
		if v.ready {
			ready++
		}
	}
	replicas := int(set.Spec.Replicas)

	// Keep as many failed Firewalls as Ready ones are missing.
	sort.SliceStable(h.failed, func(i, j int) bool { return keepFirst(h.failed[i], h.failed[j]) })
	keep := min(max(replicas-ready, 0), len(h.failed))
	for _, v := range h.failed[keep:] {
		if err := r.Client.Delete(ctx, v.fw); client.IgnoreNotFound(err) != nil {
			return nil, err
		}
		note := "its replacement is Ready"
		if ready < replicas {
			note = "another failed Firewall is kept as the fallback"
		}
		log.FromContext(ctx).Info("Deleted failed Firewall", "firewall", v.fw.Name, "reason", v.reason)
		r.event(set, v.fw, corev1.EventTypeNormal, ReasonReplaced, "Delete", "Deleted failed Firewall %s: %s", v.fw.Name, note)
	}
	h.failed = h.failed[:keep]

	missing := replicas - len(h.others)
	replacing := min(max(missing, 0), len(h.failed))
	plain := max(missing-replacing, 0)
	n := 0 // replacements created in this pass

	current := meta.FindStatusCondition(set.Status.Conditions, firewallv1alpha1.ConditionHealthy)
	switch {
	case r.MaxReplacements == 0:
		h.conditionIfFailed(set, active, createTimeout, healthTimeout, now)
	case len(h.failed) == 0:
		if ready >= replicas {
			h.replacements = 0
		}
		if current != nil && current.Status != metav1.ConditionTrue {
			h.condition = &metav1.Condition{Type: firewallv1alpha1.ConditionHealthy, Status: metav1.ConditionTrue, Reason: ReasonRecovered,
				Message: fmt.Sprintf("no Firewall past its timeouts (after %d replacements)", set.Status.Replacements)}
		}
	case replacing == 0:
		// The replacements exist; the failed ones wait for them to be Ready.
	case h.replacements >= r.MaxReplacements:
		msg := fmt.Sprintf("%s; gave up after %d replacements (--max-replacements): roll the firewall or find out why none becomes Ready", h.failed[0].message, h.replacements)
		if current == nil || current.Reason != ReasonReplacementLimitReached {
			r.event(set, h.failed[0].fw, corev1.EventTypeWarning, ReasonReplacementLimitReached, "Replace", "%s", msg)
		}
		h.condition = &metav1.Condition{Type: firewallv1alpha1.ConditionHealthy, Status: metav1.ConditionFalse, Reason: ReasonReplacementLimitReached, Message: msg}
	default:
		if wait := backoff(r.backoffBase(), h.replacements+1) - now.Sub(latestFailure); wait > 0 {
			h.requeue = wait
			h.condition = &metav1.Condition{Type: firewallv1alpha1.ConditionHealthy, Status: metav1.ConditionFalse, Reason: ReasonBackingOff,
				Message: fmt.Sprintf("%s; replacement %d of %d in %s", h.failed[0].message, h.replacements+1, r.MaxReplacements, wait.Round(time.Second))}
			break
		}
		n = min(replacing, int(r.MaxReplacements-h.replacements))
		h.replacements += int32(n)
		for i := range n {
			v := h.failed[i]
			msg := fmt.Sprintf("%s; created a replacement (%d of %d); the failed Firewall stays until it is Ready", v.message, h.replacements-int32(n)+int32(i)+1, r.MaxReplacements)
			log.FromContext(ctx).Info("Replacing failed Firewall", "firewall", v.fw.Name, "reason", v.reason, "replacement", h.replacements)
			r.event(set, v.fw, corev1.EventTypeWarning, ReasonReplacing, "Replace", "%s", msg)
			h.condition = &metav1.Condition{Type: firewallv1alpha1.ConditionHealthy, Status: metav1.ConditionFalse, Reason: ReasonReplacing, Message: msg}
		}
	}
	if plain+n > 0 {
		if err := r.create(ctx, set, firewalls, plain+n); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// conditionIfFailed reports failed Firewalls when replacement is off.
func (h *health) conditionIfFailed(set *firewallv1alpha1.FirewallSet, active []*firewallv1alpha1.Firewall, createTimeout, healthTimeout time.Duration, now time.Time) {
	for _, fw := range active {
		if v := judge(fw, createTimeout, healthTimeout, now); v.failed {
			h.condition = &metav1.Condition{Type: firewallv1alpha1.ConditionHealthy, Status: metav1.ConditionFalse, Reason: ReasonReplacementDisabled,
				Message: v.message + "; not replaced (--max-replacements is 0)"}
			return
		}
	}
	if c := meta.FindStatusCondition(set.Status.Conditions, firewallv1alpha1.ConditionHealthy); c != nil && c.Status != metav1.ConditionTrue {
		h.condition = &metav1.Condition{Type: firewallv1alpha1.ConditionHealthy, Status: metav1.ConditionTrue, Reason: ReasonRecovered, Message: "no Firewall past its timeouts"}
	}
}

// timeouts are the set's own, else the manager's.
func (r *Reconciler) timeouts(set *firewallv1alpha1.FirewallSet) (createTimeout, healthTimeout time.Duration) {
	createTimeout, healthTimeout = r.CreateTimeout, r.HealthTimeout
	if createTimeout == 0 {
		createTimeout = healthTimeout
	}
	if t := set.Spec.CreateTimeout; t != nil {
		createTimeout = t.Duration
	}
	if t := set.Spec.HealthTimeout; t != nil {
		healthTimeout = t.Duration
	}
	return createTimeout, healthTimeout
}

func (r *Reconciler) backoffBase() time.Duration {
	if r.ReplacementBackoff == 0 {
		return DefaultReplacementBackoff
	}
	return r.ReplacementBackoff
}

// event records an Event on the set about a Firewall.
func (r *Reconciler) event(set *firewallv1alpha1.FirewallSet, fw *firewallv1alpha1.Firewall, eventType, reason, action, note string, args ...any) {
	if r.Recorder == nil {
		return
	}
	r.Recorder.Eventf(set, fw, eventType, reason, action, note, args...)
}
