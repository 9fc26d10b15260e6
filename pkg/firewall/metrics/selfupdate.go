package metrics

import "github.com/prometheus/client_golang/prometheus"

// newSelfUpdateState registers the self-update's state: one series, the
// current state, so that an alert can match state="Refused" or "RolledBack"
// also for an agent that reports to no seed (static source).
func newSelfUpdateState(r *prometheus.Registry) *prometheus.GaugeVec {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "firewall_agent_self_update_state",
		Help: "The self-update's state (Disabled, UpToDate, Updating, Refused, RolledBack) and the version it was asked for, as labels; always 1. Absent without controllers.firewall.selfUpdate.",
	}, []string{"state", "wanted_version"})
	r.MustRegister(g)
	return g
}

// ObserveSelfUpdate records the self-update's state and wanted version.
func (m *Metrics) ObserveSelfUpdate(state, wantedVersion string) {
	if m == nil {
		return
	}
	m.selfUpdate.Reset()
	m.selfUpdate.WithLabelValues(state, wantedVersion).Set(1)
}
