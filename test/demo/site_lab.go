package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/machine"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/machine/metal"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/metalclient"
	"github.com/metal-firewall/gardener-extension-firewall/test/framework"
	"github.com/metal-firewall/gardener-extension-firewall/test/lab"
	"github.com/metal-firewall/gardener-extension-firewall/test/metalapi"
)

const (
	// labProject is the metal project of the demo's firewall in the lab.
	labProject = "demo"
	// labNodes is the node network behind the leaf's tenant VRF.
	labNodes = "10.10.0.0/16"
)

// labSite runs the machine in the lab: the metal provider allocates it in
// the in-process metal-api, whose hardware installs and boots exactly that
// allocation's userdata on metal-stack's firewall image (with the agent
// from the image recipe) behind the lab's leaf. The node is behind the
// leaf's tenant VRF, this host is the internet.
type labSite struct {
	dir       string
	lab       *lab.Lab
	hardware  *lab.Hardware
	server    *metalapi.Server
	provider  *framework.CountingProvider
	share     string
	machineID string
	listeners []net.Listener
	kept      int
	probes    *lab.Probes
}

func (s *labSite) title() string {
	return "the lab: metal-stack's firewall machine, booted by systemd from its userdata in a virtual machine that is its BGP/EVPN leaf"
}

func (s *labSite) address() string { return lab.HostAddress.String() }

func (s *labSite) start(ctx context.Context, d *demo) (machine.Provider, error) {
	s.share = filepath.Join(d.run.dir(), "lab")
	if err := os.MkdirAll(s.share, 0o755); err != nil {
		return nil, err
	}
	d.n.say("Booting the lab from %s (a virtual machine under software emulation: about a minute)", s.dir)
	var err error
	s.lab, err = lab.Start(ctx, lab.Options{
		Dir: s.dir, Share: s.share, TenantVRF: metalapi.PrivateVRF(0), InternetVRF: metalapi.InternetVRF,
		Routes: []netip.Prefix{netip.MustParsePrefix("100.64.0.0/16")},
		Log:    func(f string, a ...any) { d.n.detail(fmt.Sprintf(f, a...)) },
	})
	if err != nil {
		return nil, err
	}
	recipe, err := lab.RecipeImage(lab.RecipePath, d.agentPath)
	if err != nil {
		return nil, err
	}
	s.hardware = &lab.Hardware{Lab: s.lab, Images: map[string]lab.Image{metalapi.Image: recipe, metalapi.NextImage: recipe}, FirewallRules: lab.ProbeFirewallRules()}
	opts := metalapi.Inventory(labProject)
	opts.Hardware = s.hardware
	if s.server, err = metalapi.New(opts); err != nil {
		return nil, err
	}
	p, err := metal.New(metal.Options{URL: s.server.URL, AuthType: metalclient.AuthTypeEdit, Key: metalclient.StaticKey(metalapi.EditKey)})
	if err != nil {
		return nil, err
	}
	s.provider = &framework.CountingProvider{Provider: p}
	d.n.say("The lab is up: a leaf with the shoot's tenant VRF (a node %s behind it) and the internet VRF (this host, %s); firewalls are allocated in an in-process metal-api (%s) and booted from metal-stack's firewall image with the agent from %s",
		lab.NodeAddress, lab.HostAddress, s.server.URL, lab.RecipePath)
	return s.provider, nil
}

// providerConfig is the firewall providerConfig for the lab's metal-api.
func (s *labSite) providerConfig() string {
	return fmt.Sprintf(`{"size":%q,"image":%q,"partition":"partition-a","project":%q,"networks":[%q,%q],"internalPrefixes":[%q]}`,
		metalapi.Size, metalapi.Image, labProject, metalapi.PrivateNetwork(labProject), metalapi.Internet, labNodes)
}

