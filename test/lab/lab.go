// Package lab runs firewall machines as metal-stack builds them, from
// metal-stack's own parts: a virtual machine (qemu, software emulation) boots
// a Debian 13 image from Debian's packages (hack/build-lab.sh) and is the
// leaf switch: FRR with the tenant and the internet VRF, EVPN to its
// firewalls, a node behind the tenant VRF, and this host behind the internet
// VRF (a tap device), where the tests' control planes and metal-api listen.
// Each firewall is a systemd-nspawn container in it, booted with systemd as
// PID 1 from the same image after the installer's work was done on its root
// as metal-stack's os-installer does it (test/metalimage), the userdata run
// through flatcar/ignition v0.36.2's own binary.
//
// A virtual machine because this host's kernel has no VRFs (CONFIG_NET_VRF)
// and its KVM runs no guests; the lab machine's Debian kernel has both VRFs
// and nftables, so the firewall's kernel side is the real one.
package lab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Addresses of the lab's world, seen from this host.
var (
	// HostAddress is this host on the lab's uplink: the internet, where
	// control planes and the metal-api listen for the firewalls.
	HostAddress = netip.MustParseAddr("198.51.100.1")
	// uplinkAddress is the leaf's end of the uplink, in its internet VRF.
	uplinkAddress = netip.MustParseAddr("198.51.100.2")
	// NodeAddress is the shoot's node behind the leaf's tenant VRF.
	NodeAddress = netip.MustParseAddr("10.10.200.10")
	// LoadBalancerAddress is an address of the internet network on the
	// node, announced into the tenant VRF as a shoot's load balancer
	// (metallb) announces a LoadBalancer Service's IP: what the internet
	// reaches the shoot at, through the firewall.
	LoadBalancerAddress = netip.MustParseAddr("100.64.200.10")
	// nodeGateway is the leaf's address in the node's subnet.
	nodeGateway = netip.MustParseAddr("10.10.200.1")
)

// lockPath is the host's lab lock; uplinkTap the uplink's tap device.
const (
	lockPath  = "/run/gardener-extension-firewall-lab.lock"
	uplinkTap = "fwlab0"
)

// Options say what the lab machine runs.
type Options struct {
	// Dir is the lab folder hack/build-lab.sh prints: the image, its
	// kernel and the ignition binary.
	Dir string
	// TenantVRF and InternetVRF are the VRFs of the shoot's private network
	// and of the internet, as the metal-api's networks have them.
	TenantVRF, InternetVRF int64
	// Routes are prefixes this host sends to the lab (the internet's
	// addresses of firewalls, the node network).
	Routes []netip.Prefix
	// Share is a folder of this host the lab machine sees at /lab/share.
	Share string
	// Log receives the lab machine's console and progress lines.
	Log func(format string, args ...any)
}

// Lab is a running lab machine.
type Lab struct {
	opts Options
	tap  string
	qemu *exec.Cmd
	done chan error
	mu   sync.Mutex
	sock string
	lock *os.File
	// ports are the leaf's firewall ports in use (mu).
	ports map[int]bool
}

// Dir returns the lab folder of LAB_DIR, or what is missing. Suites skip
// without root (roottest.SkipReason) and fail, as root, on what is missing.
func Dir() (string, error) {
	dir := os.Getenv("LAB_DIR")
	if dir == "" {
		return "", errors.New("LAB_DIR is not set: run the lab through make (make test, make demo), which builds it with hack/build-lab.sh")
	}
	for _, f := range []string{"vmlinuz", "initrd.img", "root.img", "ignition"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			return "", fmt.Errorf("LAB_DIR %s: %w (rebuild it with hack/build-lab.sh)", dir, err)
		}
	}
	return dir, nil
}

// Start boots the lab machine and makes it the leaf. One lab runs on a host
// at a time (its addresses are fixed): Start waits for another to end.
func Start(ctx context.Context, opts Options) (_ *Lab, err error) {
	if opts.Log == nil {
		opts.Log = func(string, ...any) {}
	}
	l := &Lab{opts: opts, tap: uplinkTap, done: make(chan error, 1)}
	if l.lock, err = lockHost(ctx); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			l.Close()
		}
	}()
	if err := l.uplink(); err != nil {
		return nil, err
	}
	if err := l.boot(ctx); err != nil {
		return nil, err
	}
	start := time.Now()
	if err := l.leaf(ctx); err != nil {
		return nil, err
	}
	opts.Log("lab: the leaf is up (%s)", time.Since(start).Round(time.Second))
	return l, nil
}

