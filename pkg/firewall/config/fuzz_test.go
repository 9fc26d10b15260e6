package config_test

import (
	"testing"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/config"
)

// FuzzParse: no config file panics the loader, an accepted one enables a
// controller that contributes rules, and what is reported stays a few KB
// whatever it is fed.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		valid, "", "sources: null\n", "name: fw\n", valid[:len(valid)/2],
		"sources:\n  seed: {bootstrapKubeconfig: /etc/firewall-agent/b, kubeconfig: /etc/firewall-agent/s, namespace: shoot--p--s}\n" +
			"  shoot: {namespace: firewall, accessSecret: a, kubeconfig: /etc/firewall-agent/../x}\ncontrollers: {firewall: {source: seed}, cwnp: {source: shoot}}\n",
		"sources: {static: {firewall: {rateLimits: [{networkID: n, rate: 17593}]}}}\nnetworks: [{id: n, interface: eth0}]\ncontrollers: {firewall: {source: static}}\n",
		valid + "dns: {upstreams: [10.0.0.53, \"2001:db8::53\"], port: 5353, minTTL: 5s, grace: 1m, maxSelectors: 10}\n",
		"\xff", "[", "null",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		cfg, err := config.Parse(raw)
		if err != nil {
			if n := len(err.Error()); n > 8192 {
				t.Fatalf("error of %d bytes for %d bytes of input", n, len(raw))
			}
			return
		}
		if c := cfg.Controllers; c.Firewall == nil && c.CWNP == nil && c.Service == nil {
			t.Fatalf("accepted %q, which enables no controller that contributes rules", raw)
		}
	})
}
