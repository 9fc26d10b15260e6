package bgpdistance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// Paths of FRR as Debian and metal-stack's image install it.
const (
	DefaultConfigPath = "/etc/frr/frr.conf"
	DefaultVtysh      = "/usr/bin/vtysh"
	DefaultReload     = "/usr/lib/frr/frr-reload.py"
)

// ErrNoConfig is Announce's error on a machine without FRR's configuration,
// which announces no routes: there is nothing to announce a distance on.
var ErrNoConfig = errors.New("no FRR configuration")

// commandTimeout bounds each FRR command: a hung vtysh must not hold the
// agent. frr-reload.py takes seconds on a machine, up to 40 s in the
// emulated lab.
const commandTimeout = 2 * time.Minute

// maxOutput bounds what of a failed command's output goes into an error.
const maxOutput = 512

// Announcer keeps the distance of a Firewall announced. Announce calls run
// one at a time; InForce answers at once, also while one runs.
type Announcer struct {
	// ConfigPath is FRR's configuration; DefaultConfigPath when empty.
	ConfigPath string
	// PeerGroup is the fabric's peer group; DefaultPeerGroup when empty.
	PeerGroup string
	// Update sends a new prepend as a BGP update (a soft refresh) instead
	// of a reset of the sessions to the fabric: for leaves whose FRR is
	// 10.3 or later (see Announce).
	Update bool
	// Vtysh and Reload are FRR's programs; the defaults when empty.
	Vtysh, Reload string
	// SettleStable is how long bgpd must have sent every peer its routes
	// again after a reload before the distance counts as in force, and
	// SettleTimeout how long that may take; DefaultSettleStable and
	// DefaultSettleTimeout when 0.
	SettleStable, SettleTimeout time.Duration

	// mu serializes Announce.
	mu sync.Mutex
	// state guards inForce and started.
	state sync.Mutex
	// inForce is the distance FRR runs with, -1 before the first apply.
	inForce int
	started bool
}

// InForce is the distance FRR runs with, if the announcer applied one.
func (a *Announcer) InForce() (int32, bool) {
	a.state.Lock()
	defer a.state.Unlock()
	if !a.started || a.inForce < 0 {
		return 0, false
	}
	return int32(a.inForce), true
}

// Announce makes FRR announce distance: it renders the configuration,
// checks the result with `vtysh --dryrun`, writes it in place of the old
// (atomically, keeping its owner and mode), runs FRR's reload, which
// applies the difference to the running daemons, and has bgpd send its EVPN
// routes again: by a reset of the sessions to the fabric when the prepend
// changed, else by a soft refresh (see below). On any error the old
// configuration stays on disk and in force, and the error says which step
// failed. A distance already in force costs one read of the file.
func (a *Announcer) Announce(ctx context.Context, distance int) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.state.Lock()
	if !a.started {
		a.started, a.inForce = true, -1
	}
	current := a.inForce
	a.state.Unlock()
	path := or(a.ConfigPath, DefaultConfigPath)
	old, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %s", ErrNoConfig, path)
	}
	if err != nil {
		return fmt.Errorf("reading FRR's configuration: %w", err)
	}
	want, err := Render(string(old), distance, or(a.PeerGroup, DefaultPeerGroup))
	if err != nil {
		return fmt.Errorf("FRR's configuration %s: %w", path, err)
	}
	if want == string(old) && current == distance {
		return nil
	}
	// What the fabric has: what bgpd runs, else what the file says.
	announced, complete, known := a.running(ctx)
	if want == string(old) && known && complete && announced == distance {
		// A restarted agent (a self-update, a crash) whose FRR runs the
		// file already: FRR 8.4's reload would withdraw the firewall's
		// routes for seconds even for an unchanged file (see settle).
		a.setInForce(distance)
		return nil
	}
	if !known {
		announced, known = Distance(string(old))
	}
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".firewall-agent")
	if err := writeLike(tmp, []byte(want), info); err != nil {
		return fmt.Errorf("writing FRR's new configuration: %w", err)
	}
	defer os.Remove(tmp)
	if err := a.run(ctx, or(a.Vtysh, DefaultVtysh), "--dryrun", "--inputfile", tmp); err != nil {
		return fmt.Errorf("FRR refuses the configuration with distance %d: %w", distance, err)
	}
	before, err := a.advertised(ctx)
	if err != nil {
		return fmt.Errorf("the routes bgpd sends before the reload: %w", err)
	}
	if want != string(old) {
		if err := os.Rename(tmp, path); err != nil {
			return fmt.Errorf("replacing FRR's configuration: %w", err)
		}
	}
	if err := a.run(ctx, or(a.Reload, DefaultReload), "--reload", path); err != nil {
		reloadErr := fmt.Errorf("FRR's reload with distance %d: %w", distance, err)
		// The old configuration back, on disk and, as far as FRR takes it, in force.
		if werr := writeLike(tmp, old, info); werr == nil {
			if rerr := os.Rename(tmp, path); rerr == nil {
				_ = a.run(ctx, or(a.Reload, DefaultReload), "--reload", path)
			}
		}
		a.setInForce(-1)
		return reloadErr
	}
	if changed := (known && announced != distance) || (!known && distance > 0); changed && !a.Update {
		// Leaves whose FRR predates FRRouting/frr#18158 (10.3) take an
		// EVPN prefix route's update as a withdraw and an install that race
		// in zebra: the lab's leaf (FRR 8.4) kept the routes but lost the
		// firewall's router MAC and forwarded nothing to it until a session
		// reset, for as long as the update stood (11.5 s in a roll). So a
		// new prepend never goes out as an update: the route-map
		// delay-timer 0 in the file keeps bgpd from sending it at the
		// reload, and a reset of the sessions to the fabric sends it with
		// routes the fabric installs afresh. The fabric routes around the
		// firewall for the seconds of the reset (another firewall of the
		// roll carries the traffic; a lone one is still booting).
		if err := a.sendAgain(ctx, "clear bgp l2vpn evpn *", before,
			fmt.Sprintf("resetting the fabric's sessions with distance %d", distance),
			fmt.Sprintf("distance %d after the sessions' reset", distance)); err != nil {
			a.setInForce(-1)
			return err
		}
	} else {
		// The prepend is the one announced already (a restarted agent, a
		// file an older agent wrote), or the fabric takes updates: a soft
		// refresh sends the routes, and no session is reset, which would
		// cut off a lone firewall that serves. A leaf with FRR 10.3 or later
		// moves the traffic by the update alone, without a withdraw.
		if err := a.sendAgain(ctx, "clear bgp l2vpn evpn * soft out", before,
			fmt.Sprintf("sending the routes with distance %d", distance), fmt.Sprintf("distance %d", distance)); err != nil {
			a.setInForce(-1)
			return err
		}
	}
	a.setInForce(distance)
	return nil
}

