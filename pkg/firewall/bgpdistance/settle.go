package bgpdistance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Defaults of the wait after a reload (Announcer.SettleStable, SettleTimeout).
const (
	DefaultSettleStable  = 10 * time.Second
	DefaultSettleTimeout = 2 * time.Minute
	settlePoll           = 500 * time.Millisecond
)

// advertised is, per established peer of the default VRF's IPv4 unicast
// (where the firewall's VTEP address goes), how many prefixes bgpd sends it.
func (a *Announcer) advertised(ctx context.Context) (map[string]int, error) {
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	name := or(a.Vtysh, DefaultVtysh)
	cmd := exec.CommandContext(ctx, name, "-c", "show bgp ipv4 unicast summary json") //nolint:gosec // FRR's own program
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s: %w: %s", filepath.Base(name), err, bounded(stderr.Bytes()))
	}
	type peers struct {
		Peers map[string]struct {
			State  string `json:"state"`
			PfxSnt int    `json:"pfxSnt"`
		} `json:"peers"`
	}
	summary := struct {
		peers
		IPv4Unicast *peers `json:"ipv4Unicast"`
	}{}
	if err := json.Unmarshal(out.Bytes(), &summary); err != nil {
		return nil, fmt.Errorf("bgpd's summary: %w: %s", err, bounded(out.Bytes()))
	}
	p := summary.peers
	if summary.IPv4Unicast != nil {
		p = *summary.IPv4Unicast
	}
	sent := map[string]int{}
	for name, peer := range p.Peers {
		if peer.State == "Established" {
			sent[name] = peer.PfxSnt
		}
	}
	return sent, nil
}

// running reads what bgpd runs: the distance of its running configuration
// (ok false when that holds none, or vtysh fails), and whether it runs that
// one exactly as Render writes it (the delay-timer and the route-map's
// attachment to the peer group too).
func (a *Announcer) running(ctx context.Context) (distance int, complete, ok bool) {
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, or(a.Vtysh, DefaultVtysh), "-c", "show running-config") //nolint:gosec // FRR's own program
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		return 0, false, false
	}
	lines := strings.Split(out.String(), "\n")
	distance, ok = Distance(out.String())
	attach := "neighbor " + or(a.PeerGroup, DefaultPeerGroup) + " route-map " + RouteMap + " out"
	return distance, ok && hasLine(lines, delayTimer) && hasLine(lines, attach), ok
}

// bounded is a command's output as an error carries it: trimmed, at most
// maxOutput bytes.
func bounded(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > maxOutput {
		return s[:maxOutput] + "..."
	}
	return s
}

// settle waits until bgpd has sent every peer at least as many prefixes as
// before the reload, without a dip for SettleStable: FRR 8.4's
// frr-reload.py deletes and adds again an unchanged as-path access-list,
// and the firewall withdraws its routes (its VTEP address among them) for
// seconds, starting up to a route-map timer (5 s) after the reload. A
// distance counts as in force only once the routes are out with it, so
// that the manager deletes an old firewall only behind a new one that is
// announced.
func (a *Announcer) settle(ctx context.Context, before map[string]int) error {
	sending := false
	for _, n := range before {
		sending = sending || n > 0
	}
	if !sending {
		// No route out before the reload: nothing to wait for.
		return nil
	}
	stable, timeout := a.SettleStable, a.SettleTimeout
	if stable == 0 {
		stable = DefaultSettleStable
	}
	if timeout == 0 {
		timeout = DefaultSettleTimeout
	}
	deadline := time.Now().Add(timeout)
	var since time.Time
	var missing []string
	for {
		now, err := a.advertised(ctx)
		missing = missing[:0]
		if err != nil {
			// bgpd may answer nothing, or half a summary, while the reload
			// changes it: not settled yet.
			missing = append(missing, err.Error())
		}
		for peer, n := range before {
			if err == nil && n > 0 && now[peer] < n {
				missing = append(missing, fmt.Sprintf("%s (%d of %d prefixes)", peer, now[peer], n))
			}
		}
		switch {
		case len(missing) > 0:
			since = time.Time{}
		case since.IsZero():
			since = time.Now()
		case time.Since(since) >= stable:
			return nil
		}
		if time.Now().After(deadline) {
			sort.Strings(missing)
			return fmt.Errorf("bgpd did not send its routes again within %s: %s", timeout, strings.Join(missing, ", "))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(settlePoll):
		}
	}
}
