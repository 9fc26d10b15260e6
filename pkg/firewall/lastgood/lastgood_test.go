package lastgood_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/lastgood"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/ruleset"
)

var _ = Describe("Save and Load", func() {
	var path string
	BeforeEach(func() { path = filepath.Join(GinkgoT().TempDir(), "state", "last-good-ruleset.json") })

	built := func() *ruleset.Ruleset {
		rs, err := ruleset.Build(&fwv1alpha1.FirewallTrafficSpec{InternalPrefixes: []string{"10.0.0.0/8", "fd00::/8"}},
			[]*fwv1alpha1.PolicySpec{{Egress: []fwv1alpha1.EgressRule{{To: []fwv1alpha1.IPBlock{{CIDR: "203.0.113.0/24"}, {CIDR: "2001:db8::/32"}}}}}}, nil)
		Expect(err).NotTo(HaveOccurred())
		return rs
	}

	It("round-trips a ruleset into a root-only file in a root-only directory", func() {
		rs := built()
		Expect(lastgood.Save(path, rs)).To(Succeed())
		got, err := lastgood.Load(path)
		Expect(err).NotTo(HaveOccurred())
		Expect(ruleset.Render(got)).To(Equal(ruleset.Render(rs)))
		Expect(got).To(Equal(rs))
		for p, mode := range map[string]os.FileMode{path: 0o600, filepath.Dir(path): 0o700} {
			info, err := os.Stat(p)
			Expect(err).NotTo(HaveOccurred())
			Expect(info.Mode().Perm()).To(Equal(mode), p)
		}
		By("a writer killed before its rename left a temporary file, which the next save removes")
		leftover := filepath.Join(filepath.Dir(path), ".last-good-ruleset.json-123")
		Expect(os.WriteFile(leftover, []byte("{"), 0o600)).To(Succeed())
		Expect(lastgood.Save(path, rs)).To(Succeed())
		entries, err := os.ReadDir(filepath.Dir(path))
		Expect(err).NotTo(HaveOccurred())
		Expect(entries).To(HaveLen(1), "no temporary file left")
	})

	It("reports an absent file as not existing", func() {
		_, err := lastgood.Load(path)
		Expect(err).To(MatchError(fs.ErrNotExist))
	})

	DescribeTable("refuses a file it must not install",
		func(content, msg string) {
			Expect(os.MkdirAll(filepath.Dir(path), 0o700)).To(Succeed())
			Expect(os.WriteFile(path, []byte(content), 0o600)).To(Succeed())
			_, err := lastgood.Load(path)
			Expect(err).To(MatchError(ContainSubstring(msg)))
			Expect(err).To(MatchError(ContainSubstring(path)))
		},
		Entry("cut short", `{"version":1,"ruleset":{"Table":"firewall-agent","Chains":[`, "decoding: unexpected EOF"),
		Entry("trailing data", `{"version":1,"ruleset":{"Table":"firewall-agent"}} {}`, "trailing data"),
		Entry("unknown field", `{"version":1,"rules":{}}`, `unknown field "rules"`),
		Entry("another version", `{"version":2,"ruleset":{"Table":"firewall-agent"}}`, "version: 2, this agent reads 1"),
		Entry("no ruleset", `{"version":1}`, "ruleset: missing"),
		Entry("another table", `{"version":1,"ruleset":{"Table":"filter"}}`, `ruleset.Table: "filter"`),
		Entry("forwarding open", `{"version":1,"ruleset":{"Table":"firewall-agent","Chains":[{"Name":"forward","Hook":"forward","Type":"filter"}]}}`,
			"no forward chain with policy drop"),
		Entry("a null chain", `{"version":1,"ruleset":{"Table":"firewall-agent","Chains":[null]}}`, "ruleset.Chains[0]: missing"),
	)

	It("refuses a file larger than MaxBytes without reading it all", func() {
		Expect(os.MkdirAll(filepath.Dir(path), 0o700)).To(Succeed())
		f, err := os.Create(path)
		Expect(err).NotTo(HaveOccurred())
		Expect(f.Truncate(lastgood.MaxBytes + 1)).To(Succeed())
		Expect(f.Close()).To(Succeed())
		_, err = lastgood.Load(path)
		Expect(err).To(MatchError(ContainSubstring("larger than")))
	})

	It("accepts the closed table", func() {
		Expect(lastgood.Save(path, ruleset.Closed())).To(Succeed())
		got, err := lastgood.Load(path)
		Expect(err).NotTo(HaveOccurred())
		Expect(strings.Contains(ruleset.Render(got), "policy drop")).To(BeTrue())
	})
})
