package agent

import (
	"context"
	"os"
	"time"

	agentconfigv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/droplog"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/ruleset"
)

// Batching of the drop log: a batch when this many events wait, or every
// interval.
const (
	dropLogBatchSize = 500
	dropLogInterval  = time.Second
	// dropLogRetry is how long the agent waits before it binds the NFLOG
	// group again after the socket failed.
	dropLogRetry = 5 * time.Second
)

// withDropLog sends the logged drop (and new accepted connections) to the
// config's NFLOG group; without a dropLog section, drops go to the kernel
// log as before.
func withDropLog(rs *ruleset.Ruleset, d *agentconfigv1alpha1.DropLog) *ruleset.Ruleset {
	if d == nil {
		return rs
	}
	d = d.WithDefaults()
	return ruleset.WithNFLog(rs, ruleset.NFLog{Group: d.Group, RatePerSecond: d.RatePerSecond, Accepted: d.LogAcceptedConnections})
}

// startDropLog reads the NFLOG group and sends its events to the shoot's
// receiver until ctx is done. The section is taken as it was at start.
func (a *Agent) startDropLog(ctx context.Context, cfg *agentconfigv1alpha1.Config) {
	d := cfg.DropLog.WithDefaults()
	name := cfg.Name
	if name == "" {
		name, _ = os.Hostname()
	}
	log := a.Log.With("component", "droplog")
	q := droplog.NewQueue(int(d.QueueSize))
	rec := a.Metrics.DropLog()
	shoot := &droplog.Shoot{Kubeconfig: cfg.Sources.Shoot.Kubeconfig, Namespace: cfg.Sources.Shoot.Namespace}
	endpoint := shoot.Endpoint
	if d.ReceiverURL != "" {
		endpoint = func(context.Context) (string, error) { return d.ReceiverURL, nil }
	}
	// The receiver is verified against the CA bundle the extension
	// publishes beside it, whichever address the endpoint names.
	verifier := &droplog.Verifier{Load: shoot.CABundle}
	sender := &droplog.Sender{
		Queue: q, Firewall: name, BatchSize: dropLogBatchSize, Interval: dropLogInterval,
		Endpoint: endpoint, Token: shoot.Token, Client: droplog.NewHTTPClient(verifier), Verifier: verifier, Recorder: rec, Log: log,
	}
	go sender.Run(ctx)
	go func() {
		for ctx.Err() == nil {
			r := &droplog.Reader{Group: d.Group, NetNS: a.NFLogNetNS, Queue: q, Recorder: rec, Log: log}
			if err := r.Run(ctx); err != nil {
				log.Error("cannot read the logged packets; retrying", "group", d.Group, "retry", dropLogRetry, "error", err)
			}
			select {
			case <-ctx.Done():
			case <-time.After(dropLogRetry):
			}
		}
	}()
	log.Info("sending logged packets to the shoot", "group", d.Group, "ratePerSecond", d.RatePerSecond,
		"logAcceptedConnections", d.LogAcceptedConnections, "queueSize", d.QueueSize)
}