func (s *labSite) waitForMachine(ctx context.Context) (string, string, error) {
	err := framework.WaitUntil(ctx, 8*time.Minute, func(context.Context) error {
		ids := s.server.Allocated()
		if len(ids) != 1 || s.hardware.Machine(ids[0]) == nil {
			return fmt.Errorf("%d machines allocated", len(ids))
		}
		if _, err := s.hardware.Machine(ids[0]).Exec(ctx, "systemctl is-active firewall-agent.service"); err != nil {
			return fmt.Errorf("machine %s has not booted its agent yet", ids[0])
		}
		s.machineID = ids[0]
		return nil
	})
	if err != nil {
		return "", "", err
	}
	m := s.hardware.Machine(s.machineID)
	vrf, err := m.Exec(ctx, "ip vrf identify $(systemctl show -p MainPID --value firewall-agent.service)")
	if err != nil {
		return "", "", err
	}
	return s.machineID, fmt.Sprintf("allocated in the metal-api, installed from its allocation as metal-stack's installer does (Ignition 2.4.0 run by flatcar's ignition), booted by systemd in container %s on leaf port %s; firewall-agent runs in VRF %s",
		m.Name, m.Port(), strings.TrimSpace(vrf)), nil
}

func (s *labSite) reach(context.Context, string) (string, error) { return "", nil }

func (s *labSite) wire(ctx context.Context) (string, error) {
	for _, port := range []string{outsidePort, otherOutsidePort} {
		l, err := net.Listen("tcp", net.JoinHostPort(s.outside(), port))
		if err != nil {
			return "", err
		}
		s.listeners = append(s.listeners, l)
		go framework.EchoServe(l)
	}
	var err error
	if s.probes, err = s.lab.StartProbes(ctx); err != nil {
		return "", err
	}
	script := fmt.Sprintf("setsid ip netns exec node /lab/share/labprobe echo %s -  >/dev/null 2>&1 </dev/null &\nsetsid ip netns exec node /lab/share/labprobe echo %s -  >/dev/null 2>&1 </dev/null &\n",
		net.JoinHostPort(s.node(), nodePort), net.JoinHostPort(s.nodeFromOutside(), nodePort))
	if _, err := s.lab.Run(ctx, script); err != nil {
		return "", err
	}
	return fmt.Sprintf("the node %s behind the leaf's tenant VRF, with a load balancer address %s it announces there; this host %s behind the internet VRF", s.node(), s.nodeFromOutside(), s.outside()), nil
}

// closedWhileBooting says what the probes saw while the machine booted:
// every 20 ms the node and this host sent UDP probes through the firewall
// that the image's own rules let through and no policy of the agent does.
func (s *labSite) closedWhileBooting() (string, error) {
	if err := s.probes.Forbidden(); err != nil {
		return "", err
	}
	return fmt.Sprintf("UDP probes every %s between the node and this host that the image's own rules let through and no rule of the agent does: none forwarded, ever since the machine booted (the image's nftables.service loads the agent's closed table with its own rules; networkd and FRR wait for the agent's boot step)", lab.ProbeInterval), nil
}

func (s *labSite) nodes() string           { return labNodes }
func (s *labSite) outside() string         { return lab.HostAddress.String() }
func (s *labSite) node() string            { return lab.NodeAddress.String() }
func (s *labSite) nodeFromOutside() string { return lab.LoadBalancerAddress.String() }

func (s *labSite) fromNode(ctx context.Context, addr string, timeout time.Duration) error {
	out, err := s.lab.Run(ctx, fmt.Sprintf("ip netns exec node /lab/share/labprobe dial %s %s", addr, timeout))
	if err != nil {
		return err
	}
	switch out = strings.TrimSpace(out); out {
	case "connected":
		return nil
	case "dropped":
		return errDropped
	default:
		return fmt.Errorf("from the node to %s: %s", addr, out)
	}
}

func (s *labSite) fromOutside(_ context.Context, timeout time.Duration) error {
	return dialResult(net.DialTimeout("tcp", net.JoinHostPort(s.nodeFromOutside(), nodePort), timeout))
}

// keep runs a client in the node that keeps one connection to addr and
// echoes through it every second.
func (s *labSite) keep(ctx context.Context, addr string) (keptConn, error) {
	s.kept++
	file := fmt.Sprintf("kept-%d", s.kept)
	if _, err := s.lab.Run(ctx, fmt.Sprintf("setsid ip netns exec node /lab/share/labprobe keep %s /lab/share/%s >/dev/null 2>&1 </dev/null &", addr, file)); err != nil {
		return nil, err
	}
	k := &labKept{path: filepath.Join(s.share, file)}
	return k, k.Echo("opened")
}

