package validation_test

import (
	"testing"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/apis/acl/validation"
)

// FuzzParse: no providerConfig panics the decoder or the validation, and
// what they report stays a few KB whatever they are fed.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		`{"rule":{"action":"ALLOW","type":"remote_ip","cidrs":["1.2.3.4/24","2001:db8::/32"]}}`,
		"rule:\n  action: deny\n  type: source_ip\n  cidrs: [10.0.0.0/8, \"::ffff:1.2.3.4/128\"]\n",
		`{"apiVersion":"acl.metal-firewall.io/v1alpha1","kind":"ExtensionConfig","rule":{"action":"Allow","type":"direct_remote_ip","cidrs":[" 1.2.3.4/32 "]}}`,
		`{"rule":{"Action":"ALLOW"}}`, `{"rule":{}}{}`, "rule: {}\n---\nrule: {}", "\xff", "[", "null",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		p, errs := validation.Parse(raw, validation.Limits{})
		if len(errs) == 0 {
			if p == nil || len(p.CIDRs) == 0 {
				t.Fatalf("accepted %q without CIDRs", raw)
			}
			return
		}
		if n := len(errs.ToAggregate().Error()); n > 8192 {
			t.Fatalf("error of %d bytes for %d bytes of input", n, len(raw))
		}
	})
}
