package agentseed_test

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	certutil "k8s.io/client-go/util/cert"
	"sigs.k8s.io/controller-runtime/pkg/client"

	agentconfigv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/v1alpha1"
	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/credentials"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/agent"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/nftables"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/ruleset"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/seedsource"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/atomicfile"
	"github.com/metal-firewall/gardener-extension-firewall/test/framework"
)

// recorder is an Applier that remembers what it was asked to apply; the
// packet tests prove the real one, here the question is what reaches it.
type recorder struct {
	mu   sync.Mutex
	last string
	n    int
	// refuse makes Apply fail, as a kernel refusing the batch does.
	refuse bool
}

func (r *recorder) Apply(rs *ruleset.Ruleset) (nftables.Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.refuse {
		return nftables.Result{}, errors.New("the kernel refused the batch")
	}
	r.last, r.n = ruleset.Render(rs), r.n+1
	return nftables.Result{Mode: nftables.Full}, nil
}

func (r *recorder) Refuse(refuse bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.refuse = refuse
}

func (r *recorder) Last() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

const (
	namespace = "shoot--p--agent"
	// bootNamespace holds the boot ServiceAccounts, as the extension's namespace does.
	bootNamespace = "extension-firewall"
)

// prepareSeed creates what the extension creates for a firewall in a seed:
// the Firewall, its RBAC and a bootstrap kubeconfig, which it writes to path.
func prepareSeed(ctx SpecContext, s *seedEnv, name, prefix, path string) {
	for _, ns := range []string{namespace, bootNamespace} {
		Expect(client.IgnoreAlreadyExists(s.client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))).To(Succeed())
	}
	Expect(s.client.Create(ctx, &firewallv1alpha1.Firewall{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: firewallv1alpha1.FirewallSpec{Size: "s", Image: "i", Partition: "p", Project: "p", Networks: []string{"n"},
			FirewallTrafficSpec: firewallv1alpha1.FirewallTrafficSpec{InternalPrefixes: []string{prefix}}},
	})).To(Succeed())
	Expect(credentials.EnsureAgentRBAC(ctx, s.client, bootNamespace, namespace, name, nil)).To(Succeed())
	tok, err := credentials.EnsureBootCredential(ctx, s.client, bootNamespace, namespace, name, time.Hour)
	Expect(err).NotTo(HaveOccurred())
	kubeconfig, err := credentials.BootstrapKubeconfig(s.cp.Config.Host, s.cp.Config.CAData, tok.Token)
	Expect(err).NotTo(HaveOccurred())
	Expect(atomicfile.Write(path, kubeconfig, 0o600)).To(Succeed())
}

// agentFiles are the files of an agent that reads its Firewall from the seed.
type agentFiles struct{ dir, bootstrap, seed, config string }

// seedAgent prepares the Firewall name in s and writes the config of its
// agent on the seed source into a temporary folder; firewallExtra adds to
// the firewall controller's entry (", selfUpdate: {...}").
func seedAgent(ctx SpecContext, s *seedEnv, name, prefix, firewallExtra string) agentFiles {
	GinkgoHelper()
	dir := GinkgoT().TempDir()
	f := agentFiles{dir: dir, bootstrap: filepath.Join(dir, "bootstrap.kubeconfig"), seed: filepath.Join(dir, "seed.kubeconfig"), config: filepath.Join(dir, "config.yaml")}
	prepareSeed(ctx, s, name, prefix, f.bootstrap)
	Expect(os.WriteFile(f.config, []byte(fmt.Sprintf(`name: %s
sources:
  seed: {bootstrapKubeconfig: %s, kubeconfig: %s, namespace: %s}
controllers:
  firewall: {source: seed%s}
`, name, f.bootstrap, f.seed, namespace, firewallExtra)), 0o600)).To(Succeed())
	return f
}

// agentStatus returns what the agent last reported about its Firewall.
func agentStatus(ctx SpecContext, s *seedEnv) firewallv1alpha1.AgentStatus {
	fw := &firewallv1alpha1.Firewall{}
	Expect(s.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "fw-0"}, fw)).To(Succeed())
	if fw.Status.AgentStatus == nil {
		return firewallv1alpha1.AgentStatus{}
	}
	return *fw.Status.AgentStatus
}

// applied is the generation of the Firewall whose spec the agent reports in force.
func applied(ctx SpecContext, s *seedEnv) func() int64 {
	return func() int64 { return agentStatus(ctx, s).AppliedGeneration }
}

func heartbeat(ctx SpecContext, s *seedEnv) func() string {
	return func() string {
		fw := &firewallv1alpha1.Firewall{}
		Expect(s.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "fw-0"}, fw)).To(Succeed())
		if a := fw.Status.AgentStatus; a != nil && a.LastRunAgainstSeed != nil && time.Since(a.LastRunAgainstSeed.Time) < 10*time.Second {
			return a.Version
		}
		return ""
	}
}

