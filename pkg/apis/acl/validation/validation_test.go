package validation_test

import (
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/apis/acl/validation"
)

func TestParseAcceptsTheExistingShape(t *testing.T) {
	for name, raw := range map[string]string{
		"json":            `{"rule":{"action":"ALLOW","type":"remote_ip","cidrs":["1.2.3.4/24","2001:db8::/32"]}}`,
		"yaml":            "rule:\n  action: ALLOW\n  type: remote_ip\n  cidrs: [\"1.2.3.4/24\", \"2001:db8::/32\"]\n",
		"lower-case":      `{"rule":{"action":"allow","type":"REMOTE_IP","cidrs":["2001:db8::/32","1.2.3.0/24","1.2.3.9/24"]}}`,
		"with-apiVersion": `{"apiVersion":"acl.metal-firewall.io/v1alpha1","kind":"ExtensionConfig","rule":{"action":"Allow","type":"remote_ip","cidrs":["1.2.3.4/24","2001:db8::1/32"]}}`,
	} {
		t.Run(name, func(t *testing.T) {
			p, errs := validation.Parse([]byte(raw), validation.Limits{})
			if len(errs) > 0 {
				t.Fatalf("unexpected errors: %v", errs)
			}
			want := []netip.Prefix{netip.MustParsePrefix("1.2.3.0/24"), netip.MustParsePrefix("2001:db8::/32")}
			if p.Action != "ALLOW" || p.Type != "remote_ip" || len(p.CIDRs) != 2 || p.CIDRs[0] != want[0] || p.CIDRs[1] != want[1] {
				t.Fatalf("got %+v, want ALLOW remote_ip %v", p, want)
			}
		})
	}
}

func TestParseMapsTypesAndActions(t *testing.T) {
	p, errs := validation.Parse([]byte(`{"rule":{"action":"deny","type":"source_ip","cidrs":["10.0.0.0/8"]}}`), validation.Limits{})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if p.Action != "DENY" || p.Type != "direct_remote_ip" {
		t.Fatalf("got %+v", p)
	}
}

