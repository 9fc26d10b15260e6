package validation_test

import (
	"testing"

	. "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/validation"
)

// FuzzDecodeFirewallExtensionConfig: no providerConfig panics the decoder or
// the validation, and what they report stays a few KB whatever they are fed.
func FuzzDecodeFirewallExtensionConfig(f *testing.F) {
	for _, seed := range []string{
		`{"size":"c1-xlarge-x86","image":"firewall-ubuntu-3.0","partition":"fra-equ01","project":"p1","networks":["internet"]}`,
		"size: s1\nimage: i1\npartition: p1\nproject: p1\nnetworks: [internet, tenant]\ninternalPrefixes: [10.0.0.0/8, \"fd00::/64\"]\n" +
			"egressRules: [{networkID: internet, ips: [192.0.2.1, \"2001:db8::1\"]}]\nrateLimits: [{interface: eth1, rate: 17592}]\nstrategy: Recreate\n",
		`{"size":"s","SIZE":"t"}`, "size: a\n---\nsize: b", `{"rateLimits":[{"networkID":"x","rate":4294967295}]}`,
		`{"agentURL":"https://example.org/a","agentVersion":"v1"}`, "\xff", "[", "null",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		_, err := DecodeFirewallExtensionConfig(raw)
		if err != nil && len(err.Error()) > 8192 {
			t.Fatalf("error of %d bytes for %d bytes of input", len(err.Error()), len(raw))
		}
	})
}
