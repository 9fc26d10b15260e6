package fqdn_test

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	. "github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/fqdn"
)

var _ = Describe("Selector", func() {
	It("is canonical: case, a trailing dot and the field do not make another selector", func() {
		Expect(FromAPI(fwv1alpha1.FQDNSelector{MatchName: "API.GitHub.com."})).To(Equal(Selector{Name: "api.github.com"}))
		Expect(FromAPI(fwv1alpha1.FQDNSelector{MatchPattern: "*.Example.COM"})).To(Equal(Selector{Pattern: true, Name: "*.example.com"}))
		Expect(FromAPI(fwv1alpha1.FQDNSelector{MatchName: "a.example.com"}).Key()).
			To(Equal(FromAPI(fwv1alpha1.FQDNSelector{MatchName: "A.example.com."}).Key()))
		Expect(FromAPI(fwv1alpha1.FQDNSelector{MatchName: "a.example.com"}).Key()).
			NotTo(Equal(FromAPI(fwv1alpha1.FQDNSelector{MatchPattern: "a.example.com"}).Key()), "a name and a pattern of the same text are two selectors")
	})

	It("round-trips through its key, which fits a kernel comment", func() {
		for _, s := range []Selector{{Name: "api.github.com"}, {Pattern: true, Name: "*"}, {Pattern: true, Name: strings.Repeat("a*", 126) + "a"}} {
			Expect(len(s.Key())).To(BeNumerically("<=", 254))
			back, ok := ParseKey(s.Key())
			Expect(ok).To(BeTrue())
			Expect(back).To(Equal(s))
			Expect(back.API()).To(Equal(func() fwv1alpha1.FQDNSelector {
				if s.Pattern {
					return fwv1alpha1.FQDNSelector{MatchPattern: s.Name}
				}
				return fwv1alpha1.FQDNSelector{MatchName: s.Name}
			}()))
		}
	})

	DescribeTable("ParseKey refuses what Key cannot have made",
		func(key string) {
			_, ok := ParseKey(key)
			Expect(ok).To(BeFalse())
		},
		Entry("empty", ""), Entry("no name", "="), Entry("another prefix", "#a.com"),
		Entry("upper case", "=A.com"), Entry("a trailing dot", "=a.com."), Entry("a star in a name", "=*.com"),
		Entry("a blank", "~a *.com"), Entry("too long", "="+strings.Repeat("a", 254)), Entry("a control character", "=a\n.com"),
	)

	DescribeTable("CanonicalName",
		func(in, want string, ok bool) {
			got, gotOK := CanonicalName(in)
			Expect(gotOK).To(Equal(ok))
			Expect(got).To(Equal(want))
		},
		Entry("lower-cases and drops the dot", "WWW.Example.COM.", "www.example.com", true),
		Entry("keeps a canonical name", "a-b_c.example.com", "a-b_c.example.com", true),
		Entry("refuses an escape", `a\046b.example.com.`, "", false),
		Entry("refuses a blank", "a b.example.com.", "", false),
		Entry("refuses a byte beyond ASCII", "\xc3\xa4.example.com.", "", false),
		Entry("refuses the root", ".", "", false),
		Entry("refuses a name too long", strings.Repeat("a", 254)+".", "", false),
	)

	// The names a hostile or careless resolver may answer and the patterns
	// shoot owners write; every pair must be decided as the
	// firewall-controller decides it.
	patterns := []string{"*", "*.example.com", "*example.com", "example.*", "ww*.freechess.org", "*.s3.*.example.com",
		"a*b*c.example.com", "api.github.com", "*.*", "**.example.com", "x*", "*-*.example.com", "*.com"}
	names := []string{"example.com", "a.example.com", "a.b.example.com", "aexample.com", ".example.com", "example.org",
		"www.freechess.org", "ww.freechess.org", "w.freechess.org", "b.s3.eu.example.com", "s3.eu.example.com",
		"b.s3..example.com", "abc.example.com", "axbxc.example.com", "ac.example.com", "api.github.com", "API.GitHub.com.",
		"com", "x", "x-y.example.com", "-.example.com", "under_score.example.com", "sub.example.com.evil.org"}

	It("matches patterns exactly as the firewall-controller's GetRegex does", func() {
		checked := 0
		for _, p := range patterns {
			sel := FromAPI(fwv1alpha1.FQDNSelector{MatchPattern: p})
			for _, n := range names {
				canonical, ok := CanonicalName(n)
				Expect(ok).To(BeTrue(), n)
				Expect(sel.Matches(canonical)).To(Equal(firewallControllerMatches(p, n)), "pattern %q, name %q", p, n)
				checked++
			}
		}
		Expect(checked).To(Equal(len(patterns) * len(names)))
	})

	It("lets a * span labels, as the firewall-controller's does", func() {
		sel := Selector{Pattern: true, Name: "*.example.com"}
		Expect(sel.Matches("a.example.com")).To(BeTrue())
		Expect(sel.Matches("a.b.example.com")).To(BeTrue())
		Expect(sel.Matches("example.com")).To(BeFalse())
		Expect(sel.Matches("aexample.com")).To(BeFalse())
		Expect(sel.Matches("example.com.evil.org")).To(BeFalse())
	})

	It("matches names exactly, without regard to case", func() {
		sel := FromAPI(fwv1alpha1.FQDNSelector{MatchName: "API.github.com"})
		name, _ := CanonicalName("api.GITHUB.com.")
		Expect(sel.Matches(name)).To(BeTrue())
		Expect(sel.Matches("www.api.github.com")).To(BeFalse())
		Expect(sel.Matches("api.github.co")).To(BeFalse())
	})
})
