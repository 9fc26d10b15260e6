package main

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/netns"
	"github.com/metal-firewall/gardener-extension-firewall/test/framework"
	"github.com/metal-firewall/gardener-extension-firewall/test/roottest"
)

// firewallConfig is the shoot's firewall providerConfig; the local provider
// ignores size, image, partition, project and networks.
const firewallConfig = `{"size":"local","image":"local","partition":"local","project":"demo","networks":["internet"],"internalPrefixes":["` + shootNodes + `"]}`

// bringUpFirewall enables the firewall for the shoot and follows it until
// the agent on the machine has connected with its own certificate.
func (d *demo) bringUpFirewall(ctx context.Context) error {
	var err error
	created := time.Now()
	if d.firewall, err = framework.Reconcile(ctx, d.seedA.c, shootNamespace, "firewall", []byte(firewallConfig)); err != nil {
		return err
	}
	d.n.say("Enabled the firewall for the shoot: Extension %s/firewall in seed A with providerConfig", shootNamespace)
	d.n.detail(firewallConfig)

	if d.machine, err = framework.WaitForMachine(ctx, d.stateDir, time.Minute); err != nil {
		return err
	}
	out, err := exec.Command("ip", "netns", "identify", fmt.Sprint(d.machine.PID)).Output()
	if err != nil {
		return fmt.Errorf("ip netns identify %d: %w", d.machine.PID, err)
	}
	if ns := strings.TrimSpace(string(out)); ns != d.machine.NetNS {
		return fmt.Errorf("the agent (pid %d) runs in namespace %q, not in the machine's %s", d.machine.PID, ns, d.machine.NetNS)
	}
	d.n.say("The extension created machine %s: network namespace %s, links int0 (the shoot's nodes) and ext0 (outside); firewall-agent runs in it (pid %d)",
		d.machine.ID, d.machine.NetNS, d.machine.PID)
	if err := d.showBootCredential(ctx, d.seedA); err != nil {
		return err
	}

	d.wiring = framework.DefaultWiring(d.run.netns("int"), d.run.netns("ext"))
	if err := d.wiring.Wire(d.machine); err != nil {
		return err
	}
	if err := d.startEchoServers(); err != nil {
		return err
	}
	d.n.say("Wired: a node %s behind the machine (%s), a server %s outside it; echo servers on %s and %s",
		d.wiring.Node, d.wiring.NodesCIDR, d.wiring.Outside, d.nodeAddr(), d.outsideAddr())

	// The agent's boot step installed a closed table (no last good ruleset
	// yet): a booting firewall forwards nothing unfiltered.
	if err := d.droppedFromNode(d.outsideAddr()); err != nil {
		return fmt.Errorf("before the agent applied its rules: %w", err)
	}
	if err := d.droppedFromOutside(); err != nil {
		return fmt.Errorf("before the agent applied its rules: %w", err)
	}
	d.n.say("Before the agent has applied any rules the machine forwards nothing: the node's connection to %s and one from outside (%s) to the node's %s get no answer (the agent's boot step installed a closed table)",
		d.outsideAddr(), d.wiring.Outside, d.nodeAddr())

	// The control planes listen on this host's loopback; a real firewall
	// reaches its seed's and its shoot's endpoints over the network.
	d.forwardCtx, d.stopForwards = context.WithCancel(context.Background())
	for _, host := range []string{d.seedA.cp.Config.Host, d.shoot.Config.Host} {
		if err := d.forward(d.forwardCtx, host); err != nil {
			return err
		}
	}
	d.n.say("The machine can now reach seed A's and the shoot's API endpoints (forwarded to this host's loopback)")

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

// forward makes a control plane's endpoint reachable from the machine.
func (d *demo) forward(ctx context.Context, host string) error {
	port, err := framework.PortOf(host)
	if err != nil {
		return err
	}
	return roottest.ForwardLoopback(ctx, &netns.NS{Name: d.machine.NetNS}, port)
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
