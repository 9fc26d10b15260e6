package lab

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/metal-firewall/gardener-extension-firewall/test/metalimage"
)

// Machine is a firewall machine in the lab: a systemd-nspawn container with
// systemd as PID 1, its network namespace connected to the leaf by lan0
// (swp<port> on the leaf), its root an overlay on the image.
type Machine struct {
	lab  *Lab
	Name string
	port int
}

// root is the machine's root in the lab machine, state its folder.
func (m *Machine) state() string { return "/var/lib/lab/machines/" + m.Name }
func (m *Machine) root() string  { return m.state() + "/root" }
func (m *Machine) unit() string  { return "lab-" + m.Name + ".service" }
func (m *Machine) netns() string { return "fw-" + m.Name }

// Port is the leaf port the machine is connected to.
func (m *Machine) Port() string { return "swp" + strconv.Itoa(m.port) }

// Image says what the firewall image brings besides metal-stack's own.
type Image struct {
	// Files are put into the image before the installer runs, e.g. the agent
	// binary of the image recipe (docs: the firewall image recipe).
	Files map[string]File
}

// File is a file of the image, from this host.
type File struct {
	Source string
	Mode   os.FileMode
}

// Install prepares a new machine's root as metal-stack's installer does:
// the image (with the recipe's files), the installer's files, then the
// userdata through flatcar/ignition's `ignition -oem file -stage files` (in
// the root, reading /config.ign, with the leaf's internet VRF for what it
// downloads; its config cache, /run/ignition.json by default, is the
// machine's own, as on a freshly booted installer: a cache left by another
// machine's install would be read instead of /config.ign) and `systemctl
// preset-all`, then the installer's units, which it enables. It does not
// boot it. Ignition's failure is the installer's:
// logged, and the machine is installed anyway.
func (l *Lab) Install(ctx context.Context, name string, img Image, in *metalimage.Installation) (*Machine, error) {
	port, err := l.takePort()
	if err != nil {
		return nil, err
	}
	m := &Machine{lab: l, Name: name, port: port}
	share := filepath.Join(l.opts.Share, "machines", name)
	for dir, files := range map[string]map[string]string{"before": in.Before, "after": in.After} {
		for p, content := range files {
			if err := writeFile(filepath.Join(share, dir, p), []byte(content), 0o644); err != nil {
				return nil, err
			}
		}
	}
	for p, f := range img.Files {
		data, err := os.ReadFile(f.Source)
		if err != nil {
			return nil, err
		}
		if err := writeFile(filepath.Join(share, "image", p), data, f.Mode); err != nil {
			return nil, err
		}
	}
	if err := writeFile(filepath.Join(share, "before", metalimage.UserdataPath), in.Userdata, 0o600); err != nil {
		return nil, err
	}
	ign, err := os.ReadFile(filepath.Join(l.opts.Dir, "ignition"))
	if err != nil {
		return nil, err
	}
	if err := writeFile(filepath.Join(share, "ignition"), ign, 0o755); err != nil {
		return nil, err
	}
	s := fmt.Sprintf(`set -eu
B=%[1]s
S=/lab/share/machines/%[2]s
mkdir -p $B/upper $B/work $B/root
mount -t overlay overlay -o lowerdir=/lab/image,upperdir=$B/upper,workdir=$B/work $B/root
if [ -d $S/image ]; then cp -a $S/image/. $B/root/; fi
cp -a $S/before/. $B/root/
mv $B/root%[3]s $B/root%[4]s
cd $B/root
if ! ip vrf exec vrf%[5]d $S/ignition -root $B/root -oem file -stage files -config-cache $B/ignition.json -log-to-stdout >$B/ignition.log 2>&1; then
  echo "ignition failed, continuing anyway, as the installer does" >>$B/ignition.log
fi
systemctl --root=$B/root preset-all >/dev/null 2>&1
cp -a $S/after/. $B/root/
systemctl --root=$B/root enable %[6]s >/dev/null 2>&1
`, m.state(), name, metalimage.UserdataPath, metalimage.IgnitionConfigPath, l.opts.InternetVRF, strings.Join(in.Enable, " "))
	if _, err := l.Run(ctx, s); err != nil {
		return nil, fmt.Errorf("installing machine %s: %w", name, err)
	}
	return m, nil
}

// IgnitionLog is what ignition said when it ran the userdata.
func (m *Machine) IgnitionLog(ctx context.Context) (string, error) {
	return m.lab.Run(ctx, "cat "+m.state()+"/ignition.log")
}

