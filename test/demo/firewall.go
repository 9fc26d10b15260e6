package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/test/framework"
)

// localFirewallConfig is the shoot's firewall providerConfig for the local
// provider, which ignores size, image, partition, project and networks.
const localFirewallConfig = `{"size":"local","image":"local","partition":"local","project":"demo","networks":["internet"],"internalPrefixes":["` + shootNodes + `"]}`

// firewallConfig is the shoot's firewall providerConfig where the machine runs.
func (d *demo) firewallConfig() string {
	if s, ok := d.site.(*labSite); ok {
		return s.providerConfig()
	}
	return localFirewallConfig
}

// bringUpFirewall enables the firewall for the shoot and follows it until
// the agent on the machine has connected with its own certificate.
func (d *demo) bringUpFirewall(ctx context.Context) error {
	var err error
	created := time.Now()
	if d.firewall, err = framework.Reconcile(ctx, d.seedA.c, shootNamespace, "firewall", []byte(d.firewallConfig())); err != nil {
		return err
	}
	d.n.say("Enabled the firewall for the shoot: Extension %s/firewall in seed A with providerConfig", shootNamespace)
	d.n.detail(d.firewallConfig())

	var desc string
	if d.machineID, desc, err = d.site.waitForMachine(ctx); err != nil {
		return err
	}
	d.n.say("The extension created machine %s: %s", d.machineID, desc)
	if err := d.showBootCredential(ctx, d.seedA); err != nil {
		return err
	}

	where, err := d.site.wire(ctx)
	if err != nil {
		return err
	}
	d.n.say("Wired: %s; echo servers on %s and %s", where, d.nodeAddr(), d.outsideAddr())

	if s, ok := d.site.(*labSite); ok {
		said, err := s.closedWhileBooting()
		if err != nil {
			return err
		}
		d.n.say("%s", said)
	} else {
		// The agent's boot step installed a closed table (no last good
		// ruleset yet): a booting firewall forwards nothing unfiltered.
		if err := d.droppedFromNode(ctx, d.outsideAddr()); err != nil {
			return fmt.Errorf("before the agent applied its rules: %w", err)
		}
		if err := d.droppedFromOutside(ctx); err != nil {
			return fmt.Errorf("before the agent applied its rules: %w", err)
		}
		d.n.say("Before the agent has applied any rules the machine forwards nothing: the node's connection to %s and one from outside (%s) to the node's %s get no answer (the agent's boot step installed a closed table)",
			d.outsideAddr(), d.site.outside(), d.nodeAddr())
	}

	for _, host := range []string{d.seedA.cp.Config.Host, d.shoot.Config.Host} {
		how, err := d.site.reach(ctx, host)
		if err != nil {
			return err
		}
		if how != "" {
			d.n.say("The machine can now reach %s %s", host, how)
		}
	}

	d.n.say("Waiting for the agent: boot token -> CSR -> certificate -> report into seed A")
	fw, err := d.waitForConnected(ctx, d.seedA, 3*time.Minute)
	if err != nil {
		return err
	}
	d.n.say("Firewall %s is Ready %.1f s after the Extension was created: machine %s provisioned, agent version %s reported into seed A at %s",
		fw.Name, time.Since(created).Seconds(), fw.Status.MachineStatus.MachineID, fw.Status.AgentStatus.Version, fw.Status.AgentStatus.LastRunAgainstSeed.Format(time.TimeOnly))

	if err := d.showCredential(ctx, d.seedA, fw.Name); err != nil {
		return err
	}
	if err := d.showBootCredentialGone(ctx, d.seedA); err != nil {
		return err
	}
	d.n.proved("the firewall machine came up and its agent connected to seed A with a client certificate from its own CSR, approved by the extension and signed by kube-controller-manager; its boot token is revoked")
	return nil
}

// waitForConnected waits until the seed holds exactly one Firewall for the
// shoot, Ready and connected to this seed.
func (d *demo) waitForConnected(ctx context.Context, s *seed, timeout time.Duration) (*firewallv1alpha1.Firewall, error) {
	var fw *firewallv1alpha1.Firewall
	err := d.n.waitFor(ctx, "the Firewall in "+s.name+" to be Ready and connected", timeout, func(ctx context.Context) error {
		fws, err := framework.Firewalls(ctx, s.c, shootNamespace)
		if err != nil {
			return err
		}
		if len(fws) != 1 {
			return fmt.Errorf("%d Firewalls in %s", len(fws), s.name)
		}
		fw = &fws[0]
		for _, t := range []string{firewallv1alpha1.ConditionSeedConnected, firewallv1alpha1.ConditionReady} {
			c := meta.FindStatusCondition(fw.Status.Conditions, t)
			if c == nil {
				return fmt.Errorf("firewall %s has no condition %s yet", fw.Name, t)
			}
			if c.Status != "True" {
				return fmt.Errorf("firewall %s %s=%s: %s", fw.Name, t, c.Status, c.Message)
			}
		}
		if fw.Status.AgentStatus == nil || fw.Status.AgentStatus.LastRunAgainstSeed == nil || fw.Status.MachineStatus == nil {
			return errors.New("the agent has not reported yet")
		}
		return nil
	})
	return fw, err
}
