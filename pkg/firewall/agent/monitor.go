package agent

import (
	"context"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	agentconfigv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/v1alpha1"
	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/metrics"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/netdev"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/ruleset"
)

// Condition types of the FirewallMonitor.
const (
	ConditionReady          = "Ready"
	ConditionSeedConnected  = "SeedConnected"
	ConditionShootConnected = "ShootConnected"
)

// monitorState keeps the monitor's conditions between heartbeats, so that a
// condition's transition time is when it changed, not when it was written.
type monitorState struct {
	conditions []metav1.Condition
}

// writeMonitor writes the FirewallMonitor into the shoot: the machine as the
// seed describes it, the agent's version, heartbeat, last error, counters and
// conditions.
func (a *Agent) writeMonitor(ctx context.Context, cfg *agentconfigv1alpha1.Config, usesSeed bool, fw *fwv1alpha1.Firewall, shootErr error, message string) {
	now := metav1.NewTime(time.Now())
	set := func(t string, ok bool, reason, msg string) {
		status := metav1.ConditionFalse
		if ok {
			status = metav1.ConditionTrue
		}
		meta.SetStatusCondition(&a.monitor.conditions, metav1.Condition{Type: t, Status: status, Reason: reason, Message: msg, LastTransitionTime: now})
	}
	switch {
	case message != "":
		set(ConditionReady, false, "ApplyFailed", message)
	case !a.ready(cfg):
		set(ConditionReady, false, "WaitingForSources", "the seed or the shoot has not been read yet; the ruleset in force stays")
	default:
		set(ConditionReady, true, "RulesetApplied", "the ruleset is in force")
	}
	if usesSeed {
		if fw != nil {
			set(ConditionSeedConnected, true, "FirewallRead", "")
		} else {
			set(ConditionSeedConnected, false, "SeedUnreachable", "the Firewall could not be read from the seed")
		}
	}
	if shootErr != nil {
		set(ConditionShootConnected, false, "ShootUnreachable", shootErr.Error())
	} else {
		set(ConditionShootConnected, true, "ShootRead", "")
	}

	status := fwv1alpha1.FirewallMonitorStatus{
		AgentVersion:  a.Version,
		LastHeartbeat: &now,
		Message:       message,
		Conditions:    slices.Clone(a.monitor.conditions),
	}
	status.DistanceSupported, status.Distance = a.distanceStatus()
	if r, ok := a.Applier.(metrics.CounterReader); ok {
		counters, err := r.RuleCounters(ruleset.TableName)
		if err != nil {
			a.Log.Error("reading the rule counters", "error", err)
		}
		for name, c := range counters {
			status.Counters = append(status.Counters, fwv1alpha1.RuleCounter{Name: name, Packets: c.Packets, Bytes: c.Bytes})
		}
		slices.SortFunc(status.Counters, func(x, y fwv1alpha1.RuleCounter) int { return strings.Compare(x.Name, y.Name) })
	}
	if d := a.devices.Load(); d != nil {
		devices, err := d.read(netdev.Read)
		if err != nil {
			a.Log.Error("reading the interfaces' counters", "error", err)
		}
		status.Devices, status.Traffic = devices, trafficOf(devices)
	}
	status.MetricsAddress = a.internalMetrics.reported()
	spec := fwv1alpha1.FirewallMonitorSpec{}
	if fw != nil {
		spec = fwv1alpha1.FirewallMonitorSpec{Size: fw.Spec.Size, Image: fw.Spec.Image, Partition: fw.Spec.Partition,
			Project: fw.Spec.Project, Networks: fw.Spec.Networks}
		if m := fw.Status.MachineStatus; m != nil {
			spec.MachineID = m.MachineID
		}
	}
	if err := a.shoot.Monitor(ctx, spec, status, fw != nil || !usesSeed); err != nil {
		a.Log.Error("writing the FirewallMonitor", "error", err)
	}
	if err := a.shoot.MetalStackMonitor(ctx, fw, status); err != nil {
		a.Log.Error("writing the FirewallMonitor of metal-stack's format", "error", err)
	}
}