// Boot starts the machine: its lan0 to the leaf (once), then the container,
// in a unit of its own that a reboot of the container restarts (nspawn
// exits 133 when the container reboots). A leaf port of a deleted machine
// whose namespace the kernel has not torn down yet is not this machine's:
// it goes, and the pair is made anew.
func (m *Machine) Boot(ctx context.Context) error {
	s := fmt.Sprintf(`set -eu
ip netns add %[1]s 2>/dev/null || true
if ! ip -n %[1]s link show lan0 >/dev/null 2>&1; then
  ip link del %[2]s 2>/dev/null || true
  ip link add %[2]s type veth peer name lan0 netns %[1]s
  ip link set %[2]s mtu 9216 up
  ip -n %[1]s link set lan0 mtu 9216
fi
systemd-run --quiet --unit=%[3]s -p RestartForceExitStatus=133 -p SuccessExitStatus=133 -p Delegate=yes \
  systemd-nspawn --quiet -b -D %[4]s --register=no --keep-unit --network-namespace-path=/run/netns/%[1]s \
  --capability=CAP_NET_ADMIN,CAP_BPF,CAP_SYS_ADMIN --system-call-filter=bpf -M %[5]s
`, m.netns(), m.Port(), m.unit(), m.root(), m.Name)
	_, err := m.lab.Run(ctx, s)
	return err
}

// pid1 is the script fragment that finds the container's PID 1.
func (m *Machine) pid1() string {
	return fmt.Sprintf(`N=$(systemctl show -p MainPID --value %s); P=$(pgrep -P "$N" | head -1); [ -n "$P" ] || { echo "machine %s is not running" >&2; exit 3; }`, m.unit(), m.Name)
}

// Exec runs a shell command in the machine (all its namespaces).
func (m *Machine) Exec(ctx context.Context, cmd string) (string, error) {
	return m.lab.Run(ctx, m.pid1()+"\nexec nsenter -t \"$P\" -a -- /bin/sh -c "+shellQuote(cmd))
}

// WaitBooted waits until systemd in the machine finished booting and
// returns its state (running, degraded).
func (m *Machine) WaitBooted(ctx context.Context) (string, error) {
	for {
		out, err := m.Exec(ctx, "systemctl is-system-running --wait || true")
		state := strings.TrimSpace(out)
		// offline: systemd is not yet listening (the container is early in
		// its boot); starting and initializing: it is booting.
		if err == nil && state != "" && state != "starting" && state != "initializing" && state != "offline" {
			return state, nil
		}
		select {
		case <-ctx.Done():
			return state, fmt.Errorf("machine %s did not finish booting: %w%s", m.Name, ctx.Err(), m.bootDiagnosis())
		case <-time.After(time.Second):
		}
	}
}

// bootDiagnosis is what a machine that does not finish booting is waiting
// for: systemd's jobs and the end of its journal, bounded.
func (m *Machine) bootDiagnosis() string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := m.Exec(ctx, "systemctl list-jobs --no-pager 2>&1 | head -15; systemctl --failed --no-legend --no-pager 2>&1 | head -5; journalctl -b --no-pager 2>&1 | tail -25")
	if err != nil {
		return fmt.Sprintf(" (its state could not be read: %v)", err)
	}
	if len(out) > 4096 {
		out = out[len(out)-4096:]
	}
	return "; its jobs, failed units and journal:\n" + out
}

// Reboot reboots the machine from inside, as `systemctl reboot` does, and
// returns once its new systemd runs (not once it booted: WaitBooted).
func (m *Machine) Reboot(ctx context.Context) error {
	before, err := m.initPID(ctx)
	if err != nil {
		return err
	}
	if _, err := m.lab.Run(ctx, m.pid1()+"\nnsenter -t \"$P\" -a -- systemctl reboot --no-block"); err != nil {
		return err
	}
	for {
		if pid, err := m.initPID(ctx); err == nil && pid != before {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("machine %s did not come back from its reboot: %w", m.Name, ctx.Err())
		case <-time.After(time.Second):
		}
	}
}

// initPID is the lab machine's PID of the machine's systemd: a reboot
// changes it.
func (m *Machine) initPID(ctx context.Context) (string, error) {
	out, err := m.lab.Run(ctx, m.pid1()+"\necho \"$P\"")
	return strings.TrimSpace(out), err
}

// Delete stops the machine and removes it with its leaf port and network
// namespace. The port goes first and at once: the kernel tears a namespace
// down in the background, and a port left to that would still be there
// when the next machine takes its number.
func (m *Machine) Delete(ctx context.Context) error {
	s := fmt.Sprintf(`systemctl stop %[1]s 2>/dev/null || true
systemctl reset-failed %[1]s 2>/dev/null || true
umount %[2]s 2>/dev/null || true
rm -rf %[3]s
ip link del %[5]s 2>/dev/null || true
ip netns del %[4]s 2>/dev/null || true
`, m.unit(), m.root(), m.state(), m.netns(), m.Port())
	if _, err := m.lab.Run(ctx, s); err != nil {
		return err
	}
	m.lab.freePort(m.port)
	return nil
}

// takePort hands out a free firewall port of the leaf.
func (l *Lab) takePort() (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for p := 1; p <= MaxFirewalls; p++ {
		if !l.ports[p] {
			if l.ports == nil {
				l.ports = map[int]bool{}
			}
			l.ports[p] = true
			return p, nil
		}
	}
	return 0, fmt.Errorf("all %d firewall ports of the leaf are taken", MaxFirewalls)
}

func (l *Lab) freePort(p int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.ports, p)
}

func writeFile(path string, data []byte, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(path, data, mode); err != nil {
		return err
	}
	return os.Chmod(path, mode)
}

// shellQuote quotes s for /bin/sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
