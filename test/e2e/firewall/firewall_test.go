package firewall_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os/exec"
	"path/filepath"
	"time"

	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	"github.com/gardener/gardener/pkg/client/kubernetes"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/csrapprover"
	firewallcontroller "github.com/metal-firewall/gardener-extension-firewall/pkg/controller/firewall"
	firewallmanager "github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager"
	managerfirewall "github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/firewall"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/machine/local"
	"github.com/metal-firewall/gardener-extension-firewall/test/netns"
	"github.com/metal-firewall/gardener-extension-firewall/test/testenv"
)

// The whole firewall job on one host: a real seed, the extension with the
// local machine provider, and the real firewall-agent in a network namespace
// that bootstraps its own seed credential and reports in.
var _ = Describe("Firewall extension end to end", func() {
	It("brings a shoot's firewall up: machine, agent bootstrap, rules, Ready; and removes it", func(ctx SpecContext) {
		dir := GinkgoT().TempDir()

		By("starting a seed whose kube-controller-manager signs certificates")
		seed, err := testenv.Start(testenv.Options{Name: "seed", CRDDirectoryPaths: testenv.SeedCRDPaths(), ControllerManager: true})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(seed.Stop()).To(Succeed()) })
		scheme := runtime.NewScheme()
		Expect(kubernetes.AddSeedSchemeToScheme(scheme)).To(Succeed())
		Expect(firewallv1alpha1.AddToScheme(scheme)).To(Succeed())
		c, err := client.New(seed.Config, client.Options{Scheme: scheme})
		Expect(err).NotTo(HaveOccurred())

		By("running the extension with the local machine provider")
		suffix := make([]byte, 3)
		_, _ = rand.Read(suffix)
		id := hex.EncodeToString(suffix)
		stateDir := filepath.Join(dir, "machines")
		provider, err := local.New(local.Options{StateDir: stateDir, AgentPath: agentBinary, InternalNetNS: "e2e-int-" + id, ExternalNetNS: "e2e-ext-" + id})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() {
			for _, ns := range []string{"e2e-int-" + id, "e2e-ext-" + id} {
				_ = exec.Command("ip", "netns", "delete", ns).Run()
			}
		})
		mgr, err := manager.New(seed.Config, manager.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}})
		Expect(err).NotTo(HaveOccurred())
		Expect(firewallcontroller.AddToManagerWithOptions(ctx, mgr, firewallcontroller.AddOptions{})).To(Succeed())
		Expect((&csrapprover.Reconciler{}).AddToManager(mgr)).To(Succeed())
		Expect(firewallmanager.AddToManager(mgr, firewallmanager.Options{
			Provider: provider, HeartbeatTimeout: time.Minute,
			Bootstrap: &managerfirewall.Bootstrap{Server: seed.Config.Host, CAData: seed.Config.CAData, SecretNames: []string{firewallcontroller.ShootAccessSecretName}},
		})).To(Succeed())
		mgrCtx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer GinkgoRecover()
			defer close(done)
			Expect(mgr.Start(mgrCtx)).To(Succeed())
		}()
		DeferCleanup(func() { cancel(); <-done })

		By("enabling the firewall extension for a shoot")
		namespace := "shoot--e2e--" + id
		// The seed stands in for the shoot: the agent only keeps its kubeconfig.
		prepareShootNamespace(ctx, c, namespace, seed)
		ex := &extensionsv1alpha1.Extension{
			ObjectMeta: metav1.ObjectMeta{Name: "firewall", Namespace: namespace, Annotations: map[string]string{v1beta1constants.GardenerOperation: v1beta1constants.GardenerOperationReconcile}},
			Spec: extensionsv1alpha1.ExtensionSpec{DefaultSpec: extensionsv1alpha1.DefaultSpec{Type: "firewall", ProviderConfig: &runtime.RawExtension{Raw: []byte(
				`{"size":"local","image":"local","partition":"local","project":"e2e","networks":["internet"],"internalPrefixes":["10.250.0.0/16"]}`)}}},
		}
		Expect(c.Create(ctx, ex)).To(Succeed())

		By("letting the machine reach the seed as a real firewall reaches its seed's endpoint")
		machineNetNS := waitForMachine(stateDir).NetNS
		fwdCtx, stopForward := context.WithCancel(context.Background())
		DeferCleanup(stopForward)
		Expect((&netns.NS{Name: machineNetNS}).ForwardLoopback(fwdCtx, portOf(seed.Config.Host))).To(Succeed())

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

		By("the bootstrap token is gone once the agent holds its certificate")
		Eventually(func() []corev1.Secret {
			list := &corev1.SecretList{}
			Expect(c.List(ctx, list, client.InNamespace(metav1.NamespaceSystem), client.HasLabels{"firewall.metal-firewall.io/namespace"})).To(Succeed())
			return list.Items
		}).WithTimeout(time.Minute).Should(BeEmpty())

		By("deleting the Extension releases the machine")
		Expect(c.Delete(ctx, ex)).To(Succeed())
		Eventually(func() bool { return apierrors.IsNotFound(c.Get(ctx, client.ObjectKeyFromObject(ex), ex)) }).WithTimeout(2 * time.Minute).Should(BeTrue())
		Expect(filepath.Join("/var/run/netns", machineNetNS)).NotTo(BeAnExistingFile())
	})
})
