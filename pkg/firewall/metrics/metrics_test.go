package metrics_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/metrics"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/metrics/metricstest"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/nftables"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/ruleset"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/ruleset/rulesettest"
)

// fakeCounters returns fixed counters, or an error.
type fakeCounters struct {
	counters map[string]nftables.Counter
	err      error
}

func (f *fakeCounters) RuleCounters(table string) (map[string]nftables.Counter, error) {
	Expect(table).To(Equal(ruleset.TableName))
	return f.counters, f.err
}

// scrape gets /metrics from the handler and parses it.
func scrape(h http.Handler) (string, map[string]float64) {
	GinkgoHelper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	Expect(rec.Code).To(Equal(http.StatusOK))
	body, err := io.ReadAll(rec.Body)
	Expect(err).NotTo(HaveOccurred())
	got, err := metricstest.Parse(string(body))
	Expect(err).NotTo(HaveOccurred(), string(body))
	return string(body), got
}

var _ = Describe("Metrics", func() {
	It("serves what the agent observed, in the Prometheus text format", func() {
		counters := &fakeCounters{counters: map[string]nftables.Counter{
			"egress-v4": {Packets: 7, Bytes: 700}, "ratelimit:eth1": {Packets: 1, Bytes: 1500},
		}}
		m := metrics.New("v1.2.3", counters, nil)
		rs, err := ruleset.Build(&fwv1alpha1.FirewallTrafficSpec{InternalPrefixes: []string{"10.0.1.0/24"}},
			[]*fwv1alpha1.PolicySpec{rulesettest.Policies(3, false)}, nil)
		Expect(err).NotTo(HaveOccurred())

		before := time.Now()
		m.ObserveApply(rs, nftables.Result{Mode: nftables.Full}, nil, 30*time.Millisecond)
		m.ObserveApply(rs, nftables.Result{Mode: nftables.Unchanged}, nil, time.Millisecond)
		m.ObserveApply(nil, nftables.Result{}, errors.New("kernel says no"), 2*time.Millisecond)
		m.ObserveSource(metrics.SourceStatic, nil)
		m.ObserveSource(metrics.SourceSeed, nil)
		m.ObserveSource(metrics.SourceSeed, errors.New("unreachable"))

		text, got := scrape(m.Handler())
		Expect(got).To(HaveKeyWithValue(`firewall_agent_build_info{version="v1.2.3"}`, 1.0))
		Expect(got).To(HaveKeyWithValue(`firewall_agent_applies_total{result="changed"}`, 1.0))
		Expect(got).To(HaveKeyWithValue(`firewall_agent_applies_total{result="unchanged"}`, 1.0))
		Expect(got).To(HaveKeyWithValue(`firewall_agent_applies_total{result="error"}`, 1.0))
		Expect(got).To(HaveKeyWithValue(`firewall_agent_apply_duration_seconds_count`, 3.0))
		Expect(got).To(HaveKeyWithValue(`firewall_agent_apply_duration_seconds_bucket{le="0.05"}`, 3.0))
		Expect(got).To(HaveKeyWithValue(`firewall_agent_apply_duration_seconds_bucket{le="0.02"}`, 2.0))
		Expect(got[`firewall_agent_last_successful_apply_timestamp_seconds`]).To(BeNumerically(">=", float64(before.Unix())))
		Expect(got).To(HaveKeyWithValue(`firewall_agent_ruleset_rules{chain="forward"}`, float64(len(rs.Chains[0].Rules))))
		Expect(got).To(HaveKeyWithValue(`firewall_agent_ruleset_set_elements{set="egress_v4_exact"}`, 3.0))
		Expect(got).To(HaveKeyWithValue(`firewall_agent_ruleset_set_elements{set="internal_v4"}`, 1.0))
		Expect(got).To(HaveKeyWithValue(`firewall_agent_ruleset_shards{map="egress_v4_shards"}`, 1.0))
		Expect(got).To(HaveKeyWithValue(`firewall_agent_ruleset_set_elements{set="egress_v4_shards"}`, 0.0), "the elements of its shards")
		Expect(got).NotTo(HaveKey(`firewall_agent_ruleset_set_elements{set="egress_v4_0"}`), "a shard counts under its map")
		Expect(got).NotTo(HaveKey(`firewall_agent_ruleset_rules{chain="egress_v4_0"}`), "base chains only")
		Expect(got).To(HaveKeyWithValue(`firewall_agent_source_up{source="static"}`, 1.0))
		Expect(got).To(HaveKeyWithValue(`firewall_agent_source_up{source="seed"}`, 0.0))
		Expect(got[`firewall_agent_source_last_success_timestamp_seconds{source="seed"}`]).To(BeNumerically(">=", float64(before.Unix())),
			"the last success stays when the source fails")
		Expect(got).NotTo(HaveKey(`firewall_agent_source_up{source="shoot"}`), "a source the agent does not read has no series")
		Expect(got).To(HaveKeyWithValue(`firewall_agent_rule_counters_up`, 1.0))
		Expect(got).To(HaveKeyWithValue(`firewall_agent_rule_packets_total{rule="egress-v4"}`, 7.0))
		Expect(got).To(HaveKeyWithValue(`firewall_agent_rule_bytes_total{rule="ratelimit:eth1"}`, 1500.0))
		Expect(text).To(ContainSubstring("# TYPE firewall_agent_rule_packets_total counter"))
		Expect(got).To(HaveKey(`go_goroutines`))

		By("reporting that the counters could not be read, and serving the rest")
		counters.err = errors.New("netlink says no")
		_, got = scrape(m.Handler())
		Expect(got).To(HaveKeyWithValue(`firewall_agent_rule_counters_up`, 0.0))
		Expect(got).NotTo(HaveKey(`firewall_agent_rule_packets_total{rule="egress-v4"}`))
		Expect(got).To(HaveKeyWithValue(`firewall_agent_applies_total{result="changed"}`, 1.0))
	})

	It("counts the shards of a set under its map", func() {
		m := metrics.New("v1.2.3", &fakeCounters{}, nil)
		rs, err := ruleset.Build(&fwv1alpha1.FirewallTrafficSpec{}, []*fwv1alpha1.PolicySpec{rulesettest.Policies(600, true)}, nil)
		Expect(err).NotTo(HaveOccurred())
		shards := rs.Set("egress_v4_shards").Elements
		Expect(len(shards)).To(BeNumerically(">", 1))
		m.ObserveApply(rs, nftables.Result{Mode: nftables.Full}, nil, time.Millisecond)
		_, got := scrape(m.Handler())
		Expect(got).To(HaveKeyWithValue(`firewall_agent_ruleset_shards{map="egress_v4_shards"}`, float64(len(shards))))
		// 450 IPv4 items, a /31 on two ports each: 900 ranges.
		Expect(got).To(HaveKeyWithValue(`firewall_agent_ruleset_set_elements{set="egress_v4_shards"}`, 900.0))
	})

	It("serves what the DNS proxy observed, and leaves the FQDN sets out of the ruleset's elements", func() {
		m := metrics.New("v1.2.3", &fakeCounters{}, nil)
		rs, err := ruleset.Build(&fwv1alpha1.FirewallTrafficSpec{}, []*fwv1alpha1.PolicySpec{{Egress: []fwv1alpha1.EgressRule{
			{ToFQDNs: []fwv1alpha1.FQDNSelector{{MatchName: "api.github.com"}}}}}}, nil)
		Expect(err).NotTo(HaveOccurred())
		m.ObserveApply(rs, nftables.Result{Mode: nftables.Full}, nil, time.Millisecond)
		m.ObserveDNSQuery("udp", "answered")
		m.ObserveDNSQuery("udp", "answered")
		m.ObserveDNSQuery("tcp", "servfail")
		m.ObserveDNSUpstream(300*time.Microsecond, nil)
		m.ObserveDNSUpstream(time.Second, errors.New("no resolver answered"))
		m.ObserveFQDNUpdate(3, 80*time.Microsecond, nil)
		m.ObserveFQDNUpdate(1, time.Millisecond, errors.New("netlink says no"))
		m.ObserveFQDNBound("maxAddressesPerName")
		m.ObserveFQDNAllowed(1, 3)
		_, got := scrape(m.Handler())
		Expect(got).To(HaveKeyWithValue(`firewall_agent_dns_queries_total{result="answered",transport="udp"}`, 2.0))
		Expect(got).To(HaveKeyWithValue(`firewall_agent_dns_queries_total{result="servfail",transport="tcp"}`, 1.0))
		Expect(got).To(HaveKeyWithValue(`firewall_agent_dns_upstream_duration_seconds_bucket{le="0.0005"}`, 1.0))
		Expect(got).To(HaveKeyWithValue(`firewall_agent_dns_upstream_errors_total`, 1.0))
		Expect(got).To(HaveKeyWithValue(`firewall_agent_fqdn_set_updates_total{result="ok"}`, 1.0))
		Expect(got).To(HaveKeyWithValue(`firewall_agent_fqdn_set_updates_total{result="error"}`, 1.0))
		Expect(got).To(HaveKeyWithValue(`firewall_agent_fqdn_set_elements_written_total`, 3.0))
		Expect(got).To(HaveKeyWithValue(`firewall_agent_fqdn_set_update_duration_seconds_bucket{le="0.0001"}`, 1.0))
		Expect(got).To(HaveKeyWithValue(`firewall_agent_fqdn_bound_hits_total{bound="maxAddressesPerName"}`, 1.0))
		Expect(got).To(HaveKeyWithValue(`firewall_agent_fqdn_bound_hits_total{bound="maxAddresses"}`, 0.0))
		Expect(got).To(HaveKeyWithValue(`firewall_agent_fqdn_selectors`, 1.0))
		Expect(got).To(HaveKeyWithValue(`firewall_agent_fqdn_addresses`, 3.0))
		for key := range got {
			Expect(key).NotTo(ContainSubstring(`set="fqdn_`), "one series per selector would grow with the policies")
		}
		Expect(got).To(HaveKeyWithValue(`firewall_agent_ruleset_rules{chain="forward"}`, float64(len(rs.Chains[0].Rules))))
	})

	It("records nothing, without failing, when nil", func() {
		var m *metrics.Metrics
		m.ObserveApply(nil, nftables.Result{}, nil, time.Second)
		m.ObserveSource(metrics.SourceShoot, nil)
		m.ObserveDNSQuery("udp", "answered")
		m.ObserveDNSUpstream(time.Second, nil)
		m.ObserveFQDNUpdate(1, time.Second, nil)
		m.ObserveFQDNBound("maxAddresses")
		m.ObserveFQDNAllowed(1, 1)
		m.ObserveSelfUpdate("Refused", "v2")
		m.ObserveDelivery(metrics.DeliveryRefused)
	})

	It("counts the deliveries looked at by result, each from 0", func() {
		m := metrics.New("v1.2.3", nil, nil)
		m.ObserveDelivery(metrics.DeliveryRefused)
		m.ObserveDelivery(metrics.DeliveryRefused)
		_, got := scrape(m.Handler())
		Expect(got).To(HaveKeyWithValue(`firewall_agent_deliveries_total{result="refused"}`, 2.0))
		Expect(got).To(HaveKeyWithValue(`firewall_agent_deliveries_total{result="taken"}`, 0.0))
		Expect(got).To(HaveKeyWithValue(`firewall_agent_deliveries_total{result="failed"}`, 0.0))
	})

	It("shows the self-update's current state only", func() {
		m := metrics.New("v1.2.3", nil, nil)
		m.ObserveSelfUpdate("Updating", "v1.3.0")
		m.ObserveSelfUpdate("Refused", "v1.3.0")
		_, got := scrape(m.Handler())
		Expect(got).To(HaveKeyWithValue(`firewall_agent_self_update_state{state="Refused",wanted_version="v1.3.0"}`, 1.0))
		Expect(got).NotTo(HaveKey(`firewall_agent_self_update_state{state="Updating",wanted_version="v1.3.0"}`))
	})
})
