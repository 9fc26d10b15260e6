package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	agentconfigv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/v1alpha1"
)

// Ports of the echo servers: outside (and a second one that no policy
// allows) and on the shoot's node.
const (
	outsidePort      = "7000"
	otherOutsidePort = "7001"
	nodePort         = "8080"
)

// bootKubeconfigPath is where the machine holds its boot kubeconfig.
const bootKubeconfigPath = agentconfigv1alpha1.BootstrapKubeconfigPath

func (d *demo) outsideAddr() string { return net.JoinHostPort(d.site.outside(), outsidePort) }
func (d *demo) nodeAddr() string    { return net.JoinHostPort(d.site.nodeFromOutside(), nodePort) }

// droppedFromNode checks that a new connection from the node to addr gets
// no answer at all: dropped, not refused.
func (d *demo) droppedFromNode(ctx context.Context, addr string) error {
	switch err := d.site.fromNode(ctx, addr, 2*time.Second); {
	case err == nil:
		return fmt.Errorf("a new connection from the node to %s was accepted", addr)
	case !errors.Is(err, errDropped):
		return fmt.Errorf("a new connection from the node to %s failed, but not by a drop: %w", addr, err)
	}
	return nil
}

// droppedFromOutside checks that a new connection from outside to the node
// gets no answer at all: dropped, not refused.
func (d *demo) droppedFromOutside(ctx context.Context) error {
	switch err := d.site.fromOutside(ctx, 2*time.Second); {
	case err == nil:
		return fmt.Errorf("a new connection from %s to %s was accepted", d.site.outside(), d.nodeAddr())
	case !errors.Is(err, errDropped):
		return fmt.Errorf("a new connection from %s to %s failed, but not by a drop: %w", d.site.outside(), d.nodeAddr(), err)
	}
	return nil
}
