package agent

import (
	"context"
	"errors"
	"fmt"

	agentconfigv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/v1alpha1"
	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/bgpdistance"
)

// announceDistance makes FRR announce the distance of the Firewall read this
// round, when the config has routing. Without the Firewall (the seed did not
// answer) the distance in force stays. The error says why the distance
// could not be applied; the one in force then stays.
func (a *Agent) announceDistance(ctx context.Context, cfg *agentconfigv1alpha1.Config, fw *fwv1alpha1.Firewall) error {
	r := cfg.Routing
	if r == nil {
		a.announcer = nil
		return nil
	}
	if a.announcer == nil || a.announcer.ConfigPath != r.FRRConfig || a.announcer.PeerGroup != r.PeerGroup {
		a.announcer = &bgpdistance.Announcer{ConfigPath: r.FRRConfig, PeerGroup: r.PeerGroup}
	}
	a.announcer.Vtysh, a.announcer.Reload = a.Vtysh, a.FRRReload
	if fw == nil {
		return nil
	}
	before, had := a.announcer.InForce()
	err := a.announcer.Announce(ctx, int(fw.Spec.Distance))
	// A machine without FRR's configuration announces no routes: nothing to
	// announce a distance on, and the manager need not wait for one.
	if a.noFRR = errors.Is(err, bgpdistance.ErrNoConfig); a.noFRR {
		return nil
	}
	if err != nil {
		err = fmt.Errorf("announcing distance %d: %w", fw.Spec.Distance, err)
		a.Log.Error("the distance in force stays", "error", err)
		return err
	}
	if now, _ := a.announcer.InForce(); !had || now != before {
		a.Log.Info("distance announced", "distance", now)
	}
	return nil
}

// distanceStatus is what the agent reports of its distance: whether it
// announces one at all, and the one in force.
func (a *Agent) distanceStatus() (supported bool, inForce *int32) {
	if a.announcer == nil || a.noFRR {
		return false, nil
	}
	if d, ok := a.announcer.InForce(); ok {
		return true, &d
	}
	return true, nil
}
