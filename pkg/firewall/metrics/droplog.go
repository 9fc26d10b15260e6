package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// DropLogMetrics count what the drop log does: events read from the
// kernel, events lost and why, batches sent. A nil *DropLogMetrics records
// nothing. Safe for concurrent use.
type DropLogMetrics struct {
	events  *prometheus.CounterVec
	lost    *prometheus.CounterVec
	batches *prometheus.CounterVec
	sent    prometheus.Counter
}

func newDropLogMetrics(r *prometheus.Registry) *DropLogMetrics {
	d := &DropLogMetrics{
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "firewall_agent_droplog_events_total",
			Help: "Logged packets read from the kernel's NFLOG group, by action (drop, accept).",
		}, []string{"action"}),
		lost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "firewall_agent_droplog_lost_events_total",
			Help: "Logged packets that did not reach the shoot, by reason: queue-full (the agent's bounded queue), kernel-overrun (the NFLOG socket's buffer), send-failed (the receiver did not take the batch).",
		}, []string{"reason"}),
		batches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "firewall_agent_droplog_batches_total",
			Help: "Batches sent to the shoot's receiver, by result (ok, error).",
		}, []string{"result"}),
		sent: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "firewall_agent_droplog_sent_events_total",
			Help: "Logged packets the shoot's receiver took.",
		}),
	}
	r.MustRegister(d.events, d.lost, d.batches, d.sent)
	for _, reason := range []string{"queue-full", "kernel-overrun", "send-failed"} {
		d.lost.WithLabelValues(reason)
	}
	for _, a := range []string{"drop", "accept"} {
		d.events.WithLabelValues(a)
	}
	return d
}

// DropLog returns the drop log's metrics; nil for a nil *Metrics.
func (m *Metrics) DropLog() *DropLogMetrics {
	if m == nil {
		return nil
	}
	return m.dropLog
}

// Event counts an event read from the kernel.
func (d *DropLogMetrics) Event(action string) {
	if d == nil {
		return
	}
	if action != "drop" && action != "accept" {
		action = "other"
	}
	d.events.WithLabelValues(action).Inc()
}

// Lost counts n events lost for a reason.
func (d *DropLogMetrics) Lost(reason string, n uint64) {
	if d == nil {
		return
	}
	d.lost.WithLabelValues(reason).Add(float64(n))
}

// Batch counts a batch of n events, sent or not.
func (d *DropLogMetrics) Batch(ok bool, n int) {
	if d == nil {
		return
	}
	if !ok {
		d.batches.WithLabelValues("error").Inc()
		return
	}
	d.batches.WithLabelValues("ok").Inc()
	d.sent.Add(float64(n))
}
