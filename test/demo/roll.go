package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/test/framework"
	"github.com/metal-firewall/gardener-extension-firewall/test/lab"
	"github.com/metal-firewall/gardener-extension-firewall/test/lab/stream"
	"github.com/metal-firewall/gardener-extension-firewall/test/metalapi"
)

// The TTLs the old and the new firewall set on the streams they forward.
const (
	rollMarkOld = 101
	rollMarkNew = 102
)

// rollFirewall rolls the firewall onto a new image in the lab while
// numbered UDP packets cross it both ways, 1,000 a second each, and shows
// that none was lost and that traffic moved from the old firewall to the
// new one once: the old one announced the longest distance first.
func (d *demo) rollFirewall(ctx context.Context) error {
	s, ok := d.site.(*labSite)
	if !ok {
		return errors.New("a rolling update is shown in the lab only")
	}
	if err := d.allowStreams(ctx); err != nil {
		return err
	}
	old := s.machine()
	if err := old.MarkStreams(ctx, rollMarkOld); err != nil {
		return err
	}
	streams, err := s.lab.StartStreams(ctx)
	if err != nil {
		return err
	}
	defer func() { _, _ = streams.Stop(context.WithoutCancel(ctx)) }()
	if err := d.n.waitFor(ctx, "the streams to cross the firewall both ways", 3*time.Minute, func(context.Context) error {
		toHost, toNode, err := streams.Report()
		if err != nil {
			return err
		}
		if toHost.Received < lab.StreamRate || toNode.Received < lab.StreamRate {
			return fmt.Errorf("%d and %d packets arrived", toHost.Received, toNode.Received)
		}
		return nil
	}); err != nil {
		return err
	}
	d.n.say("Numbered UDP packets cross firewall %s, %d a second each way over %d flows (node -> %s:%d, %s:%d -> node); each firewall marks what it forwards (its TTL)",
		old.Name, lab.StreamRate, stream.Flows, lab.HostAddress, lab.StreamToHost, lab.LoadBalancerAddress, lab.StreamToNode)

	cfg := strings.Replace(d.firewallConfig(), fmt.Sprintf("%q", metalapi.Image), fmt.Sprintf("%q", metalapi.NextImage), 1)
	if err := framework.UpdateProviderConfig(ctx, d.owner.c, d.firewall, []byte(cfg)); err != nil {
		return err
	}
	d.n.say("Changed the shoot's firewall image to %s: a rolling update, a new firewall next to the old one at distance 3", metalapi.NextImage)
	var next *lab.Machine
	if err := d.n.waitFor(ctx, "the new machine to boot its agent", 8*time.Minute, func(ctx context.Context) error {
		for _, id := range s.server.Allocated() {
			if m := s.hardware.Machine(id); id != s.machineID && m != nil {
				if _, err := m.Exec(ctx, "systemctl is-active firewall-agent.service"); err != nil {
					return fmt.Errorf("machine %s has not booted its agent yet", id)
				}
				next, s.machineID = m, id
				return nil
			}
		}
		return errors.New("no new machine yet")
	}); err != nil {
		return err
	}
	if err := next.MarkStreams(ctx, rollMarkNew); err != nil {
		return err
	}
	var announced []string
	if err := d.n.waitFor(ctx, "the old firewall to announce distance 8, the new one 0, and the old one to go", 10*time.Minute, func(ctx context.Context) error {
		fws, err := framework.Firewalls(ctx, d.owner.c, shootNamespace)
		if err != nil {
			return err
		}
		for _, fw := range fws {
			if a := fw.Status.AgentStatus; a != nil && a.Distance != nil {
				step := fmt.Sprintf("%s announces %d", fw.Name, *a.Distance)
				if len(announced) == 0 || announced[len(announced)-1] != step {
					announced = append(announced, step)
				}
			}
		}
		if len(fws) != 1 || fws[0].Spec.Image != metalapi.NextImage {
			return fmt.Errorf("%d Firewalls", len(fws))
		}
		if a := fws[0].Status.AgentStatus; a == nil || a.Distance == nil || *a.Distance != firewallv1alpha1.ShortestDistance {
			return fmt.Errorf("firewall %s does not announce distance 0 yet", fws[0].Name)
		}
		return nil
	}); err != nil {
		return err
	}
	d.n.say("The manager made before it broke: %s", strings.Join(announced, ", then "))
	d.machineID = s.machineID
	res, err := streams.Stop(ctx)
	if err != nil {
		return err
	}
	for _, dir := range []struct {
		name string
		r    stream.Report
	}{{"node -> outside", res.ToHost}, {"outside -> node", res.ToNode}} {
		carriers := map[int]stream.Carrier{}
		for _, c := range dir.r.Carriers {
			carriers[c.TTL] = c
		}
		o, n := carriers[rollMarkOld-1], carriers[rollMarkNew-1]
		d.n.say("%s: %d packets sent, %d arrived, %d lost; the old firewall carried %d to %d, the new one %d to %d; the longest pause %.0f ms",
			dir.name, dir.r.MaxSeq, dir.r.Received, dir.r.Lost(), o.FirstSeq, o.LastSeq, n.FirstSeq, n.LastSeq, dir.r.LargestGapMS)
		if dir.r.Lost() != 0 || len(dir.r.Carriers) != 2 || o.Packets == 0 || n.Packets == 0 || o.LastSeq >= n.FirstSeq {
			return fmt.Errorf("%s: %d lost, carriers %+v: want none lost and the traffic moved once", dir.name, dir.r.Lost(), dir.r.Carriers)
		}
	}
	d.n.proved("a rolling update on metal moves the traffic once, from the old firewall to the new one, without losing a packet: each firewall announces its distance over BGP (an AS-path prepend in its FRR), and the manager waits for each before the next step")
	return nil
}

// allowStreams lets the streams through the shoot owner's rules: a policy
// for the node's stream to the outside, a LoadBalancer Service for the
// outside's to the node.
func (d *demo) allowStreams(ctx context.Context) error {
	policy := &firewallv1alpha1.ClusterwideNetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "demo-streams", Namespace: firewallv1alpha1.ClusterwideNetworkPolicyNamespace},
		Spec: firewallv1alpha1.PolicySpec{Egress: []firewallv1alpha1.EgressRule{{
			To:    []firewallv1alpha1.IPBlock{{CIDR: lab.HostAddress.String() + "/32"}},
			Ports: []firewallv1alpha1.PolicyPort{{Protocol: "UDP", Port: ptr.To[int32](lab.StreamToHost)}},
		}}},
	}
	if err := d.shootClient.Create(ctx, policy); err != nil {
		return err
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "demo-streams", Namespace: "default"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, LoadBalancerSourceRanges: []string{lab.HostAddress.String() + "/32"},
			Ports: []corev1.ServicePort{{Name: "stream", Protocol: corev1.ProtocolUDP, Port: lab.StreamToNode}}},
	}
	if err := d.shootClient.Create(ctx, svc); err != nil {
		return err
	}
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: lab.LoadBalancerAddress.String()}}
	return d.shootClient.Status().Update(ctx, svc)
}
