package app_test

import (
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/spf13/pflag"

	. "github.com/metal-firewall/gardener-extension-firewall/cmd/gardener-extension-firewall/app"
)

var _ = Describe("Options", func() {
	parse := func(args ...string) *Options {
		o := &Options{}
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		o.AddFlags(fs)
		Expect(fs.Parse(args)).To(Succeed())
		return o
	}

	It("accepts a complete set of flags", func() {
		ca := filepath.Join(GinkgoT().TempDir(), "ca.crt")
		Expect(os.WriteFile(ca, []byte("pem"), 0o600)).To(Succeed())
		Expect(parse("--seed-server=https://seed:443", "--seed-ca-file="+ca, "--boot-namespace=extension-firewall").Validate()).To(Succeed())
	})

	It("names every flag that is missing or wrong, all at once", func() {
		err := parse("--machine-provider=metal", "--boot-token-validity=2h").Validate()
		Expect(err).To(MatchError(And(
			ContainSubstring("--seed-server is required"),
			ContainSubstring("--seed-ca-file is required"),
			ContainSubstring(`--machine-provider "metal" is not supported`),
			ContainSubstring("--boot-token-validity 2h0m0s must be within [10m0s, 1h0m0s]"),
			ContainSubstring("--boot-namespace is required"),
		)))
	})

	It("refuses timeouts, replacements and workers that cannot work", func() {
		err := parse("--create-timeout=0s", "--health-timeout=-1m", "--firewall-ready-timeout=0s", "--max-replacements=-1", "--firewall-max-concurrent-reconciles=0").Validate()
		Expect(err).To(MatchError(And(
			ContainSubstring("--create-timeout 0s must be positive"),
			ContainSubstring("--health-timeout -1m0s must be positive"),
			ContainSubstring("--firewall-ready-timeout 0s must be positive"),
			ContainSubstring("--max-replacements -1 must not be negative"),
			ContainSubstring("--firewall-max-concurrent-reconciles 0 must be at least 1"),
		)))
		defaults := parse()
		Expect(defaults.CreateTimeout.String()).To(Equal("20m0s"))
		Expect(defaults.MaxReplacements).To(BeEquivalentTo(3))
		Expect(defaults.FirewallReadyTimeout.String()).To(Equal("15m0s"))
	})

	It("refuses a managed webhook certificate without a folder to write it to", func() {
		Expect(parse("--webhook-config-namespace=extension-firewall").Validate()).To(MatchError(
			ContainSubstring("--webhook-config-namespace needs --webhook-cert-dir")))
	})

	It("builds a scheme that knows the seed's and the firewall API's kinds", func() {
		scheme, err := Scheme()
		Expect(err).NotTo(HaveOccurred())
		for _, kind := range []string{"Extension", "Cluster", "ManagedResource"} {
			Expect(scheme.AllKnownTypes()).To(HaveKey(HaveField("Kind", kind)))
		}
		Expect(scheme.AllKnownTypes()).To(HaveKey(HaveField("Kind", "FirewallDeployment")))
		Expect(scheme.AllKnownTypes()).To(HaveKey(HaveField("Kind", "EnvoyFilter")), "the acl controller writes Istio objects")
	})
})
