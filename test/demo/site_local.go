package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/machine"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/machine/local"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/netns"
	"github.com/metal-firewall/gardener-extension-firewall/test/framework"
	"github.com/metal-firewall/gardener-extension-firewall/test/roottest"
)

// localSite runs the machine as a network namespace of this host with the
// local provider: the node and the outside are namespaces too, wired to
// the machine's links int0 and ext0.
type localSite struct {
	run       run
	stateDir  string
	provider  *framework.CountingProvider
	machine   framework.MachineRecord
	wiring    framework.Wiring
	listeners []net.Listener
	// forwards carries the machine's ways to the control planes.
	forwards context.Context
	stop     context.CancelFunc
	// why says why the lab is not used.
	why string
}

func (s *localSite) title() string {
	return "a network namespace of this host (the local machine provider; the lab is not used: " + s.why + ")"
}

func (s *localSite) address() string { return "" }

func (s *localSite) start(_ context.Context, d *demo) (machine.Provider, error) {
	s.run = d.run
	s.stateDir = filepath.Join(d.run.dir(), "machines")
	provider, err := local.New(local.Options{
		StateDir: s.stateDir, AgentPath: d.agentPath, NetNSPrefix: d.run.machinePrefix(),
		InternalNetNS: d.run.netns("int"), ExternalNetNS: d.run.netns("ext"),
	})
	if err != nil {
		return nil, err
	}
	// One infrastructure behind both seeds, as metal-api is; it counts the
	// machines it creates.
	s.provider = &framework.CountingProvider{Provider: provider}
	s.forwards, s.stop = context.WithCancel(context.Background())
	s.wiring = framework.DefaultWiring(d.run.netns("int"), d.run.netns("ext"))
	return s.provider, nil
}

func (s *localSite) waitForMachine(ctx context.Context) (string, string, error) {
	var err error
	if s.machine, err = framework.WaitForMachine(ctx, s.stateDir, time.Minute); err != nil {
		return "", "", err
	}
	out, err := exec.Command("ip", "netns", "identify", fmt.Sprint(s.machine.PID)).Output()
	if err != nil {
		return "", "", fmt.Errorf("ip netns identify %d: %w", s.machine.PID, err)
	}
	if ns := strings.TrimSpace(string(out)); ns != s.machine.NetNS {
		return "", "", fmt.Errorf("the agent (pid %d) runs in namespace %q, not in the machine's %s", s.machine.PID, ns, s.machine.NetNS)
	}
	return s.machine.ID, fmt.Sprintf("network namespace %s, links int0 (the shoot's nodes) and ext0 (outside); firewall-agent runs in it (pid %d)",
		s.machine.NetNS, s.machine.PID), nil
}

// reach forwards the machine's loopback port to this host's: the control
// planes listen on the loopback, a real firewall reaches its seed's and
// its shoot's endpoints over the network.
func (s *localSite) reach(_ context.Context, host string) (string, error) {
	port, err := framework.PortOf(host)
	if err != nil {
		return "", err
	}
	if err := roottest.ForwardLoopback(s.forwards, &netns.NS{Name: s.machine.NetNS}, port); err != nil {
		return "", err
	}
	return "(forwarded to this host's loopback)", nil
}

func (s *localSite) wire(context.Context) (string, error) {
	if err := s.wiring.Wire(s.machine); err != nil {
		return "", err
	}
	for _, srv := range []struct{ netns, addr string }{
		{s.wiring.ExternalNetNS, net.JoinHostPort(s.outside(), outsidePort)},
		{s.wiring.ExternalNetNS, net.JoinHostPort(s.outside(), otherOutsidePort)},
		{s.wiring.InternalNetNS, net.JoinHostPort(s.node(), nodePort)},
	} {
		l, err := framework.StartEchoServer(srv.netns, srv.addr)
		if err != nil {
			return "", err
		}
		s.listeners = append(s.listeners, l)
	}
	return fmt.Sprintf("a node %s behind the machine (%s), a server %s outside it", s.wiring.Node, s.wiring.NodesCIDR, s.wiring.Outside), nil
}

