package charts_test

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/spf13/pflag"

	"github.com/metal-firewall/gardener-extension-firewall/cmd/gardener-extension-firewall/app"
)

// parse parses args with the binary's own flag set, so a flag the binary no longer has fails.
func parse(args []string) (*app.Options, *pflag.FlagSet, error) {
	opts := &app.Options{}
	fs := pflag.NewFlagSet("gardener-extension-firewall", pflag.ContinueOnError)
	fs.SetOutput(GinkgoWriter)
	opts.AddFlags(fs)
	return opts, fs, fs.Parse(args)
}

func parsedOptions(objs []Object) *app.Options {
	opts, _, err := parse(args(objs))
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return opts
}

func port(address string) int {
	_, p, err := net.SplitHostPort(address)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	n, err := strconv.Atoi(p)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return n
}

// validate runs the binary's own validation, with the seed CA file (a volume in the pod)
// standing in as a temporary file.
func validate(opts *app.Options) error {
	ca := filepath.Join(GinkgoT().TempDir(), "ca.crt")
	ExpectWithOffset(1, os.WriteFile(ca, []byte("pem"), 0o600)).To(Succeed())
	ExpectWithOffset(1, opts.SeedCAFile).To(HavePrefix("/etc/gardener-extension-firewall/seed-ca/"))
	opts.SeedCAFile = ca
	return opts.Validate()
}

// notSetByChart are the binary's flags the chart leaves at their defaults, and why.
var notSetByChart = map[string]string{
	"kubeconfig": "in the seed the in-cluster config is right",
	"help":       "",
	"version":    "",
}

// providerFlags are the flags of each machine provider: the chart sets those of the one chosen.
var providerFlags = map[string][]string{
	"metal": {"metal-api-url", "metal-api-hmac-file", "metal-api-hmac-auth-type", "metal-api-timeout", "metal-api-allow-http", "metal-distance-announce-by"},
	"local": {"local-state-dir", "local-agent-path", "local-internal-netns", "local-external-netns"},
}

var _ = Describe("Deployment flags", func() {
	It("are flags the binary accepts, with values it validates", func() {
		opts, fs, err := parse(args(objects(minimalValues())))
		Expect(err).NotTo(HaveOccurred())
		Expect(fs.Args()).To(BeEmpty(), "every argument is a flag")
		Expect(validate(opts)).To(Succeed())
	})

	It("would fail for a flag the binary does not have", func() {
		_, _, err := parse([]string{"--seed-server=" + seedURL, "--no-such-flag=1"})
		Expect(err).To(MatchError(ContainSubstring("unknown flag: --no-such-flag")))
	})

	DescribeTable("set every flag of the binary but the ones left at their defaults on purpose",
		func(provider, other string) {
			_, fs, err := parse(args(objects(with(minimalValues(), []string{"machineProvider", "type"}, provider))))
			Expect(err).NotTo(HaveOccurred())
			var unset, foreign []string
			fs.VisitAll(func(f *pflag.Flag) {
				_, ok := notSetByChart[f.Name]
				otherProvider := slices.Contains(providerFlags[other], f.Name)
				switch {
				case f.Changed && otherProvider:
					foreign = append(foreign, "--"+f.Name)
				case !f.Changed && !ok && !otherProvider:
					unset = append(unset, "--"+f.Name)
				}
			})
			Expect(unset).To(BeEmpty(), "a new flag of the binary needs a value in the chart (or an entry in notSetByChart): %s", strings.Join(unset, ", "))
			Expect(foreign).To(BeEmpty(), "flags of the provider not chosen")
		},
		Entry("metal", "metal", "local"),
		Entry("local", "local", "metal"),
	)

	It("refuse a csrMaxDuration below what the agent asks for", func() {
		opts, _, err := parse(args(objects(with(minimalValues(), []string{"firewall", "csrMaxDuration"}, "6h"))))
		Expect(err).NotTo(HaveOccurred())
		Expect(validate(opts)).To(MatchError(ContainSubstring("--csr-max-duration 6h0m0s is below the 12h0m0s the firewall agent asks for")))
	})

	It("carry the values", func() {
		values := minimalValues()
		with(values, []string{"acl", "alwaysAllowedCIDRs"}, []any{"192.0.2.0/24", "2001:db8::/32"})
		with(values, []string{"acl", "maxCIDRs"}, 100)
		with(values, []string{"firewall", "bootTokenValidity"}, "30m")
		with(values, []string{"firewall", "csrMaxDuration"}, "12h")
		with(values, []string{"controllers", "ignoreOperationAnnotation"}, true)
		with(values, []string{"kubeAPI", "qps"}, 50)
		with(values, []string{"kubeAPI", "credentials", "qps"}, 150)
		with(values, []string{"kubeAPI", "credentials", "burst"}, 200)
		with(values, []string{"firewall", "workers"}, 20)
		with(values, []string{"healthCheckSyncPeriod"}, "2m")
		opts, _, err := parse(args(objects(values)))
		Expect(err).NotTo(HaveOccurred())
		Expect(opts.ACL.AlwaysAllowedCIDRs).To(Equal([]string{"192.0.2.0/24", "2001:db8::/32"}))
		Expect(opts.ACL.Limits.MaxCIDRs).To(Equal(100))
		Expect(opts.BootTokenValidity.String()).To(Equal("30m0s"))
		Expect(opts.CSRMaxDuration.String()).To(Equal("12h0m0s"))
		Expect(opts.IgnoreOperationAnnotation).To(BeTrue())
		Expect(opts.KubeAPIQPS).To(Equal(float32(50)))
		Expect(opts.CredentialsKubeAPIQPS).To(Equal(float32(150)))
		Expect(opts.CredentialsKubeAPIBurst).To(Equal(200))
		Expect(opts.Workers).To(Equal(20))
		Expect(opts.HealthCheckSyncPeriod.String()).To(Equal("2m0s"))
		Expect(opts.SeedServer).To(Equal(seedURL))
		Expect(validate(opts)).To(Succeed())
	})

	It("without the webhook are still valid", func() {
		opts, _, err := parse(args(objects(with(minimalValues(), []string{"webhook", "enabled"}, false))))
		Expect(err).NotTo(HaveOccurred())
		Expect(opts.WebhookCertDir).To(BeEmpty(), "an empty cert dir is what turns the webhook off")
		Expect(validate(opts)).To(Succeed())
	})
})
