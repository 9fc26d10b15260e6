package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
	"github.com/metal-firewall/gardener-extension-firewall/test/framework"
)

// applyPolicy shows the shoot owner's side: the extension's shoot
// ManagedResource in the shoot, a ClusterwideNetworkPolicy that allows the
// node to reach the outside server, its status, and what it does to real
// connections.
func (d *demo) applyPolicy(ctx context.Context) error {
	if err := d.n.waitFor(ctx, "the shoot's resource manager to apply the extension's shoot ManagedResource", time.Minute, func(ctx context.Context) error {
		return d.shootClient.Get(ctx, client.ObjectKey{Namespace: firewallv1alpha1.ClusterwideNetworkPolicyNamespace, Name: constants.AgentShootRoleName}, &rbacv1.RoleBinding{})
	}); err != nil {
		return err
	}
	d.n.say("Gardener's resource manager applied ManagedResource %s into the shoot: the ClusterwideNetworkPolicy and FirewallMonitor CRDs, namespace %s, and the agent's Role (read policies, report status) and ClusterRole (read Services)",
		constants.ShootManagedResourceName, firewallv1alpha1.ClusterwideNetworkPolicyNamespace)

	policy := &firewallv1alpha1.ClusterwideNetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "allow-echo", Namespace: firewallv1alpha1.ClusterwideNetworkPolicyNamespace},
		Spec: firewallv1alpha1.PolicySpec{
			Description: "the nodes may reach the echo server outside",
			Egress: []firewallv1alpha1.EgressRule{{
				To:    []firewallv1alpha1.IPBlock{{CIDR: d.site.outside() + "/32"}},
				Ports: []firewallv1alpha1.PolicyPort{{Protocol: "TCP", Port: ptr.To[int32](7000)}},
			}},
		},
	}
	if err := d.shootClient.Create(ctx, policy); err != nil {
		return fmt.Errorf("creating ClusterwideNetworkPolicy %s: %w", policy.Name, err)
	}
	d.n.say("The shoot owner created ClusterwideNetworkPolicy %s/%s: egress to %s/32 on TCP %s", policy.Namespace, policy.Name, d.site.outside(), outsidePort)
	if err := d.n.waitFor(ctx, "the agent to enforce the policy and report it", time.Minute, func(ctx context.Context) error {
		if err := d.shootClient.Get(ctx, client.ObjectKeyFromObject(policy), policy); err != nil {
			return err
		}
		if policy.Status.State != firewallv1alpha1.PolicyStateDeployed || policy.Status.ObservedGeneration != policy.Generation {
			return fmt.Errorf("its status is %q %q", policy.Status.State, policy.Status.Message)
		}
		return nil
	}); err != nil {
		return err
	}
	d.n.say("Its status, written by the agent: %s (generation %d)", policy.Status.State, policy.Status.ObservedGeneration)

	// Kept open: it is the connection the rest of the demo follows.
	var err error
	if d.kept, err = d.site.keep(ctx, d.outsideAddr()); err != nil {
		return fmt.Errorf("a new connection from the node to %s, which the policy allows: %w", d.outsideAddr(), err)
	}
	if err := d.kept.Echo("allowed by the policy"); err != nil {
		return err
	}
	other := net.JoinHostPort(d.site.outside(), otherOutsidePort)
	if err := d.droppedFromNode(ctx, other); err != nil {
		return fmt.Errorf("%w, which no policy allows", err)
	}
	d.n.say("A new connection from the node to %s connects; one to %s, which no policy allows, gets no answer: dropped", d.outsideAddr(), other)
	if err := d.kept.Echo("under the shoot's policy"); err != nil {
		return fmt.Errorf("the connection the policy allowed: %w", err)
	}
	d.n.say("The node keeps its connection to %s open; the rest of the demo follows it", d.outsideAddr())

	fws, err := framework.Firewalls(ctx, d.seedA.c, shootNamespace)
	if err != nil {
		return err
	}
	if len(fws) != 1 {
		return fmt.Errorf("seed A holds %d Firewalls, want 1", len(fws))
	}
	mon := &firewallv1alpha1.FirewallMonitor{}
	if err := d.n.waitFor(ctx, "the agent's FirewallMonitor in the shoot", time.Minute, func(ctx context.Context) error {
		if err := d.shootClient.Get(ctx, client.ObjectKey{Namespace: firewallv1alpha1.FirewallMonitorNamespace, Name: fws[0].Name}, mon); err != nil {
			return err
		}
		if mon.Status.LastHeartbeat == nil || mon.Spec.MachineID == "" {
			return errors.New("no heartbeat or machine yet")
		}
		return nil
	}); err != nil {
		return err
	}
	d.n.say("The shoot owner sees the firewall without seed access: FirewallMonitor %s/%s, machine %s, agent %s, last heartbeat %s",
		mon.Namespace, mon.Name, mon.Spec.MachineID, mon.Status.AgentVersion, mon.Status.LastHeartbeat.Format(time.TimeOnly))
	d.n.proved("the shoot owner's ClusterwideNetworkPolicy is enforced by the firewall: what it allows connects, what it does not is dropped, and its status says Deployed")
	return nil
}
