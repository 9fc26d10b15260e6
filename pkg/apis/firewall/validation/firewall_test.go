package validation_test

import (
	"fmt"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	. "github.com/onsi/gomega/gstruct"
	"github.com/onsi/gomega/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	. "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/validation"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/strict"
)

// manyNetworks returns n networks, "internet" and "tenant-1" first, so that
// validSpec's rules still name attached networks.
func manyNetworks(n int) []string {
	out := []string{"internet", "tenant-1"}
	for i := 2; i < n; i++ {
		out = append(out, fmt.Sprintf("net-%d", i))
	}
	return out
}

func validSpec() firewallv1alpha1.FirewallSpec {
	return firewallv1alpha1.FirewallSpec{
		Size:      "c1-xlarge-x86",
		Image:     "firewall-ubuntu-3.0",
		Partition: "fra-equ01",
		Project:   "p1",
		Networks:  []string{"internet", "tenant-1"},
		FirewallTrafficSpec: firewallv1alpha1.FirewallTrafficSpec{
			InternalPrefixes: []string{"10.0.1.0/24", "fd00:1::/64"},
			EgressRules:      []firewallv1alpha1.EgressRuleSNAT{{NetworkID: "internet", IPs: []string{"203.0.113.5", "2001:db8::5"}}},
			RateLimits:       []firewallv1alpha1.RateLimit{{Interface: "eth1", Rate: 100}},
		},
		UserdataContents: []firewallv1alpha1.UserdataContent{
			{Path: "/etc/firewall-agent/config.yaml", Content: "name: fw"},
			{Path: "/etc/firewall-agent/bootstrap.kubeconfig", SecretRef: &firewallv1alpha1.SecretKeyReference{Name: "bootstrap", Key: "kubeconfig"}, Mode: ptr.To[int32](0o600)},
		},
	}
}

func fieldErr(t field.ErrorType, path string, value any) types.GomegaMatcher {
	fields := Fields{"Type": Equal(t), "Field": Equal(path)}
	if value != nil {
		fields["BadValue"] = Equal(value)
	}
	return PointTo(MatchFields(IgnoreExtras, fields))
}

