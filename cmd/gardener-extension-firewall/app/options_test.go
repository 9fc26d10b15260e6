package app_test

import (
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/spf13/pflag"

	. "github.com/metal-firewall/gardener-extension-firewall/cmd/gardener-extension-firewall/app"
	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/machine"
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
		err := parse("--machine-provider=openstack", "--boot-token-validity=2h", "--csr-max-duration=6h", "--workers=0", "--kube-api-qps=-1").Validate()
		Expect(err).To(MatchError(And(
			ContainSubstring("--seed-server is required"),
			ContainSubstring("--seed-ca-file is required"),
			ContainSubstring(`--machine-provider "openstack" is not supported: metal or local`),
			ContainSubstring("--csr-max-duration 6h0m0s is below the 12h0m0s the firewall agent asks for"),
			ContainSubstring("--boot-token-validity 2h0m0s must be within [10m0s, 1h0m0s]"),
			ContainSubstring("--boot-namespace is required"),
			ContainSubstring("--kube-api-qps (-1), --kube-api-burst (130) and --workers (0) must be positive"),
		)))
	})

	It("defaults to the metal provider", func() {
		Expect(parse().MachineProvider).To(Equal(ProviderMetal))
	})

	Describe("NewMachineProvider", func() {
		It("names every missing or wrong metal flag at once", func() {
			_, err := NewMachineProvider(parse("--metal-api-url=ftp://metal", "--metal-api-hmac-auth-type=Metal-Root"))
			Expect(err).To(MatchError(And(
				ContainSubstring("--metal-api-url: metal-api URL \"ftp://metal\": must be an absolute http or https URL"),
				ContainSubstring("--metal-api-hmac-file is required"),
				ContainSubstring(`--metal-api-hmac-auth-type "Metal-Root" is none of [Metal-View Metal-Edit Metal-Admin]`),
			)))
			_, err = NewMachineProvider(parse("--metal-api-hmac-file=/nonexistent/hmac"))
			Expect(err).To(MatchError(And(ContainSubstring("--metal-api-url is required"), ContainSubstring("--metal-api-hmac-file: metal-api HMAC key: open /nonexistent/hmac"))))
		})

		It("sets up the metal provider from a URL and a key file, without sending anything", func() {
			key := filepath.Join(GinkgoT().TempDir(), "hmac")
			Expect(os.WriteFile(key, []byte("secret\n"), 0o600)).To(Succeed())
			p, err := NewMachineProvider(parse("--metal-api-url=https://metal.example.com/metal", "--metal-api-hmac-file="+key))
			Expect(err).NotTo(HaveOccurred())
			Expect(p).NotTo(BeNil())
		})

		It("refuses an http metal-api unless told to accept it", func() {
			key := filepath.Join(GinkgoT().TempDir(), "hmac")
			Expect(os.WriteFile(key, []byte("secret\n"), 0o600)).To(Succeed())
			_, err := NewMachineProvider(parse("--metal-api-url=http://metal.example.com/metal", "--metal-api-hmac-file="+key))
			Expect(err).To(MatchError(ContainSubstring(`--metal-api-url "http://metal.example.com/metal": must be https`)))
			p, err := NewMachineProvider(parse("--metal-api-url=http://metal.example.com/metal", "--metal-api-hmac-file="+key, "--metal-api-allow-http"))
			Expect(err).NotTo(HaveOccurred())
			Expect(p).NotTo(BeNil())
		})

		It("takes the two ways a fabric takes a new distance, and no other", func() {
			key := filepath.Join(GinkgoT().TempDir(), "hmac")
			Expect(os.WriteFile(key, []byte("secret\n"), 0o600)).To(Succeed())
			for _, by := range []string{"reset", "update"} {
				_, err := NewMachineProvider(parse("--metal-api-url=https://metal.example.com/metal", "--metal-api-hmac-file="+key, "--metal-distance-announce-by="+by))
				Expect(err).NotTo(HaveOccurred(), by)
			}
			_, err := NewMachineProvider(parse("--metal-api-url=https://metal.example.com/metal", "--metal-api-hmac-file="+key, "--metal-distance-announce-by=withdraw"))
			Expect(err).To(MatchError(ContainSubstring(`--metal-distance-announce-by "withdraw" is neither "reset" nor "update"`)))
		})

		It("falls back to a provider that reports why, so that the binary (and its acl) runs on", func(ctx SpecContext) {
			p := MachineProviderOrUnavailable(parse())
			Expect(p).To(BeAssignableToTypeOf(machine.Unavailable{}))
			_, err := p.Find(ctx, &firewallv1alpha1.Firewall{})
			Expect(err).To(MatchError(ContainSubstring("the metal machine provider is not set up: --metal-api-url is required")))
		})

		It("checks the local provider's prerequisites and names them in one error", func() {
			_, err := NewMachineProvider(parse("--machine-provider=local", "--local-agent-path=/nonexistent/firewall-agent", "--local-state-dir="+GinkgoT().TempDir()))
			Expect(err).To(MatchError(And(
				HavePrefix("the local machine provider needs "),
				ContainSubstring("the firewall-agent binary at /nonexistent/firewall-agent"),
				ContainSubstring("use --machine-provider=metal"))))
		})
	})

	It("refuses timeouts, replacements and workers that cannot work", func() {
		err := parse("--create-timeout=0s", "--health-timeout=-1m", "--firewall-ready-timeout=0s", "--max-replacements=-1", "--firewall-max-concurrent-reconciles=0",
			"--firewall-max-waiting=0", "--acl-max-concurrent-reconciles=0").Validate()
		Expect(err).To(MatchError(And(
			ContainSubstring("--create-timeout 0s must be positive"),
			ContainSubstring("--health-timeout -1m0s must be positive"),
			ContainSubstring("--firewall-ready-timeout 0s must be positive"),
			ContainSubstring("--max-replacements -1 must not be negative"),
			ContainSubstring("--firewall-max-concurrent-reconciles 0 must be at least 1"),
			ContainSubstring("--firewall-max-waiting 0 must be at least 1"),
			ContainSubstring("--acl-max-concurrent-reconciles 0 must be at least 1"),
		)))
		defaults := parse()
		Expect(defaults.CreateTimeout.String()).To(Equal("20m0s"))
		Expect(defaults.MaxReplacements).To(BeEquivalentTo(3))
		Expect(defaults.FirewallReadyTimeout.String()).To(Equal("15m0s"))
	})

	It("hands the acl controller its workers and the operator's config", func() {
		// One worker made thousands of new acl shoots wait for each other's writes in turn.
		Expect(ACLAddOptions(parse()).Controller.MaxConcurrentReconciles).To(Equal(20))
		o := ACLAddOptions(parse("--acl-max-concurrent-reconciles=12", "--ignore-operation-annotation", "--acl-always-allowed-cidrs=192.0.2.0/28"))
		Expect(o.Controller.MaxConcurrentReconciles).To(Equal(12))
		Expect(o.IgnoreOperationAnnotation).To(BeTrue())
		Expect(o.Config.AlwaysAllowedCIDRs).To(ConsistOf("192.0.2.0/28"))
	})

	It("refuses a roll request interval that would hammer the shoots, and takes 0 for off", func() {
		Expect(parse("--roll-request-interval=1s").Validate()).To(MatchError(ContainSubstring("--roll-request-interval 1s must be 0 (off) or at least 10s")))
		Expect(parse("--roll-request-interval=-1m").Validate()).To(MatchError(ContainSubstring("--roll-request-interval -1m0s must be 0 (off)")))
		for _, ok := range []string{"--roll-request-interval=0", "--roll-request-interval=10s"} {
			err := parse(ok).Validate()
			if err != nil {
				Expect(err.Error()).NotTo(ContainSubstring("--roll-request-interval"))
			}
		}
		Expect(parse().RollRequestInterval.String()).To(Equal("1m0s"))
	})

	It("limits the requests for credentials on their own, and refuses no limit", func() {
		Expect(parse().CredentialsKubeAPIQPS).To(BeEquivalentTo(300))
		Expect(parse().CredentialsKubeAPIBurst).To(Equal(400))
		Expect(parse("--credentials-kube-api-qps=0").Validate()).To(MatchError(ContainSubstring("--credentials-kube-api-qps (0) and --credentials-kube-api-burst (400) must be positive")))
	})

	It("refuses a health check period that would hammer the kube-apiserver, and defaults to Gardener's 30s", func() {
		Expect(parse("--healthcheck-sync-period=5s").Validate()).To(MatchError(ContainSubstring("--healthcheck-sync-period 5s must be at least 10s")))
		Expect(parse("--healthcheck-kube-api-qps=0").Validate()).To(MatchError(ContainSubstring("--healthcheck-kube-api-qps 0 must be positive")))
		Expect(parse().HealthCheckKubeAPIQPS).To(BeEquivalentTo(50))
		Expect(parse().HealthCheckSyncPeriod).To(Equal(30 * time.Second))
		Expect(parse("--healthcheck-sync-period=5m").HealthCheckSyncPeriod).To(Equal(5 * time.Minute))
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
