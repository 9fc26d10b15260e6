package validation_test

import (
	"net/netip"
	"strconv"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/apis/acl/validation"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/strict"
)

var _ = Describe("Parse", func() {
	DescribeTable("accepts the existing shape",
		func(raw string) {
			p, errs := validation.Parse([]byte(raw), validation.Limits{})
			Expect(errs).To(BeEmpty())
			want := []netip.Prefix{netip.MustParsePrefix("1.2.3.0/24"), netip.MustParsePrefix("2001:db8::/32")}
			Expect(p.Action).To(Equal("ALLOW"))
			Expect(p.Type).To(Equal("remote_ip"))
			Expect(p.CIDRs).To(Equal(want))
		},
		Entry("json", `{"rule":{"action":"ALLOW","type":"remote_ip","cidrs":["1.2.3.4/24","2001:db8::/32"]}}`),
		Entry("yaml", "rule:\n  action: ALLOW\n  type: remote_ip\n  cidrs: [\"1.2.3.4/24\", \"2001:db8::/32\"]\n"),
		Entry("lower-case", `{"rule":{"action":"allow","type":"REMOTE_IP","cidrs":["2001:db8::/32","1.2.3.0/24","1.2.3.9/24"]}}`),
		Entry("with-apiVersion", `{"apiVersion":"acl.metal-firewall.io/v1alpha1","kind":"ExtensionConfig","rule":{"action":"Allow","type":"remote_ip","cidrs":["1.2.3.4/24","2001:db8::1/32"]}}`),
	)

	It("maps types and actions", func() {
		p, errs := validation.Parse([]byte(`{"rule":{"action":"deny","type":"source_ip","cidrs":["10.0.0.0/8"]}}`), validation.Limits{})
		Expect(errs).To(BeEmpty())
		Expect(p.Action).To(Equal("DENY"))
		Expect(p.Type).To(Equal("direct_remote_ip"))
	})

	// Every string in want must occur in the error text: field path and value.
	DescribeTable("refuses bad input",
		func(raw string, limits validation.Limits, want ...string) {
			p, errs := validation.Parse([]byte(raw), limits)
			Expect(errs).NotTo(BeEmpty(), "accepted as %+v", p)
			msg := errs.ToAggregate().Error()
			for _, w := range want {
				Expect(msg).To(ContainSubstring(w))
			}
			Expect(len(msg)).To(BeNumerically("<", 4096))
		},
		Entry("empty", ``, validation.Limits{}, "providerConfig", "Required"),
		Entry("not json", `{rule: [`, validation.Limits{}, "providerConfig", "not valid JSON or YAML"),
		Entry("no rule", `{}`, validation.Limits{}, "providerConfig.rule", "Required"),
		Entry("unknown top-level field", `{"rule":{"action":"ALLOW","type":"remote_ip","cidrs":["1.2.3.4/32"]},"rules":[]}`, validation.Limits{}, "providerConfig", `unknown field "rules"`),
		Entry("unknown rule field", `{"rule":{"action":"ALLOW","type":"remote_ip","cidrs":["1.2.3.4/32"],"ports":[443]}}`, validation.Limits{}, "providerConfig", `unknown field "rule.ports"`),
		Entry("field in wrong case", `{"rule":{"Action":"ALLOW","type":"remote_ip","cidrs":["1.2.3.4/32"]}}`, validation.Limits{}, `unknown field "rule.Action"`),
		Entry("duplicate field", `{"rule":{"action":"ALLOW","action":"DENY","type":"remote_ip","cidrs":["1.2.3.4/32"]}}`, validation.Limits{}, "providerConfig", "action"),
		Entry("bad action", `{"rule":{"action":"PERMIT","type":"remote_ip","cidrs":["1.2.3.4/32"]}}`, validation.Limits{}, "providerConfig.rule.action", `"PERMIT"`, "ALLOW", "DENY"),
		Entry("empty action", `{"rule":{"type":"remote_ip","cidrs":["1.2.3.4/32"]}}`, validation.Limits{}, "providerConfig.rule.action", "Unsupported value"),
		Entry("bad type", `{"rule":{"action":"ALLOW","type":"header","cidrs":["1.2.3.4/32"]}}`, validation.Limits{}, "providerConfig.rule.type", `"header"`, "remote_ip"),
		Entry("no cidrs", `{"rule":{"action":"ALLOW","type":"remote_ip","cidrs":[]}}`, validation.Limits{}, "providerConfig.rule.cidrs", "Required"),
		Entry("missing cidrs", `{"rule":{"action":"ALLOW","type":"remote_ip"}}`, validation.Limits{}, "providerConfig.rule.cidrs", "Required"),
		Entry("not a cidr", `{"rule":{"action":"ALLOW","type":"remote_ip","cidrs":["1.2.3.4/32","1.2.3.400/24"]}}`, validation.Limits{}, "providerConfig.rule.cidrs[1]", `"1.2.3.400/24"`),
		Entry("bare address", `{"rule":{"action":"ALLOW","type":"remote_ip","cidrs":["1.2.3.4"]}}`, validation.Limits{}, "providerConfig.rule.cidrs[0]", `"1.2.3.4"`),
		Entry("prefix too long", `{"rule":{"action":"ALLOW","type":"remote_ip","cidrs":["1.2.3.4/33"]}}`, validation.Limits{}, "providerConfig.rule.cidrs[0]", `"1.2.3.4/33"`),
		Entry("v6 prefix too long", `{"rule":{"action":"ALLOW","type":"remote_ip","cidrs":["2001:db8::/129"]}}`, validation.Limits{}, "providerConfig.rule.cidrs[0]", `"2001:db8::/129"`),
		Entry("v4-mapped", `{"rule":{"action":"ALLOW","type":"remote_ip","cidrs":["::ffff:1.2.3.4/128"]}}`, validation.Limits{}, "providerConfig.rule.cidrs[0]", "IPv4-mapped"),
		Entry("too many", `{"rule":{"action":"ALLOW","type":"remote_ip","cidrs":["1.0.0.0/8","2.0.0.0/8","3.0.0.0/8"]}}`, validation.Limits{MaxCIDRs: 2}, "providerConfig.rule.cidrs", "Too many", "3", "2"),
		Entry("wrong apiVersion", `{"apiVersion":"acl.stackit.cloud/v1","rule":{"action":"ALLOW","type":"remote_ip","cidrs":["1.2.3.4/32"]}}`, validation.Limits{}, "providerConfig.apiVersion", "acl.stackit.cloud/v1"),
		Entry("wrong kind", `{"kind":"Firewall","rule":{"action":"ALLOW","type":"remote_ip","cidrs":["1.2.3.4/32"]}}`, validation.Limits{}, "providerConfig.kind", "Firewall"),
		Entry("trailing content", `{"rule":{"action":"ALLOW","type":"remote_ip","cidrs":["1.2.3.4/32"]}}{"rule":{"action":"DENY"}}`, validation.Limits{},
			"providerConfig", "trailing content after the document"),
		Entry("a second YAML document", "rule: {action: ALLOW, type: remote_ip, cidrs: [1.2.3.4/32]}\n---\nrule: {action: DENY, type: remote_ip, cidrs: [1.2.3.4/32]}\n", validation.Limits{},
			"providerConfig", "more than one document"),
		Entry("a 500 KB action, quoted as an excerpt", `{"rule":{"action":"`+strings.Repeat("A", 500<<10)+`","type":"remote_ip","cidrs":["1.2.3.4/32"]}}`, validation.Limits{},
			"providerConfig.rule.action", `"`+strings.Repeat("A", 64)+`... (512000 bytes)"`),
		Entry("a 500 KB CIDR, quoted as an excerpt", `{"rule":{"action":"ALLOW","type":"remote_ip","cidrs":["1.2.3.4/`+strings.Repeat("3", 500<<10)+`"]}}`, validation.Limits{},
			"providerConfig.rule.cidrs[0]", `"1.2.3.4/333`, "(512008 bytes)", "may not be more than 64 bytes"),
	)

	It("accepts 500 CIDRs by default and refuses one more", func() {
		var cidrs []string
		for i := range validation.DefaultMaxCIDRs {
			cidrs = append(cidrs, `"10.`+strconv.Itoa(i/256)+`.`+strconv.Itoa(i%256)+`.0/24"`)
		}
		raw := `{"rule":{"action":"ALLOW","type":"remote_ip","cidrs":[` + strings.Join(cidrs, ",") + `]}}`
		_, errs := validation.Parse([]byte(raw), validation.Limits{})
		Expect(errs).To(BeEmpty())
		raw = `{"rule":{"action":"ALLOW","type":"remote_ip","cidrs":[` + strings.Join(append(cidrs, `"11.0.0.0/8"`), ",") + `]}}`
		_, errs = validation.Parse([]byte(raw), validation.Limits{})
		Expect(errs).NotTo(BeEmpty(), "one CIDR over the default limit was accepted")
	})

	Context("a hostile providerConfig", func() {
		// unknownFields returns a rule followed by unknown fields with long
		// names, about n bytes.
		unknownFields := func(n int) []byte {
			var b strings.Builder
			b.WriteString(`{"rule":{"action":"ALLOW","type":"remote_ip","cidrs":["1.2.3.4/32"]}`)
			for i := 0; b.Len() < n; i++ {
				b.WriteString(`,"unknown-` + strconv.Itoa(i) + strings.Repeat("x", 1000) + `":"` + strings.Repeat("v", 1000) + `"`)
			}
			b.WriteString("}")
			return []byte(b.String())
		}

		It("of 1 MB yields an error of a few hundred bytes", func() {
			_, errs := validation.Parse(unknownFields(1<<20), validation.Limits{})
			Expect(errs).To(HaveLen(1))
			msg := errs.ToAggregate().Error()
			Expect(msg).To(ContainSubstring("providerConfig: Too long: may not be more than 524288 bytes"))
			Expect(len(msg)).To(BeNumerically("<", 1024))
		})

		It("just under the size bound yields at most strict.MaxErrors errors in a few KB", func() {
			raw := unknownFields(validation.MaxProviderConfigBytes - 3000)
			Expect(len(raw)).To(BeNumerically("<=", validation.MaxProviderConfigBytes))
			_, errs := validation.Parse(raw, validation.Limits{})
			Expect(errs).To(HaveLen(strict.MaxErrors + 1))
			msg := errs.ToAggregate().Error()
			Expect(msg).To(ContainSubstring(`unknown field "unknown-0xxx`))
			Expect(len(msg)).To(BeNumerically("<", 8192))
		})

		It("with thousands of bad CIDRs yields at most strict.MaxErrors errors", func() {
			raw := `{"rule":{"action":"ALLOW","type":"remote_ip","cidrs":[` + strings.TrimSuffix(strings.Repeat(`"nonsense-cidr-`+strings.Repeat("x", 40)+`",`, 5000), ",") + `]}}`
			_, errs := validation.Parse([]byte(raw), validation.Limits{MaxCIDRs: 10000})
			Expect(errs).To(HaveLen(strict.MaxErrors + 1))
			Expect(errs[strict.MaxErrors].Error()).To(Equal("providerConfig: Invalid value: and 4990 more errors"))
			Expect(len(errs.ToAggregate().Error())).To(BeNumerically("<", 4096))
		})
	})
})
