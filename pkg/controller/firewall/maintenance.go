package firewall

import (
	"context"
	"fmt"
	"strings"
	"time"

	v1beta1helper "github.com/gardener/gardener/pkg/api/core/v1beta1/helper"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	"github.com/gardener/gardener/pkg/apis/utils/timewindow"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
)

// Reasons of the FirewallUpdatePending condition and of the Extension's events.
const (
	ReasonOutsideMaintenanceWindow = "OutsideMaintenanceWindow"
	ReasonUpdateApplied            = "FirewallUpdateApplied"
	ReasonUpToDate                 = "UpToDate"
)

// rolling lists the Firewall fields whose change the maintenance window holds
// back: a new image is a new machine, a new agent a restart of what filters.
// Rules, rate limits and the DNS proxy are never held back.
var rolling = []struct {
	name string
	get  func(*firewallv1alpha1.FirewallSpec) *string
}{
	{"image", func(s *firewallv1alpha1.FirewallSpec) *string { return &s.Image }},
	{"agentVersion", func(s *firewallv1alpha1.FirewallSpec) *string { return &s.AgentVersion }},
	{"agentURL", func(s *firewallv1alpha1.FirewallSpec) *string { return &s.AgentURL }},
	{"agentSHA256", func(s *firewallv1alpha1.FirewallSpec) *string { return &s.AgentSHA256 }},
	{"agentSHA512", func(s *firewallv1alpha1.FirewallSpec) *string { return &s.AgentSHA512 }},
}

// changes names the rolling fields in which to differs from from.
func changes(from, to *firewallv1alpha1.FirewallSpec) []string {
	var out []string
	for _, f := range rolling {
		if a, b := *f.get(from), *f.get(to); a != b {
			out = append(out, fmt.Sprintf("%s %q -> %q", f.name, a, b))
		}
	}
	return out
}

// holdBack sets the rolling fields of desired to those running and returns
// what it held back.
func holdBack(desired, running *firewallv1alpha1.FirewallSpec) []string {
	held := changes(running, desired)
	for _, f := range rolling {
		*f.get(desired) = *f.get(running)
	}
	return held
}

// maintenance is when an update that rolls the firewall may be applied.
type maintenance struct {
	// window is the shoot's maintenance window; nil: none known, any time.
	window *timewindow.MaintenanceTimeWindow
	// forced: the operator's AnnotationForceUpdate.
	forced bool
}

// maintenanceOf reads the shoot's window from its Cluster's Shoot. A window
// that does not parse counts as none: Gardener validates it.
func maintenanceOf(log logr.Logger, shoot *gardencorev1beta1.Shoot, ex *extensionsv1alpha1.Extension) maintenance {
	m := maintenance{forced: ex.Annotations[constants.AnnotationForceUpdate] == "true"}
	if shoot == nil || shoot.Spec.Maintenance == nil || shoot.Spec.Maintenance.TimeWindow == nil {
		return m
	}
	tw := shoot.Spec.Maintenance.TimeWindow
	window, err := timewindow.ParseMaintenanceTimeWindow(tw.Begin, tw.End)
	if err != nil {
		log.Error(err, "The shoot's maintenance window does not parse; updates are applied at once", "begin", tw.Begin, "end", tw.End)
		return m
	}
	m.window = window
	return m
}

// allows tells whether an update may roll the firewall now, and why.
func (m maintenance) allows(now time.Time) (bool, string) {
	switch {
	case m.forced:
		return true, "forced by the annotation " + constants.AnnotationForceUpdate
	case m.window == nil:
		return true, "the shoot has no maintenance window"
	case m.window.Contains(now):
		return true, "in the maintenance window " + m.window.String()
	}
	return false, ""
}

// reportUpdate records what the reconcile applied or held back: an Event on
// the Extension for each change, and the FirewallUpdatePending condition; a
// forced update's annotation is removed once the update is written.
func (a *actuator) reportUpdate(ctx context.Context, ex *extensionsv1alpha1.Extension, m maintenance, applied, pending []string, why string) error {
	if len(applied) > 0 {
		a.event(ex, corev1.EventTypeNormal, ReasonUpdateApplied, "Roll", "Applied %s: %s", strings.Join(applied, ", "), why)
	}
	current := v1beta1helper.GetCondition(ex.Status.Conditions, constants.ConditionFirewallUpdatePending)
	var cond *gardencorev1beta1.Condition
	switch {
	case len(pending) > 0:
		msg := fmt.Sprintf("%s held back until the maintenance window %s (or the annotation %s=true)", strings.Join(pending, ", "), m.window, constants.AnnotationForceUpdate)
		if current == nil || current.Status != gardencorev1beta1.ConditionTrue || current.Message != msg {
			a.event(ex, corev1.EventTypeNormal, ReasonOutsideMaintenanceWindow, "HoldBack", "%s", msg)
		}
		c := v1beta1helper.UpdatedConditionWithClock(a.clock, v1beta1helper.GetOrInitConditionWithClock(a.clock, ex.Status.Conditions, constants.ConditionFirewallUpdatePending),
			gardencorev1beta1.ConditionTrue, ReasonOutsideMaintenanceWindow, msg)
		cond = &c
	case current != nil && current.Status != gardencorev1beta1.ConditionFalse:
		msg := "no update held back"
		if len(applied) > 0 {
			msg = "applied " + strings.Join(applied, ", ") + ": " + why
		}
		c := v1beta1helper.UpdatedConditionWithClock(a.clock, *current, gardencorev1beta1.ConditionFalse, ReasonUpToDate, msg)
		cond = &c
	}
	if cond != nil {
		patch := client.MergeFrom(ex.DeepCopy())
		ex.Status.Conditions = v1beta1helper.MergeConditions(ex.Status.Conditions, *cond)
		if err := a.client.Status().Patch(ctx, ex, patch); err != nil {
			return fmt.Errorf("condition %s: %w", constants.ConditionFirewallUpdatePending, err)
		}
	}
	if _, ok := ex.Annotations[constants.AnnotationForceUpdate]; ok && m.forced {
		patch := client.MergeFrom(ex.DeepCopy())
		delete(ex.Annotations, constants.AnnotationForceUpdate)
		if err := a.client.Patch(ctx, ex, patch); err != nil {
			return fmt.Errorf("removing the annotation %s: %w", constants.AnnotationForceUpdate, err)
		}
	}
	return nil
}

// event records an Event on the Extension, where operators look.
func (a *actuator) event(ex *extensionsv1alpha1.Extension, eventType, reason, action, note string, args ...any) {
	if a.recorder != nil {
		a.recorder.Eventf(ex, nil, eventType, reason, action, note, args...)
	}
}
