package config_test

import (
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	agentconfigv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/config"
)

const valid = `
name: fw-1
sources:
  seed: {bootstrapKubeconfig: /etc/firewall-agent/bootstrap.kubeconfig, kubeconfig: /etc/firewall-agent/seed.kubeconfig, namespace: shoot--p--s}
  shoot: {namespace: firewall}
  static:
    firewall:
      internalPrefixes: ["10.0.1.0/24", "fd00:1::/64"]
      egressRules: [{interface: eth1, ips: [192.0.2.1]}]
      rateLimits: [{interface: eth1, rate: 100}]
    cwnp:
      egress:  [{to: [{cidr: 203.0.113.0/24, except: [203.0.113.128/25]}], ports: [{protocol: TCP, port: 8000, endPort: 8100}]}]
      ingress: [{from: [{cidr: 198.51.100.0/24}], ports: [{protocol: TCP, port: 30080}]}]
controllers:
  firewall: {source: static}
  cwnp:     {source: static}
`

var _ = Describe("Parse", func() {
	It("accepts the documented shape", func() {
		cfg, err := config.Parse([]byte(valid))
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.Name).To(Equal("fw-1"))
		Expect(cfg.Sources.Static.Firewall.InternalPrefixes).To(ConsistOf("10.0.1.0/24", "fd00:1::/64"))
		Expect(cfg.Sources.Static.CWNP.Egress[0].To[0].Except).To(ConsistOf("203.0.113.128/25"))
		Expect(cfg.Controllers.Service).To(BeNil(), "a controller that is not listed is off")
	})

	It("defaults the name to the hostname", func() {
		cfg, err := config.Parse([]byte(strings.Replace(valid, "name: fw-1\n", "", 1)))
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.Name).NotTo(BeEmpty())
	})

	It("collects all errors at once", func() {
		bad := strings.NewReplacer("203.0.113.0/24", "10.0.0/8", "port: 30080", "port: 70000").Replace(valid)
		_, err := config.Parse([]byte(bad))
		Expect(err).To(MatchError(And(
			ContainSubstring(`sources.static.cwnp.egress[0].to[0].cidr: Invalid value: "10.0.0/8": invalid CIDR`),
			ContainSubstring(`sources.static.cwnp.ingress[0].ports[0].port: Invalid value: 70000`),
		)))
	})

	It("accepts the seed source for the firewall controller", func() {
		cfg, err := config.Parse([]byte(strings.Replace(valid, "firewall: {source: static}", "firewall: {source: seed}", 1)))
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.Controllers.Firewall.Source).To(Equal(agentconfigv1alpha1.SourceSeed))
	})

	It("accepts the shoot source for the policy and monitor controllers", func() {
		withShoot := strings.NewReplacer("shoot: {namespace: firewall}", "shoot: {namespace: firewall, kubeconfig: /etc/firewall-agent/shoot.kubeconfig}",
			"cwnp:     {source: static}", "cwnp:     {source: shoot}\n  monitor:  {source: shoot}").Replace(valid)
		cfg, err := config.Parse([]byte(withShoot))
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.Controllers.CWNP.Source).To(Equal(agentconfigv1alpha1.SourceShoot))
		Expect(cfg.Controllers.Monitor.Source).To(Equal(agentconfigv1alpha1.SourceShoot))
	})

	It("accepts network IDs that networks maps to interfaces", func() {
		cfg, err := config.Parse([]byte(strings.Replace(valid, "{interface: eth1, ips", "{networkID: internet, ips", 1) + "networks: [{id: internet, interface: eth1}]\n"))
		Expect(err).NotTo(HaveOccurred())
		iface, ok := cfg.InterfaceOf("internet")
		Expect(ok).To(BeTrue())
		Expect(iface).To(Equal("eth1"))
	})

	It("refuses a controller whose source is not configured", func() {
		_, err := config.Parse([]byte("sources: {}\ncontrollers: {cwnp: {source: static}}\n"))
		Expect(err).To(MatchError(ContainSubstring(`controllers.cwnp.source: Invalid value: "static": selected source is not configured`)))
	})

	DescribeTable("refuses a bad config naming the field and the value",
		func(old, replacement string, want ...string) {
			_, err := config.Parse([]byte(strings.Replace(valid, old, replacement, 1)))
			Expect(err).To(HaveOccurred())
			for _, w := range want {
				Expect(err.Error()).To(ContainSubstring(w))
			}
		},
		Entry("unknown field", "name: fw-1", "name: fw-1\nnmae: x", `unknown field "nmae"`),
		Entry("unknown nested field", "protocol: TCP, port: 8000", "protocl: TCP, port: 8000", `unknown field "sources.static.cwnp.egress[0].ports[0].protocl"`),
		Entry("bad CIDR", "203.0.113.0/24,", "10.0.0/8,", `sources.static.cwnp.egress[0].to[0].cidr`, `"10.0.0/8"`),
		Entry("except outside", "except: [203.0.113.128/25]", "except: [10.0.0.0/8]", `sources.static.cwnp.egress[0].to[0].except[0]`, `"10.0.0.0/8"`, "must lie inside"),
		Entry("except of the other family", "except: [203.0.113.128/25]", "except: [fd00::/8]", `sources.static.cwnp.egress[0].to[0].except[0]`, `"fd00::/8"`),
		Entry("bad except", "except: [203.0.113.128/25]", "except: [nope]", `sources.static.cwnp.egress[0].to[0].except[0]`, `"nope"`),
		Entry("port 0", "port: 8000,", "port: 0,", `sources.static.cwnp.egress[0].ports[0].port`, `0`),
		Entry("port too large", "port: 30080", "port: 65536", `sources.static.cwnp.ingress[0].ports[0].port`, `65536`),
		Entry("endPort below port", "endPort: 8100", "endPort: 7999", `sources.static.cwnp.egress[0].ports[0].endPort`, `7999`),
		Entry("endPort without port", "{protocol: TCP, port: 30080}", "{protocol: TCP, endPort: 30080}", `sources.static.cwnp.ingress[0].ports[0].port`),
		Entry("unknown protocol", "protocol: TCP, port: 8000", "protocol: ICMP, port: 8000", `sources.static.cwnp.egress[0].ports[0].protocol`, `"ICMP"`),
		Entry("lower-case protocol", "protocol: TCP, port: 30080", "protocol: tcp, port: 30080", `sources.static.cwnp.ingress[0].ports[0].protocol`, `"tcp"`),
		Entry("bad internal prefix", `"10.0.1.0/24",`, `"10.0.1.0/33",`, `sources.static.firewall.internalPrefixes[0]`, `"10.0.1.0/33"`),
		Entry("bad SNAT IP", "ips: [192.0.2.1]", "ips: [192.0.2.300]", `sources.static.firewall.egressRules[0].ips[0]`, `"192.0.2.300"`),
		Entry("SNAT by network ID", "{interface: eth1, ips", "{networkID: internet, ips", `sources.static.firewall.egressRules[0].networkID`, `"internet"`),
		Entry("network without an interface", "controllers:\n", "networks: [{id: internet, interface: ''}]\ncontrollers:\n", `networks[0].interface: Invalid value: ""`),
		Entry("network twice", "controllers:\n", "networks: [{id: internet, interface: eth1}, {id: internet, interface: eth2}]\ncontrollers:\n", `networks[1].id: Duplicate value: "internet"`),
		Entry("rate limit on an unmapped network", "{interface: eth1, rate: 100}", "{networkID: underlay, rate: 100}", `sources.static.firewall.rateLimits[0].networkID: Invalid value: "underlay": no interface for this network`),
		Entry("rate 0", "rate: 100", "rate: 0", `sources.static.firewall.rateLimits[0].rate`),
		Entry("an invalid FQDN selector", "egress:  [", "egress:  [{to: [{cidr: 1.2.3.0/24}], toFQDNs: [{matchName: 'a..example.com'}]}, ", `sources.static.cwnp.egress[0].toFQDNs[0].matchName: Invalid value: "a..example.com"`),
		Entry("egress without destination", "egress:  [", "egress:  [{ports: [{port: 1}]}, ", `sources.static.cwnp.egress[0].to: Required value`),
		Entry("unknown source", "cwnp:     {source: static}", "cwnp:     {source: metal}", `controllers.cwnp.source`, `"metal"`),
		Entry("shoot without a kubeconfig", "cwnp:     {source: static}", "cwnp:     {source: shoot}", `sources.shoot.kubeconfig: Required value: a controller reads the shoot`),
		Entry("monitor from static", "controllers:\n", "controllers:\n  monitor: {source: static}\n", `controllers.monitor.source: Unsupported value: "static"`),
		Entry("seed for policies", "cwnp:     {source: static}", "cwnp:     {source: seed}", `controllers.cwnp.source: Unsupported value: "seed"`),
		Entry("service from static", "controllers:\n", "controllers:\n  service: {source: static}\n", `controllers.service.source: Unsupported value: "static"`),
		Entry("seed without namespace", "namespace: shoot--p--s", "namespace: ''", `sources.seed.namespace: Required value`),
		Entry("shoot access secret without a path to keep it", "shoot: {namespace: firewall}", "shoot: {namespace: firewall, accessSecret: shoot-access-firewall-agent}", `sources.shoot.kubeconfig: Required value`),
		Entry("shoot access secret without a seed",
			"  seed: {bootstrapKubeconfig: /etc/firewall-agent/bootstrap.kubeconfig, kubeconfig: /etc/firewall-agent/seed.kubeconfig, namespace: shoot--p--s}\n  shoot: {namespace: firewall}",
			"  shoot: {namespace: firewall, kubeconfig: /etc/firewall-agent/shoot.kubeconfig, accessSecret: a}",
			`sources.shoot.accessSecret: Invalid value: "a"`, "sources.seed is required"),
	)
})

