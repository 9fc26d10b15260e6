package main

import (
	"os"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("the enforcement narration", func() {
	// testdata/ruleset.nft is a real agent table.
	var ruleset string
	BeforeEach(func() {
		raw, err := os.ReadFile("testdata/ruleset.nft")
		Expect(err).NotTo(HaveOccurred())
		ruleset = string(raw)
	})

	It("excerpts the rules that act and the sets with elements, and counts what it leaves out", func() {
		got := excerpt(ruleset)
		for _, want := range []string{
			"table inet firewall-agent {",
			"set internal_v4 {",
			"elements = { 10.250.0.0/24 }",
			"type filter hook forward priority filter; policy drop;",
			`ct state established,related counter packets 4 bytes 208 accept comment "established c77fde03"`,
			"... 18 rules that look up empty sets, left out",
			`counter packets 0 bytes 0 drop comment "drop 31e1ec47"`,
			"type nat hook postrouting priority srcnat; policy accept;",
			"(19 empty sets, 4 maps and 4 chains of empty shards left out)",
		} {
			Expect(got).To(ContainSubstring(want), "excerpt lacks %q", want)
		}
		Expect(got).NotTo(ContainSubstring("egress_v4_0"), "excerpt lists an empty set")
		Expect(got).NotTo(ContainSubstring("egress_v4_shards"), "excerpt lists a shard map")
	})

	It("reads the drop counter", func() {
		n, err := dropCounter(strings.Replace(ruleset, `counter packets 0 bytes 0 drop comment "drop`, `counter packets 3 bytes 180 drop comment "drop`, 1))
		Expect(err).NotTo(HaveOccurred())
		Expect(n).To(BeEquivalentTo(3))
	})
})
