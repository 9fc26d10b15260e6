package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"

	agentconfigv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/v1alpha1"
	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/bgpdistance"
)

// distanceWorker applies distances beside the rounds, not in them: FRR's
// reload and the wait for bgpd to send its routes again take a minute or
// more on a busy machine, and the heartbeat must go on meanwhile (the
// manager counts a firewall without one for a minute as not Ready, and a
// roll then stops). Only while no distance is in force yet does a round
// wait for it.
type distanceWorker struct {
	// jobs holds the latest distance asked for; a newer one replaces it.
	jobs chan distanceJob

	mu   sync.Mutex
	done *sync.Cond
	// asked and finished count the jobs queued and those done.
	asked, finished uint64
	// err is why the last distance could not be applied.
	err error
	// noFRR tells that the machine has no FRR configuration to announce on.
	noFRR bool
}

type distanceJob struct {
	announcer *bgpdistance.Announcer
	distance  int
	seq       uint64
}

// announceDistance asks for the distance of the Firewall read this round to
// be announced, when the config has routing, and tells why the last one
// could not be: the one in force then stays. Without the Firewall (the seed
// did not answer) the distance in force stays.
func (a *Agent) announceDistance(ctx context.Context, cfg *agentconfigv1alpha1.Config, fw *fwv1alpha1.Firewall) error {
	r := cfg.Routing
	if r == nil {
		a.announcer = nil
		return nil
	}
	update := r.AnnounceBy == agentconfigv1alpha1.AnnounceByUpdate
	if a.announcer == nil || a.announcer.ConfigPath != r.FRRConfig || a.announcer.PeerGroup != r.PeerGroup ||
		a.announcer.Update != update || a.announcer.Vtysh != a.Vtysh || a.announcer.Reload != a.FRRReload {
		// Read by the worker meanwhile: a change is a new announcer.
		a.announcer = &bgpdistance.Announcer{ConfigPath: r.FRRConfig, PeerGroup: r.PeerGroup, Update: update, Vtysh: a.Vtysh, Reload: a.FRRReload}
	}
	w := a.distanceWorker(ctx)
	if fw != nil {
		w.ask(distanceJob{announcer: a.announcer, distance: int(fw.Spec.Distance)})
		if _, inForce := a.announcer.InForce(); !inForce {
			// The first one holds the round, as all did before: its reload
			// withdraws the routes for seconds, and the first heartbeat,
			// which makes the firewall Ready, must come after that.
			w.wait()
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// distanceWorker starts the worker on first use; it ends with ctx.
func (a *Agent) distanceWorker(ctx context.Context) *distanceWorker {
	if a.distance != nil {
		return a.distance
	}
	w := &distanceWorker{jobs: make(chan distanceJob, 1)}
	w.done = sync.NewCond(&w.mu)
	a.distance = w
	go w.run(ctx, a)
	return w
}

// ask queues job in place of one not yet started. Only the agent's loop asks.
func (w *distanceWorker) ask(job distanceJob) {
	w.mu.Lock()
	w.asked++
	job.seq = w.asked
	w.mu.Unlock()
	select {
	case <-w.jobs:
	default:
	}
	w.jobs <- job
}

func (w *distanceWorker) run(ctx context.Context, a *Agent) {
	for {
		var job distanceJob
		select {
		case <-ctx.Done():
			return
		case job = <-w.jobs:
		}
		before, had := job.announcer.InForce()
		err := job.announcer.Announce(ctx, job.distance)
		// A machine without FRR's configuration announces no routes: nothing
		// to announce a distance on, and the manager need not wait for one.
		noFRR := errors.Is(err, bgpdistance.ErrNoConfig)
		switch {
		case noFRR:
			err = nil
		case err != nil:
			err = fmt.Errorf("announcing distance %d: %w", job.distance, err)
			a.Log.Error("the distance in force stays", "error", err)
		default:
			if now, _ := job.announcer.InForce(); !had || now != before {
				a.Log.Info("distance announced", "distance", now)
			}
		}
		w.mu.Lock()
		w.err, w.noFRR, w.finished = err, noFRR, job.seq
		w.done.Broadcast()
		w.mu.Unlock()
	}
}

// wait returns once every distance asked for so far was tried: a round
// waits so for the first distance, and the tests for theirs.
func (w *distanceWorker) wait() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.finished < w.asked {
		w.done.Wait()
	}
}

// distanceStatus is what the agent reports of its distance: whether it
// announces one at all, and the one in force.
func (a *Agent) distanceStatus() (supported bool, inForce *int32) {
	if a.announcer == nil {
		return false, nil
	}
	if w := a.distance; w != nil {
		w.mu.Lock()
		noFRR := w.noFRR
		w.mu.Unlock()
		if noFRR {
			return false, nil
		}
	}
	if d, ok := a.announcer.InForce(); ok {
		return true, &d
	}
	return true, nil
}