func (s *localSite) nodes() string           { return shootNodes }
func (s *localSite) outside() string         { return s.wiring.Outside }
func (s *localSite) node() string            { return s.wiring.Node }
func (s *localSite) nodeFromOutside() string { return s.wiring.Node }

func (s *localSite) fromNode(_ context.Context, addr string, timeout time.Duration) error {
	return dialResult(framework.DialFrom(s.wiring.InternalNetNS, addr, timeout))
}

func (s *localSite) fromOutside(_ context.Context, timeout time.Duration) error {
	return dialResult(framework.DialFrom(s.wiring.ExternalNetNS, net.JoinHostPort(s.node(), nodePort), timeout))
}

// dialResult turns a dial into nil, errDropped or the error.
func dialResult(conn net.Conn, err error) error {
	if err == nil {
		_ = conn.Close()
		return nil
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return errDropped
	}
	return err
}

func (s *localSite) keep(_ context.Context, addr string) (keptConn, error) {
	conn, err := framework.DialFrom(s.wiring.InternalNetNS, addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	return framework.NewEchoConn(conn), nil
}

func (s *localSite) agentTable(context.Context) (string, error) {
	out, err := exec.Command("ip", append([]string{"netns", "exec", s.machine.NetNS, "nft", "list", "table"}, strings.Fields(agentTable)...)...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("nft list table %s: %w: %s", agentTable, err, out)
	}
	return string(out), nil
}

func (s *localSite) readFile(_ context.Context, path string) ([]byte, os.FileMode, error) {
	full := filepath.Join(framework.MachineRoot(s.stateDir, s.machine), path)
	info, err := os.Stat(full)
	if err != nil {
		return nil, 0, err
	}
	data, err := os.ReadFile(full) //nolint:gosec // the demo machine's own file
	return data, info.Mode().Perm(), err
}

func (s *localSite) bootKubeconfig(ctx context.Context) ([]byte, error) {
	data, _, err := s.readFile(ctx, bootKubeconfigPath)
	return data, err
}

func (s *localSite) agentStartsAlone() bool { return false }

func (s *localSite) oneMachine() (string, error) {
	recs, err := framework.Machines(s.stateDir)
	if err != nil {
		return "", err
	}
	var machineNetNS []string
	entries, err := os.ReadDir(netnsDir)
	if err != nil {
		return "", err
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), s.run.machinePrefix()) {
			machineNetNS = append(machineNetNS, e.Name())
		}
	}
	if created := s.provider.Created(); created != 1 || len(recs) != 1 || len(machineNetNS) != 1 {
		return "", fmt.Errorf("machines: %d created, %d recorded, namespaces %v; want one", created, len(recs), machineNetNS)
	}
	return fmt.Sprintf("the provider created 1 machine in total, 1 is recorded, 1 machine namespace exists (%s)", machineNetNS[0]), nil
}

func (s *localSite) released(context.Context) (string, error) {
	if s.machine.NetNS == "" {
		return "", nil
	}
	if _, err := os.Stat(filepath.Join(netnsDir, s.machine.NetNS)); !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("the machine's namespace %s is still there after the firewall's deletion", s.machine.NetNS)
	}
	return fmt.Sprintf("; the extension released machine %s (namespace %s gone)", s.machine.ID, s.machine.NetNS), nil
}

func (s *localSite) agentLog(context.Context) string {
	if s.machine.ID == "" {
		return ""
	}
	data, err := os.ReadFile(framework.AgentLog(s.stateDir, s.machine))
	if err != nil {
		return ""
	}
	return string(data)
}

func (s *localSite) close() {
	for _, l := range s.listeners {
		_ = l.Close()
	}
	if s.stop != nil {
		s.stop()
	}
}
