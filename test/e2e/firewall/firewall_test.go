package firewall_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/machine/local"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/netns"
	"github.com/metal-firewall/gardener-extension-firewall/test/framework"
	"github.com/metal-firewall/gardener-extension-firewall/test/roottest"
)

// The whole firewall job on one host: a real seed, the extension with the
// local machine provider, and the real firewall-agent in a network namespace
// that bootstraps its own seed credential and reports in.
var _ = Describe("Firewall extension end to end", func() {
	It("brings a shoot's firewall up: machine, agent bootstrap, rules, Ready; and removes it", func(ctx SpecContext) {
		dir := GinkgoT().TempDir()

		By("starting a seed whose kube-controller-manager signs certificates")
		seed := startControlPlane(framework.StartSeed, "seed")
		c, err := framework.SeedClient(seed)
		Expect(err).NotTo(HaveOccurred())

		By("running the extension with the local machine provider")
		stateDir := filepath.Join(dir, "machines")
		machines, err := framework.NewLocalMachines("e2e", local.Options{StateDir: stateDir, AgentPath: agentBinary})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(machines.DeleteNetNS)
		id, provider := machines.ID, machines.Provider
		// The seed stands in for the shoot: the agent only keeps its kubeconfig.
		stop := startExtension(seed, seed, provider)
		DeferCleanup(func() { stop() })

		By("enabling the firewall extension for a shoot")
		namespace := "shoot--e2e--" + id
		prepareShootNamespace(ctx, c, namespace, seed)
		ex, err := framework.Reconcile(ctx, c, namespace, "firewall",
			[]byte(`{"size":"local","image":"local","partition":"local","project":"e2e","networks":["internet"],"internalPrefixes":["10.250.0.0/16"]}`))
		Expect(err).NotTo(HaveOccurred())

		By("letting the machine reach the seed as a real firewall reaches its seed's endpoint")
		machineNetNS := waitForMachine(ctx, stateDir).NetNS
		fwdCtx, stopForward := context.WithCancel(context.Background())
		DeferCleanup(stopForward)
		Expect(roottest.ForwardLoopback(fwdCtx, &netns.NS{Name: machineNetNS}, portOf(seed.Config.Host))).To(Succeed())

		By("the Extension turns Succeeded only once the agent has applied the Firewall's rules: by then they are in force")
		Expect(framework.WaitForLastOperation(ctx, c, ex, regexp.MustCompile(`^(Create|Reconcile) Succeeded$`), 3*time.Minute)).To(Succeed())
		inForce, err := exec.Command("ip", "netns", "exec", machineNetNS, "nft", "list", "table", "inet", "firewall-agent").CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(inForce))
		Expect(string(inForce)).To(ContainSubstring("10.250.0.0/16"))
		succeeded := &firewallv1alpha1.FirewallList{}
		Expect(c.List(ctx, succeeded, client.InNamespace(namespace))).To(Succeed())
		Expect(succeeded.Items).To(HaveLen(1))
		Expect(succeeded.Items[0].Status.AgentStatus.AppliedGeneration).To(Equal(succeeded.Items[0].Generation))
		Expect(meta.IsStatusConditionTrue(succeeded.Items[0].Status.Conditions, firewallv1alpha1.ConditionConnected)).To(BeTrue(), "the agent reads the shoot too")

		By("the agent bootstraps its certificate and reports in: the Firewall turns Ready")
		Eventually(func(g Gomega) {
			list := &firewallv1alpha1.FirewallList{}
			g.Expect(c.List(ctx, list, client.InNamespace(namespace))).To(Succeed())
			g.Expect(list.Items).To(HaveLen(1))
			fw := list.Items[0]
			g.Expect(meta.IsStatusConditionTrue(fw.Status.Conditions, firewallv1alpha1.ConditionSeedConnected)).To(BeTrue(), "%v", fw.Status.Conditions)
			g.Expect(meta.IsStatusConditionTrue(fw.Status.Conditions, firewallv1alpha1.ConditionReady)).To(BeTrue())
			g.Expect(fw.Status.AgentStatus.Version).To(Equal("dev"))
		}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())

		By("the rules from the Firewall are in force inside the machine, not on the host")
		nft, err := exec.Command("ip", "netns", "exec", machineNetNS, "nft", "list", "table", "inet", "firewall-agent").CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(nft))
		Expect(string(nft)).To(ContainSubstring("10.250.0.0/16"))

		By("the boot identity is gone once the agent holds its certificate, and with it every boot token")
		Eventually(func() []corev1.ServiceAccount {
			sas, err := framework.BootServiceAccounts(ctx, c, namespace)
			Expect(err).NotTo(HaveOccurred())
			return sas
		}).WithTimeout(time.Minute).Should(BeEmpty())

		By("deleting the Extension releases the machine")
		Expect(c.Delete(ctx, ex)).To(Succeed())
		Eventually(func() bool { return apierrors.IsNotFound(c.Get(ctx, client.ObjectKeyFromObject(ex), ex)) }).WithTimeout(2 * time.Minute).Should(BeTrue())
		Expect(filepath.Join("/var/run/netns", machineNetNS)).NotTo(BeAnExistingFile())
	})
})