var _ = Describe("ValidateFirewallSpec", func() {
	It("accepts a complete spec", func() {
		Expect(ValidateFirewallSpec(validSpec(), field.NewPath("spec"))).To(BeEmpty())
	})

	DescribeTable("names the field and the value of a bad spec",
		func(mutate func(*firewallv1alpha1.FirewallSpec), matcher types.GomegaMatcher) {
			spec := validSpec()
			mutate(&spec)
			Expect(ValidateFirewallSpec(spec, field.NewPath("spec"))).To(ConsistOf(matcher))
		},
		Entry("missing size", func(s *firewallv1alpha1.FirewallSpec) { s.Size = "" }, fieldErr(field.ErrorTypeRequired, "spec.size", nil)),
		Entry("no networks", func(s *firewallv1alpha1.FirewallSpec) { s.Networks = nil }, fieldErr(field.ErrorTypeRequired, "spec.networks", nil)),
		Entry("duplicate network", func(s *firewallv1alpha1.FirewallSpec) { s.Networks = []string{"a", "a"} }, fieldErr(field.ErrorTypeDuplicate, "spec.networks[1]", "a")),
		Entry("bad internal prefix", func(s *firewallv1alpha1.FirewallSpec) { s.InternalPrefixes = []string{"10.0.0/8"} },
			fieldErr(field.ErrorTypeInvalid, "spec.internalPrefixes[0]", "10.0.0/8")),
		Entry("SNAT address not an IP", func(s *firewallv1alpha1.FirewallSpec) { s.EgressRules[0].IPs = []string{"203.0.113.0/24"} },
			fieldErr(field.ErrorTypeInvalid, "spec.egressRules[0].ips[0]", "203.0.113.0/24")),
		Entry("SNAT with network and interface", func(s *firewallv1alpha1.FirewallSpec) { s.EgressRules[0].Interface = "eth0" },
			fieldErr(field.ErrorTypeInvalid, "spec.egressRules[0].networkID", "internet")),
		Entry("rate limit without network", func(s *firewallv1alpha1.FirewallSpec) { s.RateLimits[0].Interface = "" },
			fieldErr(field.ErrorTypeRequired, "spec.rateLimits[0].interface", nil)),
		Entry("rate limit of zero", func(s *firewallv1alpha1.FirewallSpec) { s.RateLimits[0].Rate = 0 },
			fieldErr(field.ErrorTypeInvalid, "spec.rateLimits[0].rate", uint32(0))),
		Entry("relative userdata path", func(s *firewallv1alpha1.FirewallSpec) { s.UserdataContents[0].Path = "etc/x" },
			fieldErr(field.ErrorTypeInvalid, "spec.userdataContents[0].path", "etc/x")),
		Entry("duplicate userdata path", func(s *firewallv1alpha1.FirewallSpec) { s.UserdataContents[1].Path = s.UserdataContents[0].Path },
			fieldErr(field.ErrorTypeDuplicate, "spec.userdataContents[1].path", "/etc/firewall-agent/config.yaml")),
		Entry("content and secretRef", func(s *firewallv1alpha1.FirewallSpec) { s.UserdataContents[1].Content = "x" },
			fieldErr(field.ErrorTypeInvalid, "spec.userdataContents[1].secretRef", "bootstrap")),
		Entry("secretRef without key", func(s *firewallv1alpha1.FirewallSpec) { s.UserdataContents[1].SecretRef.Key = "" },
			fieldErr(field.ErrorTypeRequired, "spec.userdataContents[1].secretRef", nil)),
		Entry("mode beyond 0777", func(s *firewallv1alpha1.FirewallSpec) { s.UserdataContents[1].Mode = ptr.To[int32](0o1777) },
			fieldErr(field.ErrorTypeInvalid, "spec.userdataContents[1].mode", int32(0o1777))),
		Entry("a newline in size", func(s *firewallv1alpha1.FirewallSpec) { s.Size = "c1\nx" },
			fieldErr(field.ErrorTypeInvalid, "spec.size", "c1\nx")),
		Entry("a 10 MB image, quoted as an excerpt", func(s *firewallv1alpha1.FirewallSpec) { s.Image = strings.Repeat("i", 10<<20) },
			fieldErr(field.ErrorTypeInvalid, "spec.image", strings.Repeat("i", 64)+"... (10485760 bytes)")),
		Entry("a network with a control character", func(s *firewallv1alpha1.FirewallSpec) { s.Networks[1] = "tenant\x001" },
			fieldErr(field.ErrorTypeInvalid, "spec.networks[1]", "tenant\x001")),
		Entry("too many networks", func(s *firewallv1alpha1.FirewallSpec) { s.Networks = manyNetworks(MaxNetworks + 1) },
			fieldErr(field.ErrorTypeTooMany, "spec.networks", MaxNetworks+1)),
		Entry("a SNAT rule on a network the firewall is not attached to", func(s *firewallv1alpha1.FirewallSpec) { s.EgressRules[0].NetworkID = "underlay" },
			fieldErr(field.ErrorTypeInvalid, "spec.egressRules[0].networkID", "underlay")),
		Entry("two rate limits on one interface", func(s *firewallv1alpha1.FirewallSpec) { s.RateLimits = append(s.RateLimits, s.RateLimits[0]) },
			fieldErr(field.ErrorTypeDuplicate, "spec.rateLimits[1].interface", "eth1")),
		Entry("a rate the kernel refuses", func(s *firewallv1alpha1.FirewallSpec) { s.RateLimits[0].Rate = MaxRateMiBps + 1 },
			fieldErr(field.ErrorTypeInvalid, "spec.rateLimits[0].rate", uint32(17593))),
		Entry("too many internal prefixes", func(s *firewallv1alpha1.FirewallSpec) {
			s.InternalPrefixes = make([]string, MaxInternalPrefixes+1)
		}, fieldErr(field.ErrorTypeTooMany, "spec.internalPrefixes", MaxInternalPrefixes+1)),
		Entry("three SNAT addresses", func(s *firewallv1alpha1.FirewallSpec) {
			s.EgressRules[0].IPs = []string{"192.0.2.1", "192.0.2.2", "192.0.2.3"}
		}, fieldErr(field.ErrorTypeTooMany, "spec.egressRules[0].ips", 3)),
		Entry("an SSH key of two lines", func(s *firewallv1alpha1.FirewallSpec) {
			s.SSHPublicKeys = []string{"ssh-ed25519 AAAA a\ncommand=\"x\" ssh-ed25519 BBBB b"}
		}, fieldErr(field.ErrorTypeInvalid, "spec.sshPublicKeys[0]", nil)),
		Entry("an agent URL without a host", func(s *firewallv1alpha1.FirewallSpec) { s.AgentURL = "https:///agent" },
			fieldErr(field.ErrorTypeInvalid, "spec.agentURL", "https:///agent")),
		Entry("an agent SHA-256 that is not 64 lowercase hex digits", func(s *firewallv1alpha1.FirewallSpec) { s.AgentSHA256 = "ABCD" },
			fieldErr(field.ErrorTypeInvalid, "spec.agentSHA256", "ABCD")),
		Entry("an agent SHA-512 that is not 128 lowercase hex digits", func(s *firewallv1alpha1.FirewallSpec) { s.AgentSHA512 = strings.Repeat("a", 64) },
			fieldErr(field.ErrorTypeInvalid, "spec.agentSHA512", strings.Repeat("a", 64))),
		Entry("an agent SHA-512 without the release it downloads", func(s *firewallv1alpha1.FirewallSpec) { s.AgentSHA512 = strings.Repeat("a", 128) },
			fieldErr(field.ErrorTypeRequired, "spec.agentVersion", nil)),
		Entry("too many userdata files", func(s *firewallv1alpha1.FirewallSpec) {
			s.UserdataContents = make([]firewallv1alpha1.UserdataContent, MaxUserdataContents+1)
		}, fieldErr(field.ErrorTypeTooMany, "spec.userdataContents", MaxUserdataContents+1)),
		Entry("a userdata path with a newline", func(s *firewallv1alpha1.FirewallSpec) { s.UserdataContents[0].Path = "/etc/a\nb" },
			fieldErr(field.ErrorTypeInvalid, "spec.userdataContents[0].path", "/etc/a\nb")),
		Entry("a userdata file over 1 MiB", func(s *firewallv1alpha1.FirewallSpec) {
			s.UserdataContents[0].Content = strings.Repeat("x", MaxUserdataContentBytes+1)
		}, fieldErr(field.ErrorTypeTooLong, "spec.userdataContents[0].content", nil)),
		Entry("a secretRef that is no Secret name", func(s *firewallv1alpha1.FirewallSpec) { s.UserdataContents[1].SecretRef.Name = "../x" },
			fieldErr(field.ErrorTypeInvalid, "spec.userdataContents[1].secretRef.name", "../x")),
	)

	It("accepts the largest lists", func() {
		spec := validSpec()
		spec.Networks = manyNetworks(MaxNetworks)
		spec.InternalPrefixes = slices.Repeat([]string{"10.0.0.0/8"}, MaxInternalPrefixes)
		spec.RateLimits[0].Rate = MaxRateMiBps
		Expect(ValidateFirewallSpec(spec, field.NewPath("spec"))).To(BeEmpty())
	})

	It("reports at most strict.MaxErrors errors of a Firewall, in a few KB", func() {
		fw := &firewallv1alpha1.Firewall{Spec: validSpec()}
		fw.Spec.InternalPrefixes = slices.Repeat([]string{strings.Repeat("x", 1000)}, MaxInternalPrefixes)
		errs := ValidateFirewall(fw)
		Expect(errs).To(HaveLen(strict.MaxErrors + 1))
		Expect(errs[strict.MaxErrors].Error()).To(Equal(fmt.Sprintf("spec: Invalid value: and %d more errors", MaxInternalPrefixes-strict.MaxErrors)))
		Expect(len(errs.ToAggregate().Error())).To(BeNumerically("<", 4096))
	})

	It("collects every error instead of stopping at the first", func() {
		spec := validSpec()
		spec.Image, spec.InternalPrefixes = "", []string{"nonsense"}
		Expect(ValidateFirewallSpec(spec, field.NewPath("spec"))).To(HaveLen(2))
	})
})