// sendAgain runs bgpd's clear command and waits until bgpd sends every peer
// its routes again (settle); the error names the step: clearing, or the
// routes that did not come back.
func (a *Announcer) sendAgain(ctx context.Context, clear string, before map[string]int, clearing, settling string) error {
	if err := a.run(ctx, or(a.Vtysh, DefaultVtysh), "-c", clear); err != nil {
		return fmt.Errorf("%s: %w", clearing, err)
	}
	if err := a.settle(ctx, before); err != nil {
		return fmt.Errorf("%s: %w", settling, err)
	}
	return nil
}

func (a *Announcer) setInForce(distance int) {
	a.state.Lock()
	defer a.state.Unlock()
	a.inForce = distance
}

func (a *Announcer) run(ctx context.Context, name string, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...) //nolint:gosec // FRR's own programs, from the agent's config
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w: %s", filepath.Base(name), err, bounded(out.Bytes()))
	}
	return nil
}

// writeLike writes data to path with the mode and owner of info.
func writeLike(path string, data []byte, info os.FileInfo) error {
	if err := os.WriteFile(path, data, info.Mode().Perm()); err != nil { //nolint:gosec // beside FRR's configuration, which the validated config names in /etc/frr
		return err
	}
	if err := os.Chmod(path, info.Mode().Perm()); err != nil {
		return err
	}
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		if err := os.Chown(path, int(st.Uid), int(st.Gid)); err != nil && !errors.Is(err, os.ErrPermission) {
			return err
		}
	}
	return nil
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// Prepare writes distance into FRR's configuration at path unless it
// announces one already, for the boot step: before FRR starts on a new
// machine, so that it comes up announcing the longest distance and
// attracts no traffic until the agent applies its Firewall's. A machine
// that rebooted keeps the distance it last had in force. It tells whether
// it wrote.
func Prepare(path, peerGroup string, distance int) (bool, error) {
	path = or(path, DefaultConfigPath)
	old, err := os.ReadFile(path)
	if err != nil {
		return false, fmt.Errorf("reading FRR's configuration: %w", err)
	}
	if _, ok := Distance(string(old)); ok {
		return false, nil
	}
	want, err := Render(string(old), distance, or(peerGroup, DefaultPeerGroup))
	if err != nil {
		return false, fmt.Errorf("FRR's configuration %s: %w", path, err)
	}
	info, err := os.Stat(path)
	if err != nil {
		return false, err
	}
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".firewall-agent")
	if err := writeLike(tmp, []byte(want), info); err != nil {
		return false, err
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return false, err
	}
	return true, nil
}