var _ = Describe("Agent seed source", func() {
	It("bootstraps, enforces the Firewall's spec, reports a heartbeat, and follows the firewall to a new seed", func(ctx SpecContext) {
		files := seedAgent(ctx, seedA, "fw-0", "10.9.0.0/24", "")
		dir, bootstrapPath, seedPath, configPath := files.dir, files.bootstrap, files.seed, files.config

		applier := &recorder{}
		a := &agent.Agent{ConfigPath: configPath, Applier: applier, Log: slog.New(slog.NewTextHandler(GinkgoWriter, nil)),
			PollInterval: 200 * time.Millisecond, SeedInterval: 500 * time.Millisecond, Version: "v-test"}
		stopAgent := framework.RunInBackground(a.Run)
		DeferCleanup(func() { Expect(stopAgent()).To(Succeed()) })

		By("bootstrapping a certificate and enforcing the Firewall's internal prefixes")
		Eventually(applier.Last).WithTimeout(time.Minute).Should(ContainSubstring("10.9.0.0/24"))
		info, err := os.Stat(seedPath)
		Expect(err).NotTo(HaveOccurred())
		Expect(info.Mode().Perm()).To(Equal(os.FileMode(0o600)), "the seed kubeconfig holds a private key")
		data, err := os.ReadFile(seedPath)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(data)).To(ContainSubstring("client-key-data"))
		Expect(string(data)).NotTo(ContainSubstring("token:"), "the boot token is not kept")
		key, err := os.Stat(filepath.Join(dir, "agent.key"))
		Expect(err).NotTo(HaveOccurred(), "the identity key lives beside the seed kubeconfig")
		Expect(key.Mode().Perm()).To(Equal(os.FileMode(0o600)))
		Eventually(heartbeat(ctx, seedA)).WithTimeout(30 * time.Second).Should(Equal("v-test"))
		Eventually(applied(ctx, seedA)).Should(BeEquivalentTo(1), "the heartbeat names the generation whose spec is in force")

		By("re-applying when the Firewall changes in the seed")
		fw := &firewallv1alpha1.Firewall{}
		Expect(seedA.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "fw-0"}, fw)).To(Succeed())
		fw.Spec.InternalPrefixes = []string{"10.9.0.0/24", "10.10.0.0/24"}
		Expect(seedA.client.Update(ctx, fw)).To(Succeed())
		Eventually(applier.Last).WithTimeout(30 * time.Second).Should(ContainSubstring("10.10.0.0/24"))
		Eventually(applied(ctx, seedA)).WithTimeout(30*time.Second).Should(BeEquivalentTo(2), "generation 2 in force")

		By("a spec the kernel refuses: the heartbeat keeps naming the generation still in force")
		applier.Refuse(true)
		Expect(seedA.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "fw-0"}, fw)).To(Succeed())
		fw.Spec.InternalPrefixes = []string{"10.12.0.0/24"}
		Expect(seedA.client.Update(ctx, fw)).To(Succeed())
		Eventually(func() string { return agentStatus(ctx, seedA).Message }).WithTimeout(30 * time.Second).Should(ContainSubstring("the kernel refused the batch"))
		Consistently(applied(ctx, seedA)).WithTimeout(2 * time.Second).Should(BeEquivalentTo(2))
		applier.Refuse(false)
		Eventually(applied(ctx, seedA)).WithTimeout(30 * time.Second).Should(BeEquivalentTo(3))
		Expect(applier.Last()).To(ContainSubstring("10.12.0.0/24"))

		By("moving to seed B: a new bootstrap kubeconfig arrives, the agent bootstraps there")
		prepareSeed(ctx, seedB, "fw-0", "10.11.0.0/24", bootstrapPath)
		Eventually(heartbeat(ctx, seedB)).WithTimeout(time.Minute).Should(Equal("v-test"))
		Eventually(applier.Last).WithTimeout(30 * time.Second).Should(ContainSubstring("10.11.0.0/24"))
		data, err = os.ReadFile(seedPath)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(data)).To(ContainSubstring(strings.TrimPrefix(seedB.cp.Config.Host, "https://")))
	})

	It("renews its certificate with the current one once 70-90% of its validity has passed", func(ctx SpecContext) {
		dir := GinkgoT().TempDir()
		bootstrapPath := filepath.Join(dir, "bootstrap.kubeconfig")
		prepareSeed(ctx, seedA, "fw-renew", "10.12.0.0/24", bootstrapPath)
		now := time.Now()
		src := &seedsource.Source{
			Config: agentconfigv1alpha1.SeedSource{BootstrapKubeconfig: bootstrapPath, Kubeconfig: filepath.Join(dir, "seed.kubeconfig"), Namespace: namespace},
			Name:   "fw-renew", Log: slog.New(slog.NewTextHandler(GinkgoWriter, nil)), CertificateDuration: time.Hour,
			Now: func() time.Time { return now },
		}
		var fw *firewallv1alpha1.Firewall
		Eventually(func() (err error) {
			fw, err = src.Firewall(ctx)
			return err
		}).WithTimeout(time.Minute).Should(Succeed())
		Expect(fw.Spec.InternalPrefixes).To(Equal([]string{"10.12.0.0/24"}))
		first := certificateSerial(filepath.Join(dir, "seed.kubeconfig"))

		By("the boot credential is gone by now: renewal must use the certificate")
		Expect(credentials.DeleteBootCredentials(ctx, seedA.client, bootNamespace, namespace, "fw-renew")).To(Succeed())
		now = now.Add(55 * time.Minute)
		_, err := src.Firewall(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(certificateSerial(filepath.Join(dir, "seed.kubeconfig"))).NotTo(Equal(first))
	})
})

func certificateSerial(kubeconfigPath string) string {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfigPath)
	Expect(err).NotTo(HaveOccurred())
	certs, err := certutil.ParseCertsPEM(cfg.CertData)
	Expect(err).NotTo(HaveOccurred())
	return certs[0].SerialNumber.String()
}
