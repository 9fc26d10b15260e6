package main

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/machine"
)

// site is where the demo's firewall machine runs: the lab (metal-stack's
// firewall machine, booted from its userdata behind a BGP/EVPN leaf in a
// virtual machine) or, where the lab cannot be built, a network namespace
// of this host (the local machine provider).
type site interface {
	// title says where, for the narration.
	title() string
	// address is where the control planes listen for the machine; empty:
	// this host's loopback.
	address() string
	// start makes the machines' provider for the extension.
	start(ctx context.Context, d *demo) (machine.Provider, error)
	// waitForMachine waits for the firewall's machine and says what it is.
	waitForMachine(ctx context.Context) (id, desc string, err error)
	// reach makes a control plane's endpoint reachable from the machine and
	// says how, or says nothing when the machine reaches it by itself.
	reach(ctx context.Context, host string) (string, error)
	// wire puts a node behind the machine and a server outside, with echo
	// servers on both, and says where.
	wire(ctx context.Context) (string, error)
	// nodes is the shoot's node network: the Cluster's nodes CIDR and the
	// firewall's internal prefix.
	nodes() string
	// outside and node are the servers' addresses; nodeFromOutside is where
	// the internet reaches the node (its address, or a load balancer's).
	outside() string
	node() string
	nodeFromOutside() string
	// fromNode opens a new connection from the node to addr, fromOutside one
	// from outside to the node's echo server: nil when it connects,
	// errDropped when nothing answers.
	fromNode(ctx context.Context, addr string, timeout time.Duration) error
	fromOutside(ctx context.Context, timeout time.Duration) error
	// keep opens a connection from the node to addr, kept for the demo.
	keep(ctx context.Context, addr string) (keptConn, error)
	// agentTable is `nft list table inet firewall-agent` on the machine.
	agentTable(ctx context.Context) (string, error)
	// readFile reads a file of the agent on the machine, with its mode; an
	// error wrapping os.ErrNotExist when there is none.
	readFile(ctx context.Context, path string) ([]byte, os.FileMode, error)
	// bootKubeconfig is the boot kubeconfig the machine got with its userdata.
	bootKubeconfig(ctx context.Context) ([]byte, error)
	// agentStartsAlone tells whether the agent may have connected before the
	// demo looks at a new machine (a machine that boots by itself).
	agentStartsAlone() bool
	// machines checks that there is one machine and was only ever one, and
	// says so.
	oneMachine() (string, error)
	// released checks that the machine is gone after the firewall's
	// deletion and says so.
	released(ctx context.Context) (string, error)
	// agentLog is the end of the agent's log, for a failure.
	agentLog(ctx context.Context) string
	close()
}

// keptConn is a connection from the node kept through the demo.
type keptConn interface {
	// Echo checks that the connection still carries data.
	Echo(msg string) error
	Close() error
}

// errDropped says that a new connection got no answer at all.
var errDropped = errors.New("no answer: dropped")