// lockHost takes the host's lab lock, waiting for another lab to end.
func lockHost(ctx context.Context) (*os.File, error) {
	f, err := os.OpenFile(lockPath, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	for {
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err == nil {
			return f, nil
		}
		select {
		case <-ctx.Done():
			_ = f.Close()
			return nil, fmt.Errorf("waiting for another lab on this host to end: %w", ctx.Err())
		case <-time.After(time.Second):
		}
	}
}

// uplink makes the tap device that connects this host with the leaf's
// internet VRF, and the routes to the lab. A tap of that name is left over
// from a lab that was killed (this one holds the lock): it goes first.
func (l *Lab) uplink() error {
	_ = run("ip", "link", "del", l.tap)
	if err := run("ip", "tuntap", "add", l.tap, "mode", "tap"); err != nil {
		return err
	}
	if err := run("ip", "addr", "add", HostAddress.String()+"/30", "dev", l.tap); err != nil {
		return err
	}
	if err := run("ip", "link", "set", l.tap, "up"); err != nil {
		return err
	}
	for _, p := range l.opts.Routes {
		if err := run("ip", "route", "replace", p.String(), "via", uplinkAddress.String(), "dev", l.tap); err != nil {
			return err
		}
	}
	return nil
}

// boot starts qemu and waits for the guest agent. The root disk is the image
// with its writes in a temporary overlay (snapshot): every lab starts from
// the image as built. The image is attached a second time, read-only, as the
// firewalls' lower layer.
func (l *Lab) boot(ctx context.Context) error {
	dir := l.opts.Dir
	sock := filepath.Join(l.opts.Share, ".qga.sock")
	console, err := os.Create(filepath.Join(l.opts.Share, "console.log"))
	if err != nil {
		return err
	}
	l.qemu = exec.Command("qemu-system-x86_64",
		"-accel", "tcg,thread=multi", "-cpu", "max", "-m", "3072", "-smp", "2",
		"-display", "none", "-no-reboot", "-serial", "file:"+console.Name(),
		"-kernel", filepath.Join(dir, "vmlinuz"), "-initrd", filepath.Join(dir, "initrd.img"),
		"-append", "root=/dev/vda rw console=ttyS0 panic=-1 quiet net.ifnames=0 mitigations=off",
		"-drive", "file="+filepath.Join(dir, "root.img")+",if=virtio,format=raw,snapshot=on",
		"-drive", "file="+filepath.Join(dir, "root.img")+",if=virtio,format=raw,readonly=on",
		"-netdev", "tap,id=up,ifname="+l.tap+",script=no,downscript=no", "-device", "virtio-net-pci,netdev=up",
		"-chardev", "socket,path="+sock+",server=on,wait=off,id=qga0",
		"-device", "virtio-serial", "-device", "virtserialport,chardev=qga0,name=org.qemu.guest_agent.0",
		"-virtfs", "local,path="+l.opts.Share+",mount_tag=lab,security_model=none,id=lab",
	)
	l.qemu.Stdout, l.qemu.Stderr = console, console
	// Its own process group: a test's interrupt reaches qemu through Close.
	l.qemu.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := l.qemu.Start(); err != nil {
		_ = console.Close()
		return fmt.Errorf("starting the lab machine: %w", err)
	}
	go func() { l.done <- l.qemu.Wait(); _ = console.Close() }()
	start := time.Now()
	for {
		if err := l.connect(ctx, sock); err == nil {
			break
		}
		select {
		case err := <-l.done:
			l.done <- err
			return fmt.Errorf("the lab machine stopped while booting (%w); its console is %s", err, console.Name())
		case <-ctx.Done():
			return fmt.Errorf("the lab machine did not boot: %w; its console is %s", ctx.Err(), console.Name())
		case <-time.After(time.Second):
		}
	}
	l.opts.Log("lab: the lab machine booted (%s)", time.Since(start).Round(time.Second))
	return nil
}

// connect dials the guest agent and waits until it answers.
func (l *Lab) connect(ctx context.Context, sock string) error {
	a, err := dialGuestAgent(sock)
	if err != nil {
		return err
	}
	defer func() { _ = a.close() }()
	sctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := a.sync(sctx); err != nil {
		return err
	}
	l.sock = sock
	return nil
}

// Run runs a shell script in the lab machine (as root, in its own network
// namespace: the leaf's) and returns its output; a non-zero exit is an error
// that holds the output. Each call connects to the guest agent anew: it
// serves one client at a time, and a person may want to look in between.
func (l *Lab) Run(ctx context.Context, script string) (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	a, err := dialGuestAgent(l.sock)
	if err != nil {
		return "", fmt.Errorf("the lab machine's guest agent: %w", err)
	}
	defer func() { _ = a.close() }()
	if err := a.sync(ctx); err != nil {
		return "", fmt.Errorf("the lab machine's guest agent: %w", err)
	}
	res, err := a.exec(ctx, script)
	if err != nil {
		return "", err
	}
	if res.ExitCode != 0 {
		return res.Stdout, fmt.Errorf("in the lab machine, exit %d: %s%s", res.ExitCode, lastLines(res.Stdout, 20), lastLines(res.Stderr, 20))
	}
	return res.Stdout, nil
}

// GuestAgentSocket is where the lab machine's guest agent listens, for a
// person to look into a held lab.
func (l *Lab) GuestAgentSocket() string { return l.sock }

// Close stops the lab machine and removes the uplink: the lab leaves nothing
// on this host. Stopping is a kill: the machine's disk is a snapshot.
func (l *Lab) Close() {
	if l.qemu != nil && l.qemu.Process != nil {
		_ = syscall.Kill(-l.qemu.Process.Pid, syscall.SIGKILL)
		select {
		case <-l.done:
		case <-time.After(10 * time.Second):
		}
	}
	for _, p := range l.opts.Routes {
		_ = run("ip", "route", "del", p.String())
	}
	_ = run("ip", "link", "del", l.tap)
	if l.lock != nil {
		_ = l.lock.Close()
	}
}

// RemoveLeftovers removes what a lab that was killed left on this host
// (its uplink tap with its routes), unless a lab runs now; it says what it
// removed.
func RemoveLeftovers() (string, error) {
	f, err := os.OpenFile(lockPath, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return "", nil // a lab runs
	}
	if _, err := net.InterfaceByName(uplinkTap); err != nil {
		return "", nil
	}
	if err := run("ip", "link", "del", uplinkTap); err != nil {
		return "", err
	}
	return "tap " + uplinkTap + " and its routes", nil
}

func run(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// lastLines returns at most n lines of the end of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n") + "\n"
}
