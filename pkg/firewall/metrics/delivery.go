package metrics

import "github.com/prometheus/client_golang/prometheus"

// Results of a look at a bootstrap kubeconfig delivered through the shoot,
// as the result label names them.
const (
	DeliveryTaken   = "taken"
	DeliveryRefused = "refused"
	DeliveryFailed  = "failed"
)

// newDeliveries registers the count of deliveries looked at: an alert on
// result="refused" tells of a box the seed did not write (or a replayed one).
func newDeliveries(r *prometheus.Registry) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "firewall_agent_deliveries_total",
		Help: "Bootstrap kubeconfigs delivered through the shoot that the agent looked at, by result: taken, refused (not signed with the pinned delivery key, another firewall's, replayed, expired, not sealed to this agent), failed (its seed did not give a certificate).",
	}, []string{"result"})
	r.MustRegister(c)
	for _, res := range []string{DeliveryTaken, DeliveryRefused, DeliveryFailed} {
		c.WithLabelValues(res)
	}
	return c
}

// ObserveDelivery counts a delivery looked at.
func (m *Metrics) ObserveDelivery(result string) {
	if m == nil {
		return
	}
	m.deliveries.WithLabelValues(result).Inc()
}
