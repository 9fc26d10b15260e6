package shootsource

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
)

// MetalStackMonitorGVK is the FirewallMonitor of metal-stack's
// firewall-controller-manager, which shoots moved from it hold.
var MetalStackMonitorGVK = schema.GroupVersionKind{Group: constants.MetalStackMonitorGroup, Version: "v2", Kind: "FirewallMonitor"}

// MetalStackMonitor keeps a FirewallMonitor of metal-stack's format
// (firewall.metal-stack.io/v2) current next to ours, when the shoot serves
// that kind: what its owners read there (`kubectl get fwmon`, dashboards)
// goes on working after the shoot moved. Without the kind it writes nothing.
// Without the Firewall (no seed source) it only updates a monitor that
// exists: that format requires the machine's size, image and partition.
func (s *Source) MetalStackMonitor(ctx context.Context, fw *fwv1alpha1.Firewall, status fwv1alpha1.FirewallMonitorStatus) error {
	c, err := s.connect()
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(MetalStackMonitorGVK)
	key := client.ObjectKey{Namespace: s.Config.Namespace, Name: s.Name}
	err = c.Get(ctx, key, u)
	switch {
	case meta.IsNoMatchError(err):
		return nil
	case apierrors.IsNotFound(err):
		if fw == nil {
			return nil
		}
		u.SetName(key.Name)
		u.SetNamespace(key.Namespace)
		if err := setMetalStackMonitor(u, fw, status); err != nil {
			return err
		}
		if err := c.Create(ctx, u); err != nil {
			return fmt.Errorf("creating %s FirewallMonitor %s: %w", MetalStackMonitorGVK.GroupVersion(), key, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("reading %s FirewallMonitor %s: %w", MetalStackMonitorGVK.GroupVersion(), key, err)
	}
	original := u.DeepCopy()
	if err := setMetalStackMonitor(u, fw, status); err != nil {
		return err
	}
	if equality.Semantic.DeepEqual(original.Object, u.Object) {
		return nil
	}
	if err := c.Patch(ctx, u, client.MergeFrom(original)); err != nil {
		return fmt.Errorf("updating %s FirewallMonitor %s: %w", MetalStackMonitorGVK.GroupVersion(), key, err)
	}
	return nil
}

// setMetalStackMonitor writes into u what firewall-controller-manager copies
// from its Firewall (size, image, partition, project, networks, machine
// status, conditions: ours carry the same condition types) and what
// firewall-controller reports (controllerStatus).
func setMetalStackMonitor(u *unstructured.Unstructured, fw *fwv1alpha1.Firewall, status fwv1alpha1.FirewallMonitorStatus) error {
	fields := map[string]any{}
	if fw != nil {
		networks := make([]any, 0, len(fw.Spec.Networks))
		for _, n := range fw.Spec.Networks {
			networks = append(networks, n)
		}
		fields["size"], fields["image"], fields["partition"], fields["project"] = fw.Spec.Size, fw.Spec.Image, fw.Spec.Partition, fw.Spec.Project
		fields["networks"] = networks
		if m := fw.Status.MachineStatus; m != nil {
			ms := map[string]any{"machineID": m.MachineID, "liveliness": m.Liveliness, "allocationTimestamp": timeString(m.AllocationTimestamp)}
			if m.CrashLoop {
				ms["crashLoop"] = true
			}
			if m.ImageID != "" {
				ms["imageID"] = m.ImageID
			}
			if e := m.LastEvent; e != nil {
				ms["lastEvent"] = map[string]any{"event": e.Event, "message": e.Message, "timestamp": timeString(e.Timestamp)}
			}
			fields["machineStatus"] = ms
		}
		fields["conditions"] = metalStackConditions(fw.Status.Conditions)
	} else if _, found := u.Object["conditions"]; !found {
		fields["conditions"] = []any{}
	}

	rules := map[string]any{}
	for _, r := range status.Counters {
		rules[r.Name] = map[string]any{"counter": map[string]any{"bytes": int64(r.Bytes), "packets": int64(r.Packets)}}
	}
	controller := map[string]any{
		"controllerVersion": status.AgentVersion,
		// Ours are counted by rule, not by action: one group.
		"stats": map[string]any{"rules": map[string]any{"counted": rules}, "devices": metalStackDevices(status.Devices), "idsStats": map[string]any{}},
	}
	if status.Message != "" {
		controller["message"] = status.Message
	}
	// firewall-controller-manager's FirewallDistance (uint8); 0 is omitted, as it omits it.
	if status.DistanceSupported {
		controller["distanceSupported"] = true
	}
	if status.Distance != nil && *status.Distance > 0 {
		controller["distance"] = int64(*status.Distance)
	}
	if status.LastHeartbeat != nil {
		controller["lastRun"] = timeString(status.LastHeartbeat)
	}
	if c := meta.FindStatusCondition(status.Conditions, "SeedConnected"); c != nil && c.Status == metav1.ConditionTrue && status.LastHeartbeat != nil {
		controller["lastRunAgainstSeed"] = timeString(status.LastHeartbeat)
	}
	fields["controllerStatus"] = controller
	for k, v := range fields {
		if err := unstructured.SetNestedField(u.Object, v, k); err != nil {
			return fmt.Errorf("%s FirewallMonitor field %s: %w", MetalStackMonitorGVK.GroupVersion(), k, err)
		}
	}
	return nil
}

// metalStackDevices are the interfaces' byte counters in firewall-
// controller's form: in is received, out sent.
func metalStackDevices(devices []fwv1alpha1.DeviceStatistics) map[string]any {
	out := map[string]any{}
	for _, d := range devices {
		out[d.Name] = map[string]any{"in": int64(d.RxBytes), "out": int64(d.TxBytes)}
	}
	return out
}

// metalStackConditions are conditions in firewall-controller-manager's form,
// which has a lastUpdateTime besides the transition time.
func metalStackConditions(conds []metav1.Condition) []any {
	out := make([]any, 0, len(conds))
	for _, c := range conds {
		t := timeString(&c.LastTransitionTime)
		out = append(out, map[string]any{
			"type": c.Type, "status": string(c.Status), "reason": c.Reason, "message": c.Message,
			"lastTransitionTime": t, "lastUpdateTime": t,
		})
	}
	return out
}

func timeString(t *metav1.Time) string {
	if t == nil || t.IsZero() {
		return metav1.Unix(0, 0).UTC().Format("2006-01-02T15:04:05Z")
	}
	return t.UTC().Format("2006-01-02T15:04:05Z")
}
