package fqdn_test

import (
	"testing"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/fqdn"
)

// FuzzMatches: whatever the pattern and the name, the matcher decides as the
// firewall-controller's GetRegex does, and never panics.
func FuzzMatches(f *testing.F) {
	for _, seed := range [][2]string{{"*.example.com", "a.b.example.com"}, {"*", "x"}, {"a*b*c", "aXbYc"}, {"example.*", "example.com."}} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, pattern, name string) {
		if len(pattern) > 300 || len(name) > 300 {
			return
		}
		sel := fqdn.Selector{Pattern: true, Name: pattern}
		canonical, ok := fqdn.CanonicalName(name)
		if key, valid := fqdn.ParseKey(sel.Key()); !valid || !ok || key != sel {
			return // not a pattern validation accepts, or a name nothing matches
		}
		if got, want := sel.Matches(canonical), firewallControllerMatches(pattern, name); got != want {
			t.Fatalf("pattern %q, name %q: matched %v, the firewall-controller %v", pattern, name, got, want)
		}
		if got := len(fqdn.NewMatcher([]fqdn.Selector{sel}).Match(canonical, nil)) == 1; got != sel.Matches(canonical) {
			t.Fatalf("pattern %q, name %q: the matcher says %v", pattern, name, got)
		}
	})
}
