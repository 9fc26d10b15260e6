package validation_test

import (
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/validation/field"

	. "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/validation"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/strict"
)

var _ = Describe("DecodeFirewallExtensionConfig", func() {
	// config is a valid providerConfig with extra appended inside the object.
	config := func(extra string) string {
		return `{"size":"c1-xlarge-x86","image":"firewall-ubuntu-3.0","partition":"fra-equ01","project":"0c4d1e2f-0000-4000-8000-000000000000",` +
			`"networks":["internet","tenant-1"],"nodeNetwork":"tenant-1"` + extra + `}`
	}
	// unresolved is a valid providerConfig without its node network, which
	// the extension finds in the metal-api.
	unresolved := func(extra string) string {
		return `{"size":"c1-xlarge-x86","image":"firewall-ubuntu-3.0","partition":"fra-equ01","project":"0c4d1e2f-0000-4000-8000-000000000000"` + extra + `}`
	}

	It("accepts a config without networks, and its rules and metrics on networks not known yet", func() {
		cfg, err := DecodeFirewallExtensionConfig([]byte(unresolved(
			`,"networks":["internet"],"egressRules":[{"networkID":"internet"}],"rateLimits":[{"networkID":"tenant-1","rate":10}],"metrics":{"internalNetwork":"tenant-1"}`)))
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.NodeNetwork).To(BeEmpty())
		_, err = DecodeFirewallExtensionConfig([]byte(unresolved("")))
		Expect(err).NotTo(HaveOccurred(), "no network at all: the node network is found")
		_, err = DecodeFirewallExtensionConfig([]byte(unresolved(`,"nodeNetwork":"tenant-1"`)))
		Expect(err).NotTo(HaveOccurred(), "the node network alone")
	})

	It("accepts metrics without a network: the node network's", func() {
		cfg, err := DecodeFirewallExtensionConfig([]byte(config(`,"metrics":{"port":9100}`)))
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.Metrics.InternalNetwork).To(BeEmpty())
	})

	It("accepts a valid config, networkIDs of its networks and the highest rate the kernel takes", func() {
		cfg, err := DecodeFirewallExtensionConfig([]byte(config(fmt.Sprintf(
			`,"egressRules":[{"networkID":"internet","ips":["203.0.113.5"]},{"interface":"vrf1"}],"rateLimits":[{"networkID":"internet","rate":%d},{"networkID":"tenant-1","rate":1}]`,
			MaxRateMiBps))))
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.RateLimits[0].Rate).To(Equal(uint32(17592)))
		_, err = DecodeFirewallExtensionConfig([]byte(config(`,"internalPrefixes":[` + strings.Repeat(`"10.0.0.0/8",`, MaxInternalPrefixes-1) + `"10.0.0.0/8"]`)))
		Expect(err).NotTo(HaveOccurred(), "MaxInternalPrefixes are accepted")
	})

	It("accepts metrics on one of the networks", func() {
		cfg, err := DecodeFirewallExtensionConfig([]byte(config(`,"metrics":{"internalNetwork":"tenant-1"}`)))
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.Metrics.ListenPort()).To(Equal(uint16(2112)))
	})

	It("accepts the DNS proxy's settings", func() {
		cfg, err := DecodeFirewallExtensionConfig([]byte(config(`,"dns":{"upstreams":["10.0.0.53","2001:db8::53"],"minTTL":"30s","grace":"2m","maxSelectors":500}`)))
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.DNS.Upstreams).To(Equal([]string{"10.0.0.53", "2001:db8::53"}))
		Expect(cfg.DNS.SelectorLimit()).To(Equal(500))
		Expect(cfg.DNS.AddressesPerName()).To(Equal(64), "the default")
	})

	DescribeTable("refuses, naming the field and the value",
		func(raw string, want ...string) {
			_, err := DecodeFirewallExtensionConfig([]byte(raw))
			Expect(err).To(HaveOccurred())
			for _, w := range want {
				Expect(err.Error()).To(ContainSubstring(w))
			}
			Expect(len(err.Error())).To(BeNumerically("<", 4096))
		},
		Entry("a key in the wrong case", config(`,"SIZE":"x"`), `unknown field "SIZE"`),
		Entry("a duplicate key (JSON)", config(`,"image":"other-1.0"`), `key "image" already set`),
		Entry("a duplicate key (YAML)", "size: a\nimage: b\nsize: c\n", `key "size" already set`),
		Entry("trailing data", config("")+` {"size":"x"}`, "trailing content after the document"),
		Entry("a second YAML document", "size: a\n---\nsize: b\n", "more than one document"),
		Entry("invalid UTF-8", strings.Replace(config(""), "c1-xlarge", "c1-\xff\xfe", 1), "providerConfig", "not valid UTF-8"),
		Entry("a networkID not in networks (SNAT)", config(`,"egressRules":[{"networkID":"underlay"}]`),
			`providerConfig.egressRules[0].networkID: Invalid value: "underlay": not one of networks`),
		Entry("a networkID not in networks (rate limit)", config(`,"rateLimits":[{"networkID":"underlay","rate":10}]`),
			`providerConfig.rateLimits[0].networkID: Invalid value: "underlay": not one of networks`),
		Entry("two rate limits for one network", config(`,"rateLimits":[{"networkID":"internet","rate":10},{"networkID":"internet","rate":20}]`),
			`providerConfig.rateLimits[1].networkID: Duplicate value: "internet"`),
		Entry("two rate limits for one interface", config(`,"rateLimits":[{"interface":"vrf1","rate":10},{"interface":"vrf1","rate":20}]`),
			`providerConfig.rateLimits[1].interface: Duplicate value: "vrf1"`),
		Entry("two SNAT rules for one network", config(`,"egressRules":[{"networkID":"internet"},{"networkID":"internet"}]`),
			`providerConfig.egressRules[1].networkID: Duplicate value: "internet"`),
		Entry("a rate above the kernel's bound", config(fmt.Sprintf(`,"rateLimits":[{"interface":"vrf1","rate":%d}]`, MaxRateMiBps+1)),
			`providerConfig.rateLimits[0].rate: Invalid value: 17593: must be at most 17592 MiB/s`),
		Entry("10,000 internal prefixes", config(`,"internalPrefixes":[`+strings.Repeat(`"10.0.0.0/8",`, 9999)+`"10.0.0.0/8"]`),
			"providerConfig.internalPrefixes: Too many: 10000: must have at most 1024 items"),
		Entry("a newline in size", strings.Replace(config(""), "c1-xlarge-x86", `c1-xlarge-x86\nrm -rf /`, 1),
			`providerConfig.size: Invalid value: "c1-xlarge-x86\nrm -rf /": must consist of letters, digits`),
		Entry("a control character in image", strings.Replace(config(""), "firewall-ubuntu-3.0", `firewall\u0000ubuntu`, 1),
			`providerConfig.image: Invalid value: "firewall\x00ubuntu"`),
		Entry("a blank in partition", strings.Replace(config(""), "fra-equ01", "fra equ01", 1), `providerConfig.partition: Invalid value: "fra equ01"`),
		Entry("a slash in project", strings.Replace(config(""), "0c4d1e2f-0000", "../0c4d1e2f", 1), `providerConfig.project: Invalid value: "../0c4d1e2f`),
		Entry("a 129-character size", strings.Replace(config(""), "c1-xlarge-x86", strings.Repeat("s", 129), 1),
			`providerConfig.size: Invalid value: "ssss`, "(129 bytes)", "may not be more than 128 bytes"),
		Entry("a 10 MB image", strings.Replace(config(""), "firewall-ubuntu-3.0", strings.Repeat("i", 10<<20), 1),
			"providerConfig: Too long: may not be more than 262144 bytes"),
		Entry("a network with a newline", strings.Replace(config(""), `"tenant-1"`, `"tenant\n1"`, 1), `providerConfig.networks[1]: Invalid value: "tenant\n1"`),
		Entry("an agent URL that is not http(s)", config(`,"agentURL":"file:///etc/shadow"`), `providerConfig.agentURL: Invalid value: "file:///etc/shadow"`),
		Entry("an agent version with a newline", config(`,"agentVersion":"v1\nx"`), `providerConfig.agentVersion: Invalid value: "v1\nx"`),
		Entry("a create timeout shorter than a minute", config(`,"createTimeout":"30s"`), `providerConfig.createTimeout: Invalid value: "30s": must be within [1m0s, 24h0m0s]`),
		Entry("a health timeout longer than a day", config(`,"healthTimeout":"25h"`), `providerConfig.healthTimeout: Invalid value: "25h0m0s": must be within [1m0s, 24h0m0s]`),
		Entry("a negative create timeout", config(`,"createTimeout":"-5m"`), `providerConfig.createTimeout: Invalid value: "-5m0s"`),
		Entry("a timeout that is no duration", config(`,"createTimeout":"ten minutes"`),
			`providerConfig.createTimeout: Invalid value: "ten minutes": must be a duration such as 20m or 1h30m`),
		Entry("a timeout as a number", config(`,"healthTimeout":600`), `providerConfig.healthTimeout: Invalid value: "600": must be a duration`),
		Entry("a DNS proxy without resolvers", config(`,"dns":{}`), `providerConfig.dns.upstreams: Required value`),
		Entry("a resolver by name", config(`,"dns":{"upstreams":["dns.example.com"]}`),
			`providerConfig.dns.upstreams[0]: Invalid value: "dns.example.com": must be an IPv4 or IPv6 address`),
		Entry("a grace of a week", config(`,"dns":{"upstreams":["10.0.0.53"],"grace":"168h"}`), `providerConfig.dns.grace: Invalid value: "168h0m0s": must be between 0s and 24h`),
		Entry("an unknown hibernation policy", config(`,"hibernation":"delete"`),
			`providerConfig.hibernation: Unsupported value: "delete": supported values: "release", "keep"`),
		Entry("a hibernation policy in the wrong case", config(`,"hibernation":"Keep"`), `providerConfig.hibernation: Unsupported value: "Keep"`),
		Entry("no firewall", config(`,"replicas":0`), `providerConfig.replicas: Invalid value: 0: must be within [1, 4]`),
		Entry("five firewalls", config(`,"replicas":5`), `providerConfig.replicas: Invalid value: 5: must be within [1, 4]`),
		Entry("replicas as a string", config(`,"replicas":"2"`), `replicas`),
		Entry("an unknown DNS field", config(`,"dns":{"upstreams":["10.0.0.53"],"upstream":"10.0.0.54"}`), `unknown field "dns.upstream"`),
		Entry("metrics on a network the firewall is not attached to", config(`,"metrics":{"internalNetwork":"tenant-2"}`),
			`providerConfig.metrics.internalNetwork: Invalid value: "tenant-2": must be one of networks or the node network`),
		Entry("metrics on a network with a slash", unresolved(`,"metrics":{"internalNetwork":"a/b"}`), `providerConfig.metrics.internalNetwork: Invalid value: "a/b"`),
		Entry("a node network with a newline", unresolved(`,"nodeNetwork":"tenant\n1"`), `providerConfig.nodeNetwork: Invalid value: "tenant\n1"`),
		Entry("a network with a blank, node network unknown", unresolved(`,"networks":["inter net"]`), `providerConfig.networks[0]: Invalid value: "inter net"`),
		Entry("a SNAT rule with neither network nor interface, node network unknown", unresolved(`,"egressRules":[{"ips":["203.0.113.5"]}]`), `providerConfig.egressRules[0]`),
		Entry("a network twice, node network unknown", unresolved(`,"networks":["tenant-1","tenant-1"]`), `providerConfig.networks[1]: Duplicate value: "tenant-1"`),
		Entry("metrics on the DNS proxy's port", config(`,"dns":{"upstreams":["10.0.0.53"]},"metrics":{"internalNetwork":"tenant-1","port":10053}`),
			`providerConfig.metrics.port: Invalid value: "10053": the DNS proxy listens on port 10053`),
	)

	It("accepts one to four replicas and leaves them unset by default", func() {
		cfg, err := DecodeFirewallExtensionConfig([]byte(config("")))
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.Replicas).To(BeNil())
		for _, n := range []int32{1, 4} {
			cfg, err := DecodeFirewallExtensionConfig([]byte(config(fmt.Sprintf(`,"replicas":%d`, n))))
			Expect(err).NotTo(HaveOccurred())
			Expect(*cfg.Replicas).To(Equal(n))
		}
	})

	It("accepts the shoot's create and health timeouts", func() {
		cfg, err := DecodeFirewallExtensionConfig([]byte(config(`,"createTimeout":"1m","healthTimeout":"24h"`)))
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.CreateTimeout.Duration).To(Equal(time.Minute))
		Expect(cfg.HealthTimeout.Duration).To(Equal(24 * time.Hour))
	})

	It("accepts both hibernation policies and none", func() {
		for _, policy := range []string{"release", "keep"} {
			cfg, err := DecodeFirewallExtensionConfig([]byte(config(`,"hibernation":"` + policy + `"`)))
			Expect(err).NotTo(HaveOccurred())
			Expect(string(cfg.Hibernation)).To(Equal(policy))
		}
		cfg, err := DecodeFirewallExtensionConfig([]byte(config("")))
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.Hibernation).To(BeEmpty(), "release, as the actuator reads it")
	})

	It("reports at most strict.MaxErrors errors and counts the rest", func() {
		prefixes := strings.TrimSuffix(strings.Repeat(`"`+strings.Repeat("x", 200)+`",`, MaxInternalPrefixes), ",")
		_, errs := DecodeFirewallExtensionConfigAt([]byte(config(`,"internalPrefixes":[`+prefixes+`]`)), field.NewPath("providerConfig"))
		Expect(errs).To(HaveLen(strict.MaxErrors + 1))
		Expect(errs[strict.MaxErrors].Error()).To(ContainSubstring(fmt.Sprintf("and %d more errors", MaxInternalPrefixes-strict.MaxErrors)))
		Expect(len(errs.ToAggregate().Error())).To(BeNumerically("<", 4096))
	})

	It("derives the highest rate from the kernel's u64 arithmetic", func() {
		// 10^9 ns * rate in bytes must fit a u64 (see MaxRateMiBps).
		Expect(uint64(MaxRateMiBps) << 20).To(BeNumerically("<=", ^uint64(0)/1_000_000_000))
		Expect(uint64(MaxRateMiBps+1) << 20).To(BeNumerically(">", ^uint64(0)/1_000_000_000))
	})
})
