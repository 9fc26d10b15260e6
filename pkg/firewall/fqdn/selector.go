package fqdn

import (
	"strings"

	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
)

// maxNameLength is the longest name in canonical form (no trailing dot).
const maxNameLength = 253

// Selector is an FQDN selector in canonical form: lower case, without the
// trailing dot. Two API selectors that mean the same are the same Selector.
type Selector struct {
	// Pattern tells that Name is a matchPattern.
	Pattern bool
	// Name is the name or pattern.
	Name string
}

// FromAPI returns the canonical form of a validated API selector.
func FromAPI(sel fwv1alpha1.FQDNSelector) Selector {
	if sel.MatchName != "" {
		return Selector{Name: canonicalText(sel.MatchName)}
	}
	return Selector{Pattern: true, Name: canonicalText(sel.MatchPattern)}
}

// API returns the selector as a policy writes it.
func (s Selector) API() fwv1alpha1.FQDNSelector {
	if s.Pattern {
		return fwv1alpha1.FQDNSelector{MatchPattern: s.Name}
	}
	return fwv1alpha1.FQDNSelector{MatchName: s.Name}
}

// Key is the selector as one string, "=name" or "~pattern": at most 254
// bytes, so that it fits a set's comment in the kernel (255).
func (s Selector) Key() string {
	if s.Pattern {
		return "~" + s.Name
	}
	return "=" + s.Name
}

// String is the selector as a person reads it.
func (s Selector) String() string {
	if s.Pattern {
		return "matchPattern " + s.Name
	}
	return "matchName " + s.Name
}

// ParseKey is the inverse of Key. It refuses what Key cannot have made (a
// comment in the kernel is not to be trusted blindly).
func ParseKey(key string) (Selector, bool) {
	if len(key) < 2 {
		return Selector{}, false
	}
	s := Selector{Pattern: key[0] == '~', Name: key[1:]}
	if key[0] != '~' && key[0] != '=' || len(s.Name) > maxNameLength || canonicalText(s.Name) != s.Name {
		return Selector{}, false
	}
	for i := 0; i < len(s.Name); i++ {
		if c := s.Name[i]; !isNameChar(c) && (!s.Pattern || c != '*') {
			return Selector{}, false
		}
	}
	return s, true
}

// Matches tells whether the selector matches a name in canonical form (see
// CanonicalName). A name matches a matchName when it is that name; a
// matchPattern when each * stands for some run, maybe empty, of letters,
// digits, '-', '_' and '.': as in the firewall-controller, whose GetRegex
// turns * into [-a-zA-Z0-9_.]*, a * may span labels, and a lone * matches
// every name.
func (s Selector) Matches(name string) bool {
	if !s.Pattern {
		return s.Name == name
	}
	return glob(s.Name, name)
}

// CanonicalName returns a DNS name as the selectors compare it: ASCII lower
// case, without the trailing dot. ok is false for a name with a character
// no selector can match (a blank, an escape such as \046, a byte beyond
// ASCII): such a name matches nothing.
func CanonicalName(name string) (string, bool) {
	name = strings.TrimSuffix(name, ".")
	if name == "" || len(name) > maxNameLength {
		return "", false
	}
	var b []byte
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c >= 'A' && c <= 'Z' {
			if b == nil {
				b = []byte(name)
			}
			b[i] = c + 'a' - 'A'
			continue
		}
		if !isNameChar(c) {
			return "", false
		}
	}
	if b != nil {
		return string(b), true
	}
	return name, true
}

// canonicalText lower-cases a selector's text and drops its trailing dot.
func canonicalText(s string) string {
	return strings.ToLower(strings.TrimSuffix(strings.TrimSpace(s), "."))
}

// isNameChar tells whether c may appear in a canonical name: the characters
// of the firewall-controller's [-a-zA-Z0-9_.], in lower case.
func isNameChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.'
}

// glob matches a pattern whose * stands for any run of characters against a
// canonical name, which holds name characters only: iterative, going back
// only to the last *, so it takes time linear in the lengths for patterns
// with one * and at most their product otherwise.
func glob(pattern, name string) bool {
	p, n := 0, 0
	star, mark := -1, 0
	for n < len(name) {
		switch {
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, n
			p++
		case p < len(pattern) && pattern[p] == name[n]:
			p++
			n++
		case star >= 0:
			mark++
			p, n = star+1, mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}
