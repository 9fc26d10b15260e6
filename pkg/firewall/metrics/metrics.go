// Package metrics holds the firewall agent's Prometheus metrics: how its
// applies go, what its ruleset holds, whether its sources answer, and the
// packet and byte counters of its rules as the kernel counts them.
package metrics

import (
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/nftables"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/ruleset"
)

// Sources, as the source label names them.
const (
	SourceSeed   = "seed"
	SourceShoot  = "shoot"
	SourceStatic = "static"
	SourceMetal  = "metal"
)

// Results of an apply, as the result label names them.
const (
	ResultChanged   = "changed"
	ResultUnchanged = "unchanged"
	ResultError     = "error"
)

// CounterReader reads the packet and byte counters of the rules in a table,
// keyed by rule ID; *nftables.Programmer is one.
type CounterReader interface {
	RuleCounters(table string) (map[string]nftables.Counter, error)
}

// Metrics are the agent's metrics in their own registry. A nil *Metrics
// records nothing, so the agent needs no checks.
type Metrics struct {
	registry *prometheus.Registry

	applyDuration     prometheus.Histogram
	applies           *prometheus.CounterVec
	lastSuccess       prometheus.Gauge
	rules             *prometheus.GaugeVec
	elements          *prometheus.GaugeVec
	shards            *prometheus.GaugeVec
	sourceUp          *prometheus.GaugeVec
	sourceLastSuccess *prometheus.GaugeVec
	dns               *dnsMetrics
	selfUpdate        *prometheus.GaugeVec
	dropLog           *DropLogMetrics
	deliveries        *prometheus.CounterVec

	// now is the clock, replaced in tests.
	now func() time.Time
	// mu serialises the replacement of the ruleset gauges with scrapes.
	mu sync.Mutex
}

