package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// dnsMetrics are the DNS proxy's metrics.
type dnsMetrics struct {
	queries          *prometheus.CounterVec
	upstreamDuration prometheus.Histogram
	upstreamErrors   prometheus.Counter
	updates          *prometheus.CounterVec
	updateElements   prometheus.Counter
	updateDuration   prometheus.Histogram
	bounds           *prometheus.CounterVec
	selectors        prometheus.Gauge
	addresses        prometheus.Gauge
}

func newDNSMetrics(r *prometheus.Registry) *dnsMetrics {
	latency := []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2}
	d := &dnsMetrics{
		queries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "firewall_agent_dns_queries_total",
			Help: "Queries the DNS proxy served, by transport (udp, tcp) and result (answered, servfail: no resolver answered, refused: not a standard query).",
		}, []string{"transport", "result"}),
		upstreamDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "firewall_agent_dns_upstream_duration_seconds",
			Help:    "Time the resolvers took to answer the DNS proxy, per exchange.",
			Buckets: latency,
		}),
		upstreamErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "firewall_agent_dns_upstream_errors_total",
			Help: "Exchanges in which no resolver gave a response that answers the query.",
		}),
		updates: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "firewall_agent_fqdn_set_updates_total",
			Help: "Transactions that added an answer's addresses to the FQDN sets, by result (ok, error: the answer was released, connections to its addresses are dropped).",
		}, []string{"result"}),
		updateElements: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "firewall_agent_fqdn_set_elements_written_total",
			Help: "Addresses added to or refreshed in the FQDN sets.",
		}),
		updateDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "firewall_agent_fqdn_set_update_duration_seconds",
			Help:    "Time to add an answer's addresses to the FQDN sets, which the answer waits for.",
			Buckets: latency,
		}),
		bounds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "firewall_agent_fqdn_bound_hits_total",
			Help: "Answers whose addresses were left out, in part, because a bound was reached (maxAddressesPerName, maxNamesPerSelector, maxAddresses).",
		}, []string{"bound"}),
		selectors: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "firewall_agent_fqdn_selectors",
			Help: "FQDN selectors the DNS proxy enforces.",
		}),
		addresses: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "firewall_agent_fqdn_addresses",
			Help: "Addresses allowed for all FQDN selectors together (an address of two selectors counts twice).",
		}),
	}
	r.MustRegister(d.queries, d.upstreamDuration, d.upstreamErrors, d.updates, d.updateElements, d.updateDuration, d.bounds, d.selectors, d.addresses)
	for _, b := range []string{"maxAddressesPerName", "maxNamesPerSelector", "maxAddresses"} {
		d.bounds.WithLabelValues(b)
	}
	for _, r := range []string{"ok", "error"} {
		d.updates.WithLabelValues(r)
	}
	return d
}

// ObserveDNSQuery records a query the DNS proxy served.
func (m *Metrics) ObserveDNSQuery(transport, result string) {
	if m == nil {
		return
	}
	m.dns.queries.WithLabelValues(transport, result).Inc()
}

// ObserveDNSUpstream records an exchange with the resolvers.
func (m *Metrics) ObserveDNSUpstream(d time.Duration, err error) {
	if m == nil {
		return
	}
	if err != nil {
		m.dns.upstreamErrors.Inc()
		return
	}
	m.dns.upstreamDuration.Observe(d.Seconds())
}

// ObserveFQDNUpdate records a transaction of n addresses into the FQDN sets.
func (m *Metrics) ObserveFQDNUpdate(n int, d time.Duration, err error) {
	if m == nil {
		return
	}
	if err != nil {
		m.dns.updates.WithLabelValues("error").Inc()
		return
	}
	m.dns.updates.WithLabelValues("ok").Inc()
	m.dns.updateElements.Add(float64(n))
	m.dns.updateDuration.Observe(d.Seconds())
}

// ObserveFQDNBound records an answer that hit a bound.
func (m *Metrics) ObserveFQDNBound(bound string) {
	if m == nil {
		return
	}
	m.dns.bounds.WithLabelValues(bound).Inc()
}

// ObserveFQDNAllowed records how many selectors are enforced and addresses
// allowed.
func (m *Metrics) ObserveFQDNAllowed(selectors, addresses int) {
	if m == nil {
		return
	}
	m.dns.selectors.Set(float64(selectors))
	m.dns.addresses.Set(float64(addresses))
}
