package fqdn_test

import (
	"fmt"
	"math/rand/v2"
	"slices"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	. "github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/fqdn"
)

var _ = Describe("Matcher", func() {
	It("finds exactly the selectors that match, as comparing with each would", func() {
		r := rand.New(rand.NewPCG(1, 2))
		parts := []string{"a", "b", "ab", "example", "com", "s3", "*", "x-y", "_z"}
		word := func() string {
			n := 1 + r.IntN(3)
			s := ""
			for i := 0; i < n; i++ {
				s += parts[r.IntN(len(parts))]
			}
			return s
		}
		dotted := func(stars bool) string {
			n := 1 + r.IntN(4)
			s := ""
			for i := 0; i < n; i++ {
				w := word()
				if !stars {
					w = string(slices.DeleteFunc([]byte(w), func(c byte) bool { return c == '*' }))
					if w == "" {
						w = "q"
					}
				}
				if i > 0 {
					s += "."
				}
				s += w
			}
			return s
		}
		var selectors []Selector
		seen := map[Selector]bool{}
		for len(selectors) < 400 {
			s := Selector{Pattern: r.IntN(2) == 0}
			s.Name = dotted(s.Pattern)
			if !seen[s] {
				seen[s] = true
				selectors = append(selectors, s)
			}
		}
		selectors = append(selectors, Selector{Pattern: true, Name: "*"})
		m := NewMatcher(selectors)
		matched := 0
		for i := 0; i < 3000; i++ {
			name := dotted(false)
			var want []int
			for j, s := range selectors {
				if s.Matches(name) {
					want = append(want, j)
				}
			}
			got := m.Match(name, nil)
			slices.Sort(got)
			Expect(got).To(Equal(want), fmt.Sprintf("name %q", name))
			matched += len(got)
		}
		// Each name matches at least the lone *, and some match more.
		Expect(matched).To(BeNumerically(">", 3000))
	})

	It("matches nothing when it has no selector", func() {
		Expect(NewMatcher(nil).Match("a.example.com", nil)).To(BeEmpty())
	})
})
