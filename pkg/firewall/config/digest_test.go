package config_test

import (
	"bytes"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	agentconfigv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/config"
)

// A config cut at a line boundary still decodes, with rules missing
// (issue #30, finding 5): the digest the extension writes first catches it.
var _ = Describe("the config's digest", func() {
	var sealed []byte

	BeforeEach(func() {
		cfg, err := config.Parse([]byte(valid))
		Expect(err).NotTo(HaveOccurred())
		sealed, err = agentconfigv1alpha1.Marshal(cfg)
		Expect(err).NotTo(HaveOccurred())
		Expect(sealed).To(HavePrefix(agentconfigv1alpha1.DigestPrefix))
	})

	It("accepts the config as generated, and one without a digest line", func() {
		got, err := config.Parse(sealed)
		Expect(err).NotTo(HaveOccurred())
		want, err := config.Parse([]byte(valid))
		Expect(err).NotTo(HaveOccurred())
		Expect(got).To(Equal(want))
	})

	It("refuses the config cut at every line boundary, naming both digests", func() {
		lines := bytes.SplitAfter(sealed, []byte("\n"))
		Expect(len(lines)).To(BeNumerically(">", 10))
		for n := 1; n < len(lines)-1; n++ {
			cut := bytes.Join(lines[:n], nil)
			_, err := config.Parse(cut)
			Expect(err).To(MatchError(And(HavePrefix("config: the digest in its first line (sha256:"),
				ContainSubstring("does not match its content (sha256:"), ContainSubstring("cut short or changed"))), "cut after line %d", n)
		}
	})

	It("refuses a changed byte and a digest line without content", func() {
		changed := bytes.Replace(sealed, []byte("10.0.1.0/24"), []byte("10.0.2.0/24"), 1)
		_, err := config.Parse(changed)
		Expect(err).To(MatchError(ContainSubstring("does not match its content")))
		_, err = config.Parse([]byte(agentconfigv1alpha1.DigestPrefix + "00"))
		Expect(err).To(MatchError(ContainSubstring("does not match its content")))
	})

	It("bounds what it repeats of an over-long digest line", func() {
		long := append([]byte(agentconfigv1alpha1.DigestPrefix+string(bytes.Repeat([]byte("a"), 10_000))+"\n"), []byte(valid)...)
		_, err := config.Parse(long)
		Expect(err).To(HaveOccurred())
		Expect(len(err.Error())).To(BeNumerically("<", 300))
	})
})
