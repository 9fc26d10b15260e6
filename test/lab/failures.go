package lab

import (
	"context"
	"fmt"
	"strings"
)

// Failures of a firewall's link to the leaf, done on the leaf's port.

// Unplug takes the leaf's port of the machine down (the cable pulled); Plug
// brings it back.
func (m *Machine) Unplug(ctx context.Context) error {
	_, err := m.lab.Run(ctx, "ip link set "+m.Port()+" down")
	return err
}

// Plug brings the leaf's port of the machine back up.
func (m *Machine) Plug(ctx context.Context) error {
	_, err := m.lab.Run(ctx, "ip link set "+m.Port()+" up")
	return err
}

// Silence drops everything on the leaf's port of the machine, both ways,
// with the link up: a peer that stops answering, which BGP notices only when
// its hold timer expires.
func (m *Machine) Silence(ctx context.Context) error {
	p := m.Port()
	_, err := m.lab.Run(ctx, fmt.Sprintf("tc qdisc add dev %[1]s clsact && tc filter add dev %[1]s ingress matchall action drop && tc filter add dev %[1]s egress matchall action drop", p))
	return err
}

// Unsilence lets the port's packets through again.
func (m *Machine) Unsilence(ctx context.Context) error {
	_, err := m.lab.Run(ctx, "tc qdisc del dev "+m.Port()+" clsact")
	return err
}

// BGPEstablished tells whether the leaf's BGP session with the machine is up.
func (m *Machine) BGPEstablished(ctx context.Context) (bool, error) {
	out, err := m.lab.Run(ctx, "vtysh -c 'show bgp neighbors "+m.Port()+"' | grep 'BGP state'")
	if err != nil {
		return false, err
	}
	return strings.Contains(out, "Established"), nil
}
