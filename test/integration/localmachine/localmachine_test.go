package localmachine_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/machine"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/machine/local"
)

// agentConfig is a static config: the agent programs its table from it alone.
const agentConfig = `sources:
  static:
    firewall:
      internalPrefixes: ["10.0.1.0/24"]
    cwnp:
      egress: [{to: [{cidr: 203.0.113.0/24}], ports: [{protocol: TCP, port: 443}]}]
controllers:
  firewall: {source: static}
  cwnp: {source: static}
`

func nsExec(ns string, args ...string) (string, error) {
	out, err := exec.Command("ip", append([]string{"netns", "exec", ns}, args...)...).CombinedOutput()
	return string(out), err
}

var _ = Describe("Local machine provider", func() {
	var (
		provider *local.Provider
		opts     local.Options
		fw       *firewallv1alpha1.Firewall
	)

	BeforeEach(func() {
		suffix := make([]byte, 3)
		_, _ = rand.Read(suffix)
		id := hex.EncodeToString(suffix)
		opts = local.Options{
			StateDir:      GinkgoT().TempDir(),
			AgentPath:     agentBinary,
			InternalNetNS: "fwt-int-" + id,
			ExternalNetNS: "fwt-ext-" + id,
		}
		var err error
		provider, err = local.New(opts)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() {
			for _, ns := range []string{opts.InternalNetNS, opts.ExternalNetNS} {
				_ = exec.Command("ip", "netns", "delete", ns).Run()
			}
		})
		fw = &firewallv1alpha1.Firewall{
			ObjectMeta: metav1.ObjectMeta{Name: "fw-local-" + id, Namespace: "shoot--local--test"},
			Spec:       firewallv1alpha1.FirewallSpec{Project: "p1"},
		}
	})

	It("makes a machine of a namespace with the agent running in it, finds it after a restart and removes it", func(ctx SpecContext) {
		m, err := provider.Create(ctx, fw, []machine.File{
			{Path: local.DefaultAgentConfig, Content: []byte(agentConfig), Mode: 0o600},
			{Path: "/etc/firewall-agent/bootstrap.kubeconfig", Content: []byte("secret"), Mode: 0o600},
		})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { _ = provider.Delete(context.Background(), m.ID) })
		netnsName := "fw-" + strings.TrimPrefix(m.ID, "local-")

		By("the agent's table was in the kernel before the machine forwarded, as the boot unit has it on metal")
		out, err := nsExec(netnsName, "nft", "list", "table", "inet", "firewall-agent")
		Expect(err).NotTo(HaveOccurred(), out)

		By("the agent runs inside the machine's namespace and programs its table there")
		Eventually(func() string {
			out, _ := nsExec(netnsName, "nft", "list", "table", "inet", "firewall-agent")
			return out
		}).WithTimeout(30 * time.Second).Should(ContainSubstring("203.0.113.0/24"))
		tables, err := exec.Command("nft", "list", "tables").CombinedOutput()
		Expect(err).NotTo(HaveOccurred())
		Expect(string(tables)).NotTo(ContainSubstring("firewall-agent"), "the host's own ruleset is untouched")

		By("the machine's hostname is the Firewall's name, which the agent's name defaults to")
		record, err := os.ReadFile(filepath.Join(opts.StateDir, m.ID, "machine.json"))
		Expect(err).NotTo(HaveOccurred())
		var rec struct {
			PID int `json:"pid"`
		}
		Expect(json.Unmarshal(record, &rec)).To(Succeed())
		hostname, err := exec.Command("nsenter", "-t", strconv.Itoa(rec.PID), "-u", "hostname").CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(hostname))
		Expect(strings.TrimSpace(string(hostname))).To(Equal(fw.Name))

		By("userdata files are in the machine's root with their modes")
		info, err := os.Stat(filepath.Join(opts.StateDir, m.ID, "root", "etc/firewall-agent/bootstrap.kubeconfig"))
		Expect(err).NotTo(HaveOccurred())
		Expect(info.Mode().Perm()).To(Equal(os.FileMode(0o600)))

		By("links lead to the internal and the external namespace")
		out2, err := nsExec(netnsName, "ip", "-o", "link")
		Expect(err).NotTo(HaveOccurred())
		Expect(out2).To(And(ContainSubstring("int0"), ContainSubstring("ext0")))

		By("a new provider instance (a restarted manager) finds the machine by ID and by name and tags")
		restarted, err := local.New(opts)
		Expect(err).NotTo(HaveOccurred())
		withID := fw.DeepCopy()
		withID.Status.MachineStatus = &firewallv1alpha1.MachineStatus{MachineID: m.ID}
		found, err := restarted.Find(ctx, withID)
		Expect(err).NotTo(HaveOccurred())
		Expect(found).NotTo(BeNil())
		Expect(found.ID).To(Equal(m.ID))
		Expect(found.Provisioned).To(BeTrue(), found.Message)
		found, err = restarted.Find(ctx, fw)
		Expect(err).NotTo(HaveOccurred())
		Expect(found.ID).To(Equal(m.ID))
		other := fw.DeepCopy()
		other.Namespace = "shoot--other--ns"
		Expect(restarted.Find(ctx, other)).To(BeNil(), "tags keep shoots apart")

		By("deleting removes process, namespace and folder")
		Expect(restarted.Delete(ctx, m.ID)).To(Succeed())
		Expect(filepath.Join("/var/run/netns", netnsName)).NotTo(BeAnExistingFile())
		Expect(filepath.Join(opts.StateDir, m.ID)).NotTo(BeADirectory())
		found, err = restarted.Find(ctx, withID)
		Expect(err).NotTo(HaveOccurred())
		Expect(found).To(BeNil())
		Expect(restarted.Delete(ctx, m.ID)).To(Succeed(), "deleting twice is no error")
	})

	It("reports a machine whose agent died as not provisioned", func(ctx SpecContext) {
		m, err := provider.Create(ctx, fw, []machine.File{{Path: local.DefaultAgentConfig, Content: []byte("not: [valid"), Mode: 0o600}})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { _ = provider.Delete(context.Background(), m.ID) })
		Eventually(func() string {
			found, err := provider.Find(ctx, fw)
			Expect(err).NotTo(HaveOccurred())
			if found.Provisioned {
				return "provisioned"
			}
			return found.Message
		}).WithTimeout(30 * time.Second).Should(ContainSubstring("firewall-agent is not running"))
	})
})