var _ = Describe("Parse the dns section", func() {
	withDNS := func(dns string) string { return valid + "dns: " + dns + "\n" }

	It("accepts resolvers of both families and applies the defaults", func() {
		cfg, err := config.Parse([]byte(withDNS(`{upstreams: [10.0.0.53, "2001:db8::53"]}`)))
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.DNS.Upstreams).To(Equal([]string{"10.0.0.53", "2001:db8::53"}))
		Expect(cfg.DNS.ListenPort()).To(BeEquivalentTo(agentconfigv1alpha1.DefaultDNSPort))
		Expect(cfg.DNS.TTLFloor()).To(Equal(agentconfigv1alpha1.DefaultDNSMinTTL))
		Expect(cfg.DNS.GracePeriod()).To(Equal(agentconfigv1alpha1.DefaultDNSGrace))
		Expect(cfg.DNS.AddressesPerName()).To(Equal(agentconfigv1alpha1.DefaultMaxAddressesPerName))
		Expect(cfg.DNS.NamesPerSelector()).To(Equal(agentconfigv1alpha1.DefaultMaxNamesPerSelector))
		Expect(cfg.DNS.SelectorLimit()).To(Equal(agentconfigv1alpha1.DefaultMaxSelectors))
		Expect(cfg.DNS.AddressLimit()).To(Equal(agentconfigv1alpha1.DefaultMaxAddresses))
	})

	It("takes every setting", func() {
		cfg, err := config.Parse([]byte(withDNS(`{upstreams: [192.0.2.53], port: 5353, minTTL: 5s, grace: 0s, maxAddressesPerName: 8, maxNamesPerSelector: 16, maxSelectors: 32, maxAddresses: 64}`)))
		Expect(err).NotTo(HaveOccurred())
		d := cfg.DNS
		Expect([]any{d.ListenPort(), d.TTLFloor(), d.GracePeriod(), d.AddressesPerName(), d.NamesPerSelector(), d.SelectorLimit(), d.AddressLimit()}).
			To(Equal([]any{uint16(5353), 5 * time.Second, time.Duration(0), 8, 16, 32, 64}))
	})

	DescribeTable("refuses what is invalid, naming the field and the value",
		func(dns string, want ...string) {
			_, err := config.Parse([]byte(withDNS(dns)))
			Expect(err).To(HaveOccurred())
			for _, w := range want {
				Expect(err.Error()).To(ContainSubstring(w))
			}
		},
		Entry("no resolver", `{upstreams: []}`, `dns.upstreams: Required value`),
		Entry("a CIDR", `{upstreams: [10.0.0.0/8]}`, `dns.upstreams[0]: Invalid value: "10.0.0.0/8": must be an IPv4 or IPv6 address`),
		Entry("a name", `{upstreams: [dns.example.com]}`, `dns.upstreams[0]: Invalid value: "dns.example.com"`),
		Entry("a zone", `{upstreams: ["fe80::1%eth0"]}`, `dns.upstreams[0]: Invalid value: "fe80::1%eth0"`),
		Entry("the loopback", `{upstreams: [127.0.0.53]}`, `dns.upstreams[0]: Invalid value: "127.0.0.53": must be a unicast address`),
		Entry("twice", `{upstreams: [10.0.0.53, 10.0.0.53]}`, `dns.upstreams[1]: Duplicate value: "10.0.0.53"`),
		Entry("too many", `{upstreams: [10.0.0.1, 10.0.0.2, 10.0.0.3, 10.0.0.4, 10.0.0.5, 10.0.0.6, 10.0.0.7, 10.0.0.8, 10.0.0.9]}`, `dns.upstreams: Too many: 9: must have at most 8 items`),
		Entry("a port too large", `{upstreams: [10.0.0.53], port: 65536}`, `dns.port: Invalid value: 65536`),
		Entry("a negative TTL floor", `{upstreams: [10.0.0.53], minTTL: -1s}`, `dns.minTTL: Invalid value: "-1s": must be between 0s and 24h`),
		Entry("a grace of a week", `{upstreams: [10.0.0.53], grace: 168h}`, `dns.grace: Invalid value: "168h0m0s": must be between 0s and 24h`),
		Entry("a duration that is none", `{upstreams: [10.0.0.53], grace: soon}`, `invalid duration "soon"`),
		Entry("a negative bound", `{upstreams: [10.0.0.53], maxSelectors: -1}`, `dns.maxSelectors: Invalid value: -1`),
		Entry("a bound too large", `{upstreams: [10.0.0.53], maxAddressesPerName: 5000}`, `dns.maxAddressesPerName: Invalid value: 5000: must be between 1 and 4096`),
		Entry("an unknown field", `{upstreams: [10.0.0.53], upstream: 10.0.0.54}`, `unknown field "dns.upstream"`),
	)
})
