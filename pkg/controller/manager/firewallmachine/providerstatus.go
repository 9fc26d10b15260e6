package firewallmachine

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/machine"
)

// Reasons of the Created and Provisioned conditions when the provider fails.
const (
	// ReasonCreateFailed: the provider refused the machine (no free machine,
	// unknown size, no permission, ...); the message is the provider's.
	ReasonCreateFailed = "CreateFailed"
	// ReasonAllocationInDoubt: a Create failed in a way that leaves open
	// whether a machine was allocated; no other Create for InDoubtSettle.
	ReasonAllocationInDoubt = "AllocationInDoubt"
	// ReasonProviderError: the provider could not be asked for the machine.
	ReasonProviderError = "ProviderError"
)

// DefaultInDoubtSettle is the default of Reconciler.InDoubtSettle.
const DefaultInDoubtSettle = 2 * time.Minute

// createFailed records why Create failed on the Firewall and returns the
// error, so that the Firewall is retried with back-off. An allocation in
// doubt starts its settle time now, whatever Created said before.
func (r *Reconciler) createFailed(ctx context.Context, fw *firewallv1alpha1.Firewall, createErr error) error {
	reason := ReasonCreateFailed
	if errors.As(createErr, new(*machine.InDoubtError)) {
		reason = ReasonAllocationInDoubt
	}
	now := metav1.NewTime(r.Clock.Now())
	if err := r.patchStatus(ctx, fw, func() {
		c := condition(firewallv1alpha1.ConditionCreated, false, reason, createErr.Error(), fw.Generation)
		if old := meta.FindStatusCondition(fw.Status.Conditions, firewallv1alpha1.ConditionCreated); reason == ReasonAllocationInDoubt && (old == nil || old.Reason != reason) {
			// SetStatusCondition keeps the time of the last status change;
			// the settle time counts from this doubt, not an earlier error.
			meta.RemoveStatusCondition(&fw.Status.Conditions, firewallv1alpha1.ConditionCreated)
			c.LastTransitionTime = now
		}
		meta.SetStatusCondition(&fw.Status.Conditions, c)
	}); err != nil {
		return errors.Join(createErr, err)
	}
	return fmt.Errorf("creating machine: %w", createErr)
}

// findFailed records that the provider could not be asked: before a machine
// is known as Created=False, after as Provisioned=Unknown, which leaves
// Ready alone (the firewall forwards whether or not its provider answers).
func (r *Reconciler) findFailed(ctx context.Context, fw *firewallv1alpha1.Firewall, findErr error) error {
	if err := r.patchStatus(ctx, fw, func() {
		msg := "finding the machine: " + findErr.Error()
		if fw.Status.MachineStatus == nil {
			if c := meta.FindStatusCondition(fw.Status.Conditions, firewallv1alpha1.ConditionCreated); c != nil && c.Reason == ReasonAllocationInDoubt {
				// Keep the doubt (and its time): it is still unresolved.
				return
			}
			meta.SetStatusCondition(&fw.Status.Conditions, condition(firewallv1alpha1.ConditionCreated, false, ReasonProviderError, msg, fw.Generation))
			return
		}
		meta.SetStatusCondition(&fw.Status.Conditions, metav1.Condition{Type: firewallv1alpha1.ConditionProvisioned, Status: metav1.ConditionUnknown,
			Reason: ReasonProviderError, Message: msg, ObservedGeneration: fw.Generation})
	}); err != nil {
		return errors.Join(findErr, err)
	}
	return fmt.Errorf("finding machine: %w", findErr)
}

// inDoubtFor is how long to wait before a Create, when an earlier Create of
// this Firewall may have allocated a machine.
func (r *Reconciler) inDoubtFor(fw *firewallv1alpha1.Firewall) time.Duration {
	c := meta.FindStatusCondition(fw.Status.Conditions, firewallv1alpha1.ConditionCreated)
	if c == nil || c.Reason != ReasonAllocationInDoubt || c.Status != metav1.ConditionFalse {
		return 0
	}
	settle := r.InDoubtSettle
	if settle == 0 {
		settle = DefaultInDoubtSettle
	}
	return c.LastTransitionTime.Add(settle).Sub(r.Clock.Now())
}

// machineStatus is what the Firewall's status says about its machine.
func machineStatus(m *machine.Machine) *firewallv1alpha1.MachineStatus {
	ms := &firewallv1alpha1.MachineStatus{MachineID: m.ID, Message: m.Message, Liveliness: m.Liveliness, ImageID: m.ImageID, CrashLoop: m.CrashLoop}
	if !m.AllocatedAt.IsZero() {
		ms.AllocationTimestamp = &metav1.Time{Time: m.AllocatedAt}
	}
	if e := m.LastEvent; e != nil {
		ms.LastEvent = &firewallv1alpha1.MachineEvent{Event: e.Event, Message: e.Message}
		if !e.Time.IsZero() {
			ms.LastEvent.Timestamp = &metav1.Time{Time: e.Time}
		}
	}
	return ms
}

// egressIPs are the addresses the firewall's traffic leaves with: its
// machine's external addresses and its SNAT IPs, sorted and without
// duplicates. What is no address is left out: the acl parses them.
func egressIPs(fw *firewallv1alpha1.Firewall, m *machine.Machine) []string {
	var addrs []netip.Addr
	add := func(s string) {
		if a, err := netip.ParseAddr(s); err == nil {
			addrs = append(addrs, a.Unmap())
		}
	}
	for _, ip := range m.ExternalIPs {
		add(ip)
	}
	for _, r := range fw.Spec.EgressRules {
		for _, ip := range r.IPs {
			add(ip)
		}
	}
	slices.SortFunc(addrs, netip.Addr.Compare)
	addrs = slices.Compact(addrs)
	if len(addrs) == 0 {
		return nil
	}
	out := make([]string, len(addrs))
	for i, a := range addrs {
		out[i] = a.String()
	}
	return out
}
