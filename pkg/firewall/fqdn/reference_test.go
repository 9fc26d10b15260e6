package fqdn_test

import (
	"regexp"
	"strings"
)

// firewallControllerMatches is the reference: how metal-stack's
// firewall-controller (api/v1 FQDNSelector.GetRegex and its DNS cache)
// decides that a pattern matches a name, rebuilt here so that the matcher is
// checked against it: the pattern lower-cased with a trailing dot, '.'
// literal, '*' as [-a-zA-Z0-9_.]*, a lone '*' for every name; the name from
// DNS lower-cased, with its trailing dot.
func firewallControllerMatches(pattern, name string) bool {
	const chars = "[-a-zA-Z0-9_.]"
	name = strings.ToLower(name)
	if !strings.HasSuffix(name, ".") {
		name += "."
	}
	var re string
	if pattern == "*" {
		re = "(^(" + chars + "+[.])+$)|(^[.]$)"
	} else {
		p := strings.ToLower(strings.TrimSpace(pattern))
		if !strings.HasSuffix(p, ".") {
			p += "."
		}
		p = strings.ReplaceAll(p, ".", "[.]")
		p = strings.ReplaceAll(p, "*", chars+"*")
		re = "^" + p + "$"
	}
	return regexp.MustCompile(re).MatchString(name)
}