func TestParseRefusesBadInput(t *testing.T) {
	for _, tc := range []struct {
		name, raw string
		limits    validation.Limits
		// every string must occur in the error text: field path and value
		want []string
	}{
		{"empty", ``, validation.Limits{}, []string{"providerConfig", "Required"}},
		{"not json", `{rule: [`, validation.Limits{}, []string{"providerConfig", "not valid JSON or YAML"}},
		{"no rule", `{}`, validation.Limits{}, []string{"providerConfig.rule", "Required"}},
		{"unknown top-level field", `{"rule":{"action":"ALLOW","type":"remote_ip","cidrs":["1.2.3.4/32"]},"rules":[]}`, validation.Limits{}, []string{"providerConfig", `unknown field "rules"`}},
		{"unknown rule field", `{"rule":{"action":"ALLOW","type":"remote_ip","cidrs":["1.2.3.4/32"],"ports":[443]}}`, validation.Limits{}, []string{"providerConfig", `unknown field "rule.ports"`}},
		{"field in wrong case", `{"rule":{"Action":"ALLOW","type":"remote_ip","cidrs":["1.2.3.4/32"]}}`, validation.Limits{}, []string{`unknown field "rule.Action"`}},
		{"duplicate field", `{"rule":{"action":"ALLOW","action":"DENY","type":"remote_ip","cidrs":["1.2.3.4/32"]}}`, validation.Limits{}, []string{"providerConfig", "action"}},
		{"bad action", `{"rule":{"action":"PERMIT","type":"remote_ip","cidrs":["1.2.3.4/32"]}}`, validation.Limits{}, []string{"providerConfig.rule.action", `"PERMIT"`, "ALLOW", "DENY"}},
		{"empty action", `{"rule":{"type":"remote_ip","cidrs":["1.2.3.4/32"]}}`, validation.Limits{}, []string{"providerConfig.rule.action", "Unsupported value"}},
		{"bad type", `{"rule":{"action":"ALLOW","type":"header","cidrs":["1.2.3.4/32"]}}`, validation.Limits{}, []string{"providerConfig.rule.type", `"header"`, "remote_ip"}},
		{"no cidrs", `{"rule":{"action":"ALLOW","type":"remote_ip","cidrs":[]}}`, validation.Limits{}, []string{"providerConfig.rule.cidrs", "Required"}},
		{"missing cidrs", `{"rule":{"action":"ALLOW","type":"remote_ip"}}`, validation.Limits{}, []string{"providerConfig.rule.cidrs", "Required"}},
		{"not a cidr", `{"rule":{"action":"ALLOW","type":"remote_ip","cidrs":["1.2.3.4/32","1.2.3.400/24"]}}`, validation.Limits{}, []string{"providerConfig.rule.cidrs[1]", `"1.2.3.400/24"`}},
		{"bare address", `{"rule":{"action":"ALLOW","type":"remote_ip","cidrs":["1.2.3.4"]}}`, validation.Limits{}, []string{"providerConfig.rule.cidrs[0]", `"1.2.3.4"`}},
		{"prefix too long", `{"rule":{"action":"ALLOW","type":"remote_ip","cidrs":["1.2.3.4/33"]}}`, validation.Limits{}, []string{"providerConfig.rule.cidrs[0]", `"1.2.3.4/33"`}},
		{"v6 prefix too long", `{"rule":{"action":"ALLOW","type":"remote_ip","cidrs":["2001:db8::/129"]}}`, validation.Limits{}, []string{"providerConfig.rule.cidrs[0]", `"2001:db8::/129"`}},
		{"v4-mapped", `{"rule":{"action":"ALLOW","type":"remote_ip","cidrs":["::ffff:1.2.3.4/128"]}}`, validation.Limits{}, []string{"providerConfig.rule.cidrs[0]", "IPv4-mapped"}},
		{"too many", `{"rule":{"action":"ALLOW","type":"remote_ip","cidrs":["1.0.0.0/8","2.0.0.0/8","3.0.0.0/8"]}}`, validation.Limits{MaxCIDRs: 2}, []string{"providerConfig.rule.cidrs", "Too many", "3", "2"}},
		{"wrong apiVersion", `{"apiVersion":"acl.stackit.cloud/v1","rule":{"action":"ALLOW","type":"remote_ip","cidrs":["1.2.3.4/32"]}}`, validation.Limits{}, []string{"providerConfig.apiVersion", "acl.stackit.cloud/v1"}},
		{"wrong kind", `{"kind":"Firewall","rule":{"action":"ALLOW","type":"remote_ip","cidrs":["1.2.3.4/32"]}}`, validation.Limits{}, []string{"providerConfig.kind", "Firewall"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, errs := validation.Parse([]byte(tc.raw), tc.limits)
			if len(errs) == 0 {
				t.Fatalf("accepted %s as %+v", tc.raw, p)
			}
			msg := errs.ToAggregate().Error()
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not contain %q", msg, w)
				}
			}
		})
	}
}

func TestDefaultLimitAcceptsManyCIDRs(t *testing.T) {
	var cidrs []string
	for i := range validation.DefaultMaxCIDRs {
		cidrs = append(cidrs, `"10.`+strconv.Itoa(i/256)+`.`+strconv.Itoa(i%256)+`.0/24"`)
	}
	raw := `{"rule":{"action":"ALLOW","type":"remote_ip","cidrs":[` + strings.Join(cidrs, ",") + `]}}`
	if _, errs := validation.Parse([]byte(raw), validation.Limits{}); len(errs) > 0 {
		t.Fatal(errs)
	}
	raw = `{"rule":{"action":"ALLOW","type":"remote_ip","cidrs":[` + strings.Join(append(cidrs, `"11.0.0.0/8"`), ",") + `]}}`
	if _, errs := validation.Parse([]byte(raw), validation.Limits{}); len(errs) == 0 {
		t.Fatal("one CIDR over the default limit was accepted")
	}
}