// New returns the metrics of an agent of the given version; counters, if
// not nil, are read from the kernel at every scrape.
func New(version string, counters CounterReader, log *slog.Logger) *Metrics {
	m := &Metrics{
		registry: prometheus.NewRegistry(),
		now:      time.Now,
		applyDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "firewall_agent_apply_duration_seconds",
			Help:    "Time to build the ruleset and program it into the kernel, per apply (successful or not).",
			Buckets: []float64{.001, .0025, .005, .01, .02, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}),
		applies: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "firewall_agent_applies_total",
			Help: "Applies by result: changed (set elements or the table changed), unchanged (the kernel held the ruleset already), error (nothing changed).",
		}, []string{"result"}),
		lastSuccess: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "firewall_agent_last_successful_apply_timestamp_seconds",
			Help: "Unix time of the last apply that succeeded, changed or not.",
		}),
		rules: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "firewall_agent_ruleset_rules",
			Help: "Rules per base chain of the ruleset in force.",
		}, []string{"chain"}),
		elements: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "firewall_agent_ruleset_set_elements",
			Help: "Elements per set of the ruleset in force; the shards of a set count under the name of their map (e.g. egress_v4_shards).",
		}, []string{"set"}),
		shards: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "firewall_agent_ruleset_shards",
			Help: "Shards behind each map of the ruleset in force.",
		}, []string{"map"}),
		sourceUp: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "firewall_agent_source_up",
			Help: "Whether the last read of a source (seed, shoot, static: the config file) succeeded.",
		}, []string{"source"}),
		sourceLastSuccess: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "firewall_agent_source_last_success_timestamp_seconds",
			Help: "Unix time of the last successful read of a source.",
		}, []string{"source"}),
	}
	buildInfo := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "firewall_agent_build_info",
		Help: "The agent's version, as a label; always 1.",
	}, []string{"version"})
	buildInfo.WithLabelValues(version).Set(1)
	m.registry.MustRegister(m.applyDuration, m.applies, m.lastSuccess, m.rules, m.elements, m.shards, m.sourceUp, m.sourceLastSuccess, buildInfo,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.dns = newDNSMetrics(m.registry)
	m.selfUpdate = newSelfUpdateState(m.registry)
	m.dropLog = newDropLogMetrics(m.registry)
	m.deliveries = newDeliveries(m.registry)
	for _, r := range []string{ResultChanged, ResultUnchanged, ResultError} {
		m.applies.WithLabelValues(r)
	}
	if counters != nil {
		m.registry.MustRegister(&ruleCounters{reader: counters, log: log})
	}
	return m
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// Gather gathers the metrics; never while an apply replaces the ruleset
// gauges, so a scrape sees the sets of one ruleset.
func (m *Metrics) Gather() ([]*dto.MetricFamily, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.registry.Gather()
}

// ObserveApply records an apply that took d: its result and, when it
// succeeded, the size of rs, the ruleset now in force.
func (m *Metrics) ObserveApply(rs *ruleset.Ruleset, res nftables.Result, err error, d time.Duration) {
	if m == nil {
		return
	}
	m.applyDuration.Observe(d.Seconds())
	switch {
	case err != nil:
		m.applies.WithLabelValues(ResultError).Inc()
		return
	case res.Mode == nftables.Unchanged:
		m.applies.WithLabelValues(ResultUnchanged).Inc()
	default:
		m.applies.WithLabelValues(ResultChanged).Inc()
	}
	m.lastSuccess.Set(float64(m.now().UnixNano()) / 1e9)
	if rs == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rules.Reset()
	for _, c := range rs.Chains {
		if c.Hook != "" { // the shard chains have one rule each
			m.rules.WithLabelValues(c.Name).Set(float64(len(c.Rules)))
		}
	}
	// One series per map, not per shard: the labels do not depend on the
	// cut of the shards.
	mapOf := map[string]string{}
	m.shards.Reset()
	for _, s := range rs.Sets {
		if s.Kind == ruleset.DispatchMap {
			for _, e := range s.Elements {
				mapOf[e.Chain] = s.Name
			}
			m.shards.WithLabelValues(s.Name).Set(float64(len(s.Elements)))
		}
	}
	elements := map[string]int{}
	for _, s := range rs.Sets {
		switch name, isShard := mapOf[s.Name]; {
		case isShard:
			elements[name] += len(s.Elements)
		case s.Kind == ruleset.FQDNSet:
			// The DNS proxy's: see firewall_agent_fqdn_addresses.
		case s.Kind != ruleset.DispatchMap:
			elements[s.Name] += len(s.Elements)
		}
	}
	m.elements.Reset()
	for name, n := range elements {
		m.elements.WithLabelValues(name).Set(float64(n))
	}
}

// ObserveSource records a read of a source: up when err is nil.
func (m *Metrics) ObserveSource(source string, err error) {
	if m == nil {
		return
	}
	if err != nil {
		m.sourceUp.WithLabelValues(source).Set(0)
		return
	}
	m.sourceUp.WithLabelValues(source).Set(1)
	m.sourceLastSuccess.WithLabelValues(source).Set(float64(m.now().UnixNano()) / 1e9)
}

// ruleCounters collects the kernel's rule counters at scrape time, so they
// are as fresh as the scrape and cost nothing between scrapes. The rule ID
// (e.g. egress-v4, ratelimit:eth1) is the only label: a fixed set given by
// the config, never an address nor a shard (the shards of a set share one ID).
type ruleCounters struct {
	reader CounterReader
	log    *slog.Logger
}

var (
	rulePackets = prometheus.NewDesc("firewall_agent_rule_packets_total",
		"Packets that matched a rule of the agent's table, as the kernel counts them (carried over when the table is replaced).", []string{"rule"}, nil)
	ruleBytes = prometheus.NewDesc("firewall_agent_rule_bytes_total",
		"Bytes that matched a rule of the agent's table, as the kernel counts them (carried over when the table is replaced).", []string{"rule"}, nil)
	ruleCountersUp = prometheus.NewDesc("firewall_agent_rule_counters_up",
		"Whether the rule counters could be read from the kernel at this scrape.", nil, nil)
)

func (c *ruleCounters) Describe(ch chan<- *prometheus.Desc) {
	ch <- rulePackets
	ch <- ruleBytes
	ch <- ruleCountersUp
}

func (c *ruleCounters) Collect(ch chan<- prometheus.Metric) {
	counters, err := c.reader.RuleCounters(ruleset.TableName)
	if err != nil {
		if c.log != nil {
			c.log.Error("reading the rule counters for metrics", "error", err)
		}
		ch <- prometheus.MustNewConstMetric(ruleCountersUp, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(ruleCountersUp, prometheus.GaugeValue, 1)
	for id, v := range counters {
		ch <- prometheus.MustNewConstMetric(rulePackets, prometheus.CounterValue, float64(v.Packets), id)
		ch <- prometheus.MustNewConstMetric(ruleBytes, prometheus.CounterValue, float64(v.Bytes), id)
	}
}