// labKept is the node's kept connection: the client keeps "<echoes>
// <error>" in a file of the share.
type labKept struct{ path string }

func (k *labKept) status() (int, string) {
	data, err := os.ReadFile(k.path)
	if err != nil {
		return -1, ""
	}
	n, rest, _ := strings.Cut(strings.TrimSpace(string(data)), " ")
	count, _ := strconv.Atoi(n)
	return count, rest
}

// Echo waits for two more echoes through the connection.
func (k *labKept) Echo(string) error {
	start, _ := k.status()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		n, failed := k.status()
		if failed != "" {
			return fmt.Errorf("the node's kept connection broke after %d echoes: %s", n, failed)
		}
		if n >= start+2 {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("the node's kept connection carried nothing for 30 s")
}

func (k *labKept) Close() error { return nil }

func (s *labSite) machine() *lab.Machine { return s.hardware.Machine(s.machineID) }

func (s *labSite) agentTable(ctx context.Context) (string, error) {
	return s.machine().Exec(ctx, "nft list table "+agentTable)
}

func (s *labSite) readFile(ctx context.Context, path string) ([]byte, os.FileMode, error) {
	out, err := s.machine().Exec(ctx, fmt.Sprintf("if [ -e %[1]s ]; then stat -c %%a %[1]s; base64 -w0 %[1]s; else echo missing; fi", path))
	if err != nil {
		return nil, 0, err
	}
	mode, content, _ := strings.Cut(out, "\n")
	if strings.TrimSpace(mode) == "missing" {
		return nil, 0, fmt.Errorf("%s on the machine: %w", path, os.ErrNotExist)
	}
	perm, err := strconv.ParseUint(strings.TrimSpace(mode), 8, 32)
	if err != nil {
		return nil, 0, err
	}
	data, err := base64.StdEncoding.DecodeString(strings.TrimSpace(content))
	return data, os.FileMode(perm), err
}

// bootKubeconfig is read from the allocation's userdata in the metal-api:
// the machine's agent may have used it before the demo looks at the machine.
func (s *labSite) bootKubeconfig(context.Context) ([]byte, error) {
	fw := s.server.Firewall(s.machineID)
	if fw == nil || fw.Allocation == nil {
		return nil, fmt.Errorf("machine %s has no allocation", s.machineID)
	}
	userdata, err := base64.StdEncoding.DecodeString(fw.Allocation.UserData)
	if err != nil {
		return nil, err
	}
	files, err := metalapi.IgnitionFiles(userdata)
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		if f.Path == bootKubeconfigPath {
			return f.Content, nil
		}
	}
	return nil, fmt.Errorf("the userdata of machine %s holds no %s", s.machineID, bootKubeconfigPath)
}

func (s *labSite) agentStartsAlone() bool { return true }

func (s *labSite) oneMachine() (string, error) {
	if created, allocated := s.provider.Created(), s.server.Allocations(); created != 1 || allocated != 1 || len(s.server.Allocated()) != 1 {
		return "", fmt.Errorf("machines: %d created, %d allocations, %d allocated now; want one", created, allocated, len(s.server.Allocated()))
	}
	return fmt.Sprintf("the provider created 1 machine in total, the metal-api saw 1 allocation, machine %s", s.machineID), nil
}

func (s *labSite) released(ctx context.Context) (string, error) {
	if s.machineID == "" {
		return "", nil
	}
	if err := framework.WaitUntil(ctx, 2*time.Minute, func(context.Context) error {
		if n := len(s.server.Allocated()); n != 0 {
			return fmt.Errorf("%d machines still allocated", n)
		}
		return nil
	}); err != nil {
		return "", err
	}
	return fmt.Sprintf("; the extension freed machine %s in the metal-api, and the lab halted it", s.machineID), nil
}

func (s *labSite) agentLog(ctx context.Context) string {
	if s.machineID == "" || s.machine() == nil {
		return ""
	}
	out, _ := s.machine().Exec(ctx, "journalctl --no-pager -u firewall-agent -u firewall-agent-boot | tail -30")
	return out
}

func (s *labSite) close() {
	for _, l := range s.listeners {
		_ = l.Close()
	}
	if s.server != nil {
		s.server.Close()
	}
	if s.lab != nil {
		s.lab.Close()
	}
}
