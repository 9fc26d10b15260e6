package shootsource

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
)

// Monitor writes the firewall's FirewallMonitor into the shoot: what the
// machine is (spec) and the agent's heartbeat and counters (status). It is
// named after the firewall, so each firewall of a rolling update has its own.
// The spec is only written when withSpec is set: an agent cut off from the
// seed does not know the machine and leaves what is there.
func (s *Source) Monitor(ctx context.Context, spec fwv1alpha1.FirewallMonitorSpec, status fwv1alpha1.FirewallMonitorStatus, withSpec bool) error {
	c, err := s.connect()
	if err != nil {
		return err
	}
	mon := &fwv1alpha1.FirewallMonitor{}
	key := client.ObjectKey{Namespace: s.Config.Namespace, Name: s.Name}
	err = c.Get(ctx, key, mon)
	switch {
	case apierrors.IsNotFound(err):
		mon = &fwv1alpha1.FirewallMonitor{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace}, Spec: spec}
		if err := c.Create(ctx, mon); err != nil {
			return fmt.Errorf("creating FirewallMonitor %s: %w", key, err)
		}
	case err != nil:
		return fmt.Errorf("reading FirewallMonitor %s: %w", key, err)
	case withSpec && !equality.Semantic.DeepEqual(mon.Spec, spec):
		patch := client.MergeFrom(mon.DeepCopy())
		mon.Spec = spec
		if err := c.Patch(ctx, mon, patch); err != nil {
			return fmt.Errorf("updating FirewallMonitor %s: %w", key, err)
		}
	}
	s.monitor = mon.DeepCopy()
	patch := client.MergeFrom(mon.DeepCopy())
	mon.Status = status
	if err := c.Status().Patch(ctx, mon, patch); err != nil {
		return fmt.Errorf("status of FirewallMonitor %s: %w", key, err)
	}
	return nil
}
